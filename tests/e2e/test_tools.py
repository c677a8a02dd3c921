"""Tool calls end to end: the fake model asks for tools, a real `iaccode acp` runs them, and
the test plays the editor (answering permission questions, fs/* and terminal/*)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.processes import group_gone
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import AgentConnection, ErrorAnswer, spawn_agent
from tests.support.environment import agent_environment


def call(name: str, **args: Any) -> dict:
    """One model answer that asks for one tool."""
    return reply(tool_uses=[ToolUse(f"toolu_{name}", name, args)])


def tool_updates(updates: list[dict], call_id: str) -> list[dict]:
    return [
        u["params"]["update"] for u in updates if u["params"]["update"].get("toolCallId") == call_id
    ]


def result_for(server: FakeModelServer, request_index: int, call_id: str) -> dict:
    """The tool_result the model received in the given request."""
    for message in server.requests[request_index].messages:
        blocks: list[dict[str, Any]] = (
            message["content"] if isinstance(message["content"], list) else []
        )
        for block in blocks:
            if block.get("type") == "tool_result" and block["tool_use_id"] == call_id:
                return block
    raise AssertionError(f"no tool_result for {call_id}")


def choose(option: str) -> Callable[[dict], dict]:
    def answer(message: dict) -> dict:
        assert message["method"] == "session/request_permission"
        return {"outcome": {"outcome": "selected", "optionId": option}}

    return answer


async def start(agent: AgentConnection, workspace: Path, **capabilities: Any) -> str:
    await agent.initialize(**capabilities)
    return await agent.new_session(workspace)


async def test_read_runs_without_asking_and_streams_its_lifecycle(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text('variable "region" {}\n')
    model_server.enqueue(call("read_file", path="main.tf"), reply("It declares region."))
    session = await start(agent, workspace)
    response, updates, requests = await agent.run_prompt(session, "read it")
    assert response["result"]["stopReason"] == "end_turn"
    assert requests == []
    lifecycle = tool_updates(updates, "toolu_read_file")
    assert [u["sessionUpdate"] for u in lifecycle] == [
        "tool_call",
        "tool_call_update",
        "tool_call_update",
    ]
    start_, running, done = lifecycle
    assert start_["title"] == "Read main.tf" and start_["kind"] == "read"
    assert start_["locations"] == [{"path": str(workspace / "main.tf")}]
    assert start_["rawInput"] == {"path": "main.tf"}
    assert running["status"] == "in_progress"
    assert done["status"] == "completed" and done["rawOutput"]
    assert 'variable "region"' in done["content"][0]["content"]["text"]
    result = result_for(model_server, 1, "toolu_read_file")
    assert 'variable "region"' in result["content"] and result["is_error"] is False


async def test_write_asks_and_allow_once_writes(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("write_file", path="out/new.tf", content="x = 1\n"), reply("ok"))
    session = await start(agent, workspace)
    response, updates, requests = await agent.run_prompt(session, "write", choose("allow_once"))
    assert [r["method"] for r in requests] == ["session/request_permission"]
    question = requests[0]["params"]
    assert question["toolCall"]["toolCallId"] == "toolu_write_file"
    assert question["toolCall"]["rawInput"] == {"path": "out/new.tf", "content": "x = 1\n"}
    assert {o["kind"] for o in question["options"]} == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
    assert (workspace / "out" / "new.tf").read_text() == "x = 1\n"
    done = tool_updates(updates, "toolu_write_file")[-1]
    assert done["status"] == "completed"
    assert done["content"][0] == {
        "type": "diff",
        "path": str(workspace / "out" / "new.tf"),
        "oldText": None,
        "newText": "x = 1\n",
    }


async def test_rejected_write_leaves_the_file_and_tells_the_model(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "a.tf").write_text("old\n")
    model_server.enqueue(call("write_file", path="a.tf", content="new\n"), reply("understood"))
    session = await start(agent, workspace)
    response, updates, _ = await agent.run_prompt(session, "write", choose("reject_once"))
    assert response["result"]["stopReason"] == "end_turn"
    assert (workspace / "a.tf").read_text() == "old\n"
    assert tool_updates(updates, "toolu_write_file")[-1]["status"] == "failed"
    result = result_for(model_server, 1, "toolu_write_file")
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_write_file",
        "content": "Permission denied.",
        "is_error": True,
    }


@pytest.mark.parametrize(
    ("first", "second_asks", "written"),
    [("allow_always", False, True), ("reject_always", False, False)],
)
async def test_always_answers_hold_for_the_session(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    first: str,
    second_asks: bool,
    written: bool,
) -> None:
    model_server.enqueue(
        call("write_file", path="one.txt", content="1"),
        reply("a"),
        call("write_file", path="two.txt", content="2"),
        reply("b"),
    )
    session = await start(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "first", choose(first))
    assert len(asked) == 1
    _, _, asked = await agent.run_prompt(session, "second", choose("allow_once"))
    assert bool(asked) is second_asks
    assert (workspace / "two.txt").exists() is written


async def test_cancelled_permission_ends_the_turn(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="touch ran"))
    session = await start(agent, workspace)
    response, _, _ = await agent.run_prompt(
        session, "run", lambda _: {"outcome": {"outcome": "cancelled"}}
    )
    assert response["result"]["stopReason"] == "cancelled"
    assert not (workspace / "ran").exists()


@pytest.mark.parametrize(
    "answer",
    [{"outcome": "bogus"}, {}, "nope", {"outcome": {"outcome": "selected", "optionId": "zzz"}}],
)
async def test_unreadable_permission_answers_do_not_run_the_tool(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, answer: Any
) -> None:
    model_server.enqueue(call("bash", command="touch ran"), reply("ok"))
    session = await start(agent, workspace)
    await agent.run_prompt(session, "run", lambda _: answer)
    assert not (workspace / "ran").exists()
    assert result_for(model_server, 1, "toolu_bash")["content"] == "Permission denied."


async def test_the_older_flat_permission_answer_is_understood(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="touch ran"), reply("ok"))
    session = await start(agent, workspace)
    await agent.run_prompt(
        session, "run", lambda _: {"outcome": "allowed", "option_id": "allow_once"}
    )
    assert (workspace / "ran").exists()


@pytest.mark.parametrize("path", ["../secret.txt", "ABSOLUTE", "link/secret.txt"])
async def test_reads_outside_the_project_ask_first(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, path: str
) -> None:
    outside = workspace.parent / "secret.txt"
    outside.write_text("top secret\n")
    (workspace / "link").symlink_to(workspace.parent)
    path = str(outside) if path == "ABSOLUTE" else path
    model_server.enqueue(call("read_file", path=path), reply("ok"))
    session = await start(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "read", choose("reject_once"))
    assert len(asked) == 1
    result = result_for(model_server, 1, "toolu_read_file")
    assert result["content"] == "Permission denied." and "top secret" not in str(result)


async def test_sibling_prefix_folder_is_outside(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    evil = workspace.parent / (workspace.name + "-evil")
    evil.mkdir()
    (evil / "x.txt").write_text("evil")
    model_server.enqueue(call("read_file", path=str(evil / "x.txt")), reply("ok"))
    session = await start(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "read", choose("reject_once"))
    assert len(asked) == 1


async def test_cancel_kills_background_commands(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="echo $$ > pgid; sleep 30 & sleep 30"))
    session = await start(agent, workspace)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]}
    )
    asked = await agent.receive()
    while asked.get("method") != "session/request_permission":
        asked = await agent.receive()
    await agent.reply(asked["id"], {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    with trio.fail_after(10):
        # Another process writes the file: polling is the only way to see it.
        while not (workspace / "pgid").exists() or not (workspace / "pgid").read_text():  # noqa: ASYNC110
            await trio.sleep(0.05)
    pgid = int((workspace / "pgid").read_text())
    await agent.notify("session/cancel", {"sessionId": session})
    response, _ = await agent.response(request_id, timeout=5)
    assert response["result"]["stopReason"] == "cancelled"
    assert group_gone(pgid)  # the whole process group is gone, background sleep included


async def test_bash_cat_returns_at_once(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="cat; echo done"), reply("ok"))
    session = await start(agent, workspace)
    response, _, _ = await agent.run_prompt(session, "cat", choose("allow_once"), timeout=10)
    assert response["result"]["stopReason"] == "end_turn"
    assert "done" in result_for(model_server, 1, "toolu_bash")["content"]


async def test_max_turn_requests(
    tmp_path: Path, model_server: FakeModelServer, workspace: Path
) -> None:
    env = agent_environment(
        tmp_path / "home",
        {
            "ANTHROPIC_API_KEY": "k",
            "ANTHROPIC_BASE_URL": model_server.base_url,
            "IAC_CODE_MAX_TURN_REQUESTS": "3",
        },
    )
    model_server.enqueue(
        *[reply(tool_uses=[ToolUse(f"toolu_{i}", "list_files", {"path": "."})]) for i in range(3)]
    )
    async with spawn_agent(env, tmp_path / "stderr") as agent:
        session = await start(agent, workspace)
        response, _, _ = await agent.run_prompt(session, "loop forever")
        assert response["result"]["stopReason"] == "max_turn_requests"
    assert len(model_server.requests) == 3


async def test_malformed_tool_calls_are_never_run(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_a", "no_such_tool", {}),
                ToolUse("toolu_b", "write_file", {"path": 5}),
                ToolUse("toolu_c", "bash", {"command": "touch ran", "extra": 1}),
            ]
        ),
        reply("ok"),
    )
    session = await start(agent, workspace)
    response, updates, _ = await agent.run_prompt(session, "go", choose("allow_once"))
    assert response["result"]["stopReason"] == "end_turn"
    assert "Unknown tool 'no_such_tool'" in result_for(model_server, 1, "toolu_a")["content"]
    assert "input.path" in result_for(model_server, 1, "toolu_b")["content"]
    assert tool_updates(updates, "toolu_a")[-1]["status"] == "failed"


async def test_modes(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        call("write_file", path="p.txt", content="plan"),
        reply("refused"),
        call("write_file", path="e.txt", content="edit"),
        reply("done"),
    )
    session = await start(agent, workspace)
    mode_change = await agent.request("session/set_mode", {"sessionId": session, "modeId": "plan"})
    assert mode_change["result"] == {}
    response, _, asked = await agent.run_prompt(session, "write")
    assert asked == [] and not (workspace / "p.txt").exists()
    assert "Plan mode" in result_for(model_server, 1, "toolu_write_file")["content"]

    options = await agent.call(
        "session/set_config_option",
        {"sessionId": session, "configId": "mode", "value": "accept_edits"},
    )
    assert {o["id"]: o["currentValue"] for o in options["configOptions"]}["mode"] == "accept_edits"
    _, updates, asked = await agent.run_prompt(session, "write")
    assert asked == [] and (workspace / "e.txt").read_text() == "edit"
    bad = await agent.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
    assert bad["error"]["code"] == -32602


async def test_fs_goes_through_the_editor_when_advertised(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "buf.tf").write_text("on disk\n")
    model_server.enqueue(
        call("read_file", path="buf.tf"),
        reply("read"),
        call("write_file", path="buf.tf", content="edited\n"),
        reply("wrote"),
    )
    session = await start(agent, workspace, fs={"readTextFile": True, "writeTextFile": True})
    calls: list[dict] = []

    def editor(message: dict) -> dict:
        calls.append(message)
        if message["method"] == "fs/read_text_file":
            return {"content": "unsaved buffer\n"}
        if message["method"] == "fs/write_text_file":
            return {}
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    await agent.run_prompt(session, "read", editor)
    assert "unsaved buffer" in result_for(model_server, 1, "toolu_read_file")["content"]
    await agent.run_prompt(session, "write", editor)
    methods = [c["method"] for c in calls]
    assert "fs/read_text_file" in methods and "fs/write_text_file" in methods
    write = next(c for c in calls if c["method"] == "fs/write_text_file")
    assert write["params"]["content"] == "edited\n"
    assert (workspace / "buf.tf").read_text() == "on disk\n"  # the editor owns the buffer


async def test_no_fs_or_terminal_calls_without_capabilities(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("disk\n")
    model_server.enqueue(
        call("read_file", path="f.txt"), reply("a"), call("bash", command="echo hi"), reply("b")
    )
    session = await start(agent, workspace)
    methods: list[str] = []

    def editor(message: dict) -> dict:
        methods.append(message["method"])
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    await agent.run_prompt(session, "read", editor)
    await agent.run_prompt(session, "run", editor)
    assert methods == ["session/request_permission"]


async def test_terminal_delegation(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="make plan"), reply("done"))
    session = await start(agent, workspace, terminal=True)
    methods: list[str] = []

    def editor(message: dict) -> dict:
        methods.append(message["method"])
        answers: dict[str, dict[str, Any]] = {
            "session/request_permission": {
                "outcome": {"outcome": "selected", "optionId": "allow_once"}
            },
            "terminal/create": {"terminalId": "term-1"},
            "terminal/wait_for_exit": {"exitCode": 0},
            "terminal/output": {
                "output": "Plan: 1 to add\n",
                "truncated": False,
                "exitStatus": {"exitCode": 0},
            },
            "terminal/release": {},
        }
        return answers[message["method"]]

    _, updates, _ = await agent.run_prompt(session, "plan", editor)
    assert methods[0] == "session/request_permission"
    assert methods[1] == "terminal/create" and "terminal/release" in methods
    assert "Plan: 1 to add" in result_for(model_server, 1, "toolu_bash")["content"]
    contents = [c for u in tool_updates(updates, "toolu_bash") for c in u.get("content") or []]
    assert {"type": "terminal", "terminalId": "term-1"} in contents


async def test_the_editors_error_answers_reach_the_model_as_tool_errors(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """An error answer to fs/*, terminal/* or a permission question fails that call only,
    saying what failed; the turn and the session go on."""
    (workspace / "buf.tf").write_text("on disk\n")
    model_server.enqueue(
        call("read_file", path="buf.tf"),
        reply("a"),
        call("bash", command="make plan"),
        reply("b"),
        call("write_file", path="new.tf", content="x"),
        reply("c"),
    )
    session = await start(agent, workspace, fs={"readTextFile": True}, terminal=True)

    def editor(message: dict) -> Any:
        if (
            message["method"] == "session/request_permission"
            and message["params"]["toolCall"]["toolCallId"] == "toolu_bash"
        ):
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        return ErrorAnswer(-32603, f"no {message['method']} today")

    for prompt in ("read", "run", "write"):
        response, _, _ = await agent.run_prompt(session, prompt, editor)
        assert response["result"]["stopReason"] == "end_turn"
    read = result_for(model_server, 1, "toolu_read_file")
    assert read["is_error"] is True
    assert read["content"].startswith("The editor could not read /")
    assert read["content"].endswith("/buf.tf: no fs/read_text_file today")
    ran = result_for(model_server, 3, "toolu_bash")
    assert ran["is_error"] is True
    assert ran["content"] == "The editor could not run the command: no terminal/create today"
    wrote = result_for(model_server, 5, "toolu_write_file")
    assert (wrote["is_error"], wrote["content"]) == (True, "Permission denied.")
    assert not (workspace / "new.tf").exists()


async def test_the_editors_malformed_answers_fail_the_call_saying_what_was_wrong(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """An answer of the wrong type to fs/* or terminal/* fails that call like an error answer,
    naming the field; a malformed permission answer runs nothing. The turn goes on."""
    (workspace / "buf.tf").write_text("on disk\n")
    model_server.enqueue(
        call("read_file", path="buf.tf"),
        reply("a"),
        call("bash", command="make plan"),
        reply("b"),
        call("write_file", path="new.tf", content="x"),
        reply("c"),
    )
    session = await start(agent, workspace, fs={"readTextFile": True}, terminal=True)

    def editor(message: dict) -> Any:
        if message["params"].get("toolCall", {}).get("toolCallId") == "toolu_write_file":
            return {"outcome": {"outcome": "selected", "optionId": ["allow_once"]}}
        return {
            "session/request_permission": {
                "outcome": {"outcome": "selected", "optionId": "allow_once"}
            },
            "fs/read_text_file": {"content": 42},
            "terminal/create": {"terminalId": "term-1"},
            "terminal/wait_for_exit": {"exitCode": "0"},
            "terminal/output": {"output": "Plan: 1 to add\n", "truncated": False},
            "terminal/kill": {},
            "terminal/release": {},
        }[message["method"]]

    for prompt in ("read", "run", "write"):
        response, _, _ = await agent.run_prompt(session, prompt, editor)
        assert response["result"]["stopReason"] == "end_turn"
    read = result_for(model_server, 1, "toolu_read_file")
    assert read["is_error"] is True
    assert read["content"].endswith(
        "/buf.tf: a malformed answer to fs/read_text_file "
        "(result.content: expected a string, got an integer)"
    )
    ran = result_for(model_server, 3, "toolu_bash")
    assert (ran["is_error"], ran["content"]) == (
        True,
        (
            "The editor's terminal failed: a malformed answer to terminal/wait_for_exit "
            "(result.exitCode: expected an integer, got a string)"
        ),
    )
    wrote = result_for(model_server, 5, "toolu_write_file")
    assert (wrote["is_error"], wrote["content"]) == (True, "Permission denied.")
    assert not (workspace / "new.tf").exists()


def sub_agent_research(model_server: FakeModelServer, workspace: Path) -> None:
    """A model that runs a sub-agent (``toolu_agent``), which greps (``toolu_child``)."""
    (workspace / "vars.tf").write_text('variable "env" {}\n')
    model_server.enqueue(
        call("agent", prompt="Which variables are declared?", description="find variables"),
        reply(tool_uses=[ToolUse("toolu_child", "grep", {"pattern": "variable"})]),
        reply("One variable: env."),
        reply("The sub-agent found one variable."),
    )


async def test_sub_agent_runs_read_only_tools_as_children(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    sub_agent_research(model_server, workspace)
    session = await start(agent, workspace)
    response, updates, asked = await agent.run_prompt(session, "research", choose("allow_once"))
    assert response["result"]["stopReason"] == "end_turn"
    assert len(asked) == 1  # the agent call; the child's grep is read-only
    child = tool_updates(updates, "toolu_child")
    assert child and all(u["_meta"]["iaccode"]["parentToolCallId"] == "toolu_agent" for u in child)
    assert result_for(model_server, 3, "toolu_agent")["content"] == "One variable: env."
    # The sub-agent's own context held only its task.
    assert (
        model_server.requests[1].body["messages"][0]["content"][0]["text"]
        == "Which variables are declared?"
    )
    assert "agent" not in [t["name"] for t in model_server.requests[1].body["tools"]]


async def test_tool_failures_are_visible(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "e.txt").write_text("a a\n")
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_r", "read_file", {"path": "missing.txt"}),
                ToolUse("toolu_g", "grep", {"pattern": "(unclosed"}),
                ToolUse("toolu_w", "web_fetch", {"url": "http://127.0.0.1:9/"}),
                ToolUse(
                    "toolu_e", "edit_file", {"path": "e.txt", "old_string": "a", "new_string": "b"}
                ),
                ToolUse("toolu_b", "bash", {"command": "exit 3"}),
            ]
        ),
        reply("ok"),
    )
    session = await start(agent, workspace)
    _, updates, _ = await agent.run_prompt(session, "fail", choose("allow_once"))
    for call_id in ("toolu_r", "toolu_g", "toolu_w", "toolu_e", "toolu_b"):
        assert tool_updates(updates, call_id)[-1]["status"] == "failed", call_id
        assert result_for(model_server, 1, call_id)["is_error"] is True, call_id
    assert (workspace / "e.txt").read_text() == "a a\n"


async def test_every_tool_succeeds(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text('resource "x" "y" {}\n')
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_l", "list_files", {"path": "."}),
                ToolUse("toolu_g", "glob", {"pattern": "*.tf"}),
                ToolUse("toolu_s", "grep", {"pattern": "resource", "output_mode": "content"}),
                ToolUse(
                    "toolu_e",
                    "edit_file",
                    {"path": "main.tf", "old_string": '"y"', "new_string": '"z"'},
                ),
                ToolUse("toolu_b", "bash", {"command": "cat main.tf"}),
            ]
        ),
        reply("ok"),
    )
    session = await start(agent, workspace)
    _, updates, _ = await agent.run_prompt(session, "all", choose("allow_once"))
    for call_id in ("toolu_l", "toolu_g", "toolu_s", "toolu_e", "toolu_b"):
        assert tool_updates(updates, call_id)[-1]["status"] == "completed", call_id
    assert "main.tf" in result_for(model_server, 1, "toolu_g")["content"]
    assert 'resource "x" "z"' in result_for(model_server, 1, "toolu_b")["content"]
    edit = tool_updates(updates, "toolu_e")[-1]["content"][0]
    assert edit["type"] == "diff" and edit["oldText"] != edit["newText"]
