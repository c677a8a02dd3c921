"""What third-party clients (Toad, Zed, acplint, dashboards) rely on: a tool's name on every
update of its call, the diff in the permission question, a final update for every call
whatever ends the turn. A real ``iaccode acp``, the fake model, the test as the editor."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.processes import pid_alive, pid_files_written, wait_until
from acp_conformance.script import ToolUse, error_status, reply

from iaccode.host import process_tree
from tests.e2e.test_tools import call, choose, start, sub_agent_research, tool_updates
from tests.support.agent_process import AgentConnection

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def load(agent: AgentConnection, session: str, cwd: Path) -> list[dict[str, Any]]:
    """``session/load``; the replayed ``session/update`` messages."""
    request_id = await agent.send_request(
        "session/load", {"sessionId": session, "cwd": str(cwd), "mcpServers": []}
    )
    answer, before = await agent.response(request_id)
    assert "result" in answer, answer
    return [m for m in before if m.get("method") == "session/update"]


async def test_every_update_of_a_call_names_its_tool(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text('resource "x" "y" {}\n')
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_r", "read_file", {"path": "main.tf"}),
                ToolUse("toolu_b", "bash", {"command": "make plan"}),
                ToolUse("toolu_x", "no_such_tool", {}),
            ]
        ),
        reply("ok"),
    )
    session = await start(agent, workspace, terminal=True)

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        answers: dict[str, dict[str, Any]] = {
            "session/request_permission": ALLOW,
            "terminal/create": {"terminalId": "term-1"},
            "terminal/wait_for_exit": {"exitCode": 0},
            "terminal/output": {"output": "ok\n", "truncated": False},
            "terminal/release": {},
        }
        return answers[message["method"]]

    _, updates, requests = await agent.run_prompt(session, "go", editor)
    for call_id, name in (
        ("toolu_r", "read_file"),
        ("toolu_b", "bash"),
        ("toolu_x", "no_such_tool"),
    ):
        lifecycle = tool_updates(updates, call_id)
        assert lifecycle and all(u.get("name") == name for u in lifecycle), lifecycle
    # The terminal's live update (sent by the tool itself) is named too.
    assert any(
        c.get("type") == "terminal"
        for u in tool_updates(updates, "toolu_b")
        for c in u.get("content") or []
    )
    question = next(r for r in requests if r["method"] == "session/request_permission")
    assert question["params"]["toolCall"]["name"] == "bash"
    # And a reload shows the names again.
    replayed = await load(agent, session, workspace)
    assert tool_updates(replayed, "toolu_r")
    assert all(u.get("name") == "read_file" for u in tool_updates(replayed, "toolu_r"))


async def test_the_permission_question_shows_the_edit_as_a_diff(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text('region = "eu-west-1"\n')
    model_server.enqueue(
        call("edit_file", path="main.tf", old_string="eu-west-1", new_string="us-east-1"),
        reply("ok"),
    )
    session = await start(agent, workspace)
    seen_on_disk: list[str] = []

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        # While the user is asked, nothing is written yet.
        seen_on_disk.append((workspace / "main.tf").read_text())
        return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}

    _, _, requests = await agent.run_prompt(session, "move it", editor)
    assert seen_on_disk == ['region = "eu-west-1"\n']
    assert requests[0]["params"]["toolCall"]["content"] == [
        {
            "type": "diff",
            "path": str(workspace / "main.tf"),
            "oldText": 'region = "eu-west-1"\n',
            "newText": 'region = "us-east-1"\n',
        }
    ]
    assert (workspace / "main.tf").read_text() == 'region = "eu-west-1"\n'


NEW_TF = "locals {\n  x = 1\n}\n"


async def test_a_new_file_diff_says_old_text_null_in_the_question_and_the_result(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    # Valid on its own (a module that needs no provider is validated when terraform is here).
    model_server.enqueue(call("write_file", path="out/new.tf", content=NEW_TF), reply("ok"))
    session = await start(agent, workspace)
    seen: list[bool] = []

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        seen.append((workspace / "out").exists())
        return ALLOW

    _, updates, requests = await agent.run_prompt(session, "write", editor)
    diff = {
        "type": "diff",
        "path": str(workspace / "out" / "new.tf"),
        "oldText": None,
        "newText": NEW_TF,
    }
    assert seen == [False]  # not even the folder was made before the answer
    assert requests[0]["params"]["toolCall"]["content"] == [diff]
    final = tool_updates(updates, "toolu_write_file")[-1]["content"]
    assert final[0] == diff  # then the check of the Terraform file written (iaccode/iac)
    assert final[1:] == [
        {
            "type": "content",
            "content": {
                "type": "text",
                "text": "IaC check of out/new.tf (Terraform): no problems.",
            },
        }
    ]
    assert (workspace / "out" / "new.tf").read_text() == NEW_TF


async def test_an_edit_that_cannot_apply_asks_without_a_diff_and_fails_when_run(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text("a\n")
    model_server.enqueue(
        call("edit_file", path="main.tf", old_string="zzz", new_string="b"), reply("ok")
    )
    session = await start(agent, workspace)
    _, updates, requests = await agent.run_prompt(session, "edit", choose("allow_once"))
    assert "content" not in requests[0]["params"]["toolCall"]
    assert tool_updates(updates, "toolu_edit_file")[-1]["status"] == "failed"


async def prompt_until_asked(
    agent: AgentConnection, session: str, text: str
) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    """Send a prompt; return its id, the first permission question, and what came before."""
    prompt_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )
    before: list[dict[str, Any]] = []
    while True:
        message = await agent.receive()
        if message.get("method") == "session/request_permission":
            return prompt_id, message, before
        before.append(message)


async def answers_to(
    agent: AgentConnection, *request_ids: int
) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """Wait until every request is answered: the answers (in the order they came) and the
    other messages before the last one."""
    answers: dict[int, dict[str, Any]] = {}
    others: list[dict[str, Any]] = []
    while len(answers) < len(request_ids):
        message = await agent.receive()
        if message.get("id") in request_ids and "method" not in message:
            answers[message["id"]] = message
        else:
            others.append(message)
    return answers, others


def final_states(updates: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tool call's last update (the start merged with every update after it)."""
    calls: dict[str, dict[str, Any]] = {}
    for message in updates:
        if message.get("method") != "session/update":
            continue
        update = message["params"]["update"]
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            calls.setdefault(update["toolCallId"], {}).update(update)
    return calls


async def test_a_cancel_while_asking_fails_the_asked_call_and_the_queued_one(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_first", "bash", {"command": "touch first"}),
                ToolUse("toolu_second", "write_file", {"path": "second.txt", "content": "2"}),
            ]
        )
    )
    session = await start(agent, workspace)
    prompt_id, question, before = await prompt_until_asked(agent, session, "both")
    assert question["params"]["toolCall"]["toolCallId"] == "toolu_first"
    # Both calls were announced before the question.
    assert set(final_states(before)) == {"toolu_first", "toolu_second"}
    await agent.notify("session/cancel", {"sessionId": session})
    answer, after = await agent.response(prompt_id)
    assert answer["result"]["stopReason"] == "cancelled"
    states = final_states(before + after)
    for call_id in ("toolu_first", "toolu_second"):
        assert states[call_id]["status"] == "failed", states[call_id]
    text_of = {k: v["content"][0]["content"]["text"] for k, v in states.items()}
    assert "asked for permission" in text_of["toolu_first"]
    assert "before the tool could run" in text_of["toolu_second"]
    assert not (workspace / "first").exists() and not (workspace / "second.txt").exists()
    # The late answer to the question is dropped harmlessly; the session takes a prompt.
    await agent.reply(question["id"], {"outcome": {"outcome": "cancelled"}})
    model_server.enqueue(reply("fine"))
    response, _, _ = await agent.run_prompt(session, "next")
    assert response["result"]["stopReason"] == "end_turn"


async def test_session_close_while_asking_fails_the_call_before_close_answers(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="touch ran"))
    session = await start(agent, workspace)
    prompt_id, _, before = await prompt_until_asked(agent, session, "run")
    close_id = await agent.send_request("session/close", {"sessionId": session})
    answers, after = await answers_to(agent, prompt_id, close_id)
    assert answers[prompt_id]["result"]["stopReason"] == "cancelled"
    assert "result" in answers[close_id]
    assert final_states(before + after)["toolu_bash"]["status"] == "failed"
    assert not (workspace / "ran").exists()


async def test_a_cancel_while_a_command_runs_fails_it_and_the_call_queued_behind(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_sleep", "bash", {"command": "sleep 30"}),
                ToolUse("toolu_after", "bash", {"command": "touch after"}),
            ]
        )
    )
    session = await start(agent, workspace)
    prompt_id, question, before = await prompt_until_asked(agent, session, "sleep")
    await agent.reply(question["id"], ALLOW)
    while True:
        message = await agent.receive()
        before.append(message)
        update = message.get("params", {}).get("update", {})
        if update.get("status") == "in_progress":
            break
    await agent.notify("session/cancel", {"sessionId": session})
    answer, after = await agent.response(prompt_id)
    assert answer["result"]["stopReason"] == "cancelled"
    states = final_states(before + after)
    assert states["toolu_sleep"]["status"] == "failed"
    assert "while the tool ran" in states["toolu_sleep"]["content"][0]["content"]["text"]
    assert states["toolu_after"]["status"] == "failed"
    assert not (workspace / "after").exists()


class OuterShellTerminal:
    """A client terminal as some real ones are: it runs the command under an outer shell of
    its own and ``terminal/kill`` kills that shell alone (SIGKILL, no process group)."""

    def __init__(self, agent: AgentConnection) -> None:
        self.agent = agent
        self.shells: dict[str, trio.Process] = {}
        self.created: list[dict[str, Any]] = []
        self._send = trio.Lock()

    async def reply(self, request_id: Any, result: Any) -> None:
        async with self._send:
            await self.agent.reply(request_id, result)

    async def serve(self, message: dict[str, Any], nursery: trio.Nursery) -> None:
        method, params = message["method"], message["params"]
        if method == "session/request_permission":
            await self.reply(message["id"], ALLOW)
        elif method == "terminal/create":
            self.created.append(params)
            line = shlex.join([params["command"], *params.get("args", [])])
            # "; true" keeps the outer shell alive above the command (no exec shortcut).
            shell = await trio.lowlevel.open_process(
                ["/bin/bash", "-c", f"{line}; true"],
                cwd=params.get("cwd"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
            terminal_id = f"term-{len(self.shells) + 1}"
            self.shells[terminal_id] = shell
            await self.reply(message["id"], {"terminalId": terminal_id})
        elif method == "terminal/wait_for_exit":
            nursery.start_soon(self._wait, message)
        elif method == "terminal/kill":
            shell = self.shells[params["terminalId"]]
            if shell.returncode is None:
                shell.send_signal(signal.SIGKILL)
            await self.reply(message["id"], {})
        elif method == "terminal/output":
            await self.reply(message["id"], {"output": "", "truncated": False})
        elif method == "terminal/release":
            await self.reply(message["id"], {})
        else:
            raise AssertionError(f"unexpected request {method}")

    async def _wait(self, message: dict[str, Any]) -> None:
        code = await self.shells[message["params"]["terminalId"]].wait()
        status = {"exitCode": code} if code >= 0 else {"signal": signal.Signals(-code).name}
        await self.reply(message["id"], status)


@pytest.mark.skipif(not process_tree.supported(), reason="the supervisor needs Linux prctl")
async def test_a_terminal_whose_outer_shell_alone_is_killed_leaves_nothing_alive(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    command = (
        "sleep 300 & echo $! > bg.pid; "
        "setsid sleep 300 > /dev/null 2>&1 & echo $! > escaped.pid; "
        "sleep 300"
    )
    model_server.enqueue(call("bash", command=command))
    session = await start(agent, workspace, terminal=True)
    terminal = OuterShellTerminal(agent)
    prompt_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "start it"}]}
    )

    async def cancel_once_started() -> None:
        await wait_until(lambda: pid_files_written(workspace, "bg.pid", "escaped.pid"), 30)
        await agent.notify("session/cancel", {"sessionId": session})

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_once_started)
            while True:
                message = await agent.receive(timeout=30)
                if "method" in message and "id" in message:
                    await terminal.serve(message, nursery)
                elif message.get("id") == prompt_id:
                    break
            nursery.cancel_scope.cancel()
    assert message["result"]["stopReason"] == "cancelled"
    pids = [int((workspace / name).read_text()) for name in ("bg.pid", "escaped.pid")]
    await wait_until(lambda: not any(pid_alive(pid) for pid in pids))
    # We handed the client our supervisor, run by the agent's interpreter, not a bare shell.
    created = terminal.created[0]
    assert created["command"] == sys.executable
    assert created["args"][:3] == ["-P", "-m", "iaccode.tools.supervise"]
    assert created["args"][-2:] == ["-c", command]


def chunks(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> list[str]:
    return [
        m["params"]["update"]["content"]["text"]
        for m in updates
        if m["params"]["update"]["sessionUpdate"] == kind
    ]


async def test_a_replayed_terminal_command_shows_its_output_as_text(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="terraform plan"), reply("planned"))
    session = await start(agent, workspace, terminal=True)

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        answers: dict[str, dict[str, Any]] = {
            "session/request_permission": ALLOW,
            "terminal/create": {"terminalId": "term-1"},
            "terminal/wait_for_exit": {"exitCode": 2},
            "terminal/output": {
                "output": "Plan: 1 to add\n",
                "truncated": False,
                "exitStatus": {"exitCode": 2},
            },
            "terminal/release": {},
        }
        return answers[message["method"]]

    _, updates, _ = await agent.run_prompt(session, "plan", editor)
    assert tool_updates(updates, "toolu_bash")[-1]["content"] == [
        {"type": "terminal", "terminalId": "term-1"}
    ]
    replayed = tool_updates(await load(agent, session, workspace), "toolu_bash")
    assert replayed[-1]["status"] == "failed"
    assert replayed[-1]["content"] == [
        {"type": "content", "content": {"type": "text", "text": "Plan: 1 to add\n[exit code 2]"}}
    ]
    assert not any(c.get("type") == "terminal" for u in replayed for c in u.get("content") or [])


async def test_replay_shows_where_the_context_was_compacted_and_cleared(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply("a1"),
        reply("a2"),
        reply("a3"),
        reply("the summary", input_tokens=40_000, output_tokens=1_200),
        reply("fresh"),
    )
    session = await start(agent, workspace)
    for text in ("one", "two", "three"):
        await agent.run_prompt(session, text)
    _, live, _ = await agent.run_prompt(session, "/compact")
    # The first turn (2 messages) is summarised; the two recent ones fit in what is kept.
    compacted = (
        "[Context compacted: Summarised 2 earlier messages (40k tokens) into 1.2k "
        "tokens; the last 2 turns are kept as they were.]"
    )
    assert [t.strip() for t in chunks(live)] == [compacted]
    _, cleared_live, _ = await agent.run_prompt(session, "/clear")
    await agent.run_prompt(session, "after")
    replayed = await load(agent, session, workspace)
    order = [
        (m["params"]["update"]["sessionUpdate"], m["params"]["update"]["content"]["text"])
        for m in replayed
        if "content" in m["params"]["update"]
    ]
    texts = [text.strip() for _, text in order]
    assert texts.index("three") < texts.index(compacted) < texts.index("after")
    cleared = chunks(cleared_live)[0]
    assert cleared.startswith("Context cleared")
    assert texts.index(compacted) < texts.index(cleared) < texts.index("after")


def user_texts(request_body: dict[str, Any]) -> list[str]:
    """Every text block of the user messages the model received, in order."""
    return [
        b["text"]
        for m in request_body["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "text"
    ]


async def test_initialize_advertises_steering(agent: AgentConnection) -> None:
    result = await agent.initialize()
    assert result["_meta"]["steering"] == {"supported": True}


async def test_steering_during_a_tool_call_reaches_the_next_request_and_the_history(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="echo checked"), reply("Done, and noted."))
    session = await start(agent, workspace)
    prompt_id, question, _ = await prompt_until_asked(agent, session, "check it")
    steered = await agent.request(
        "_session/steering",
        {"sessionId": session, "prompt": [{"type": "text", "text": "Also look at prod."}]},
    )
    assert steered["result"] == {"outcome": "injected"}
    await agent.reply(question["id"], ALLOW)
    answer, _ = await agent.response(prompt_id)
    assert answer["result"]["stopReason"] == "end_turn"
    assert len(model_server.requests) == 2  # no request of its own: it rode with the results
    second = model_server.requests[1].body
    last = second["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]
    assert last["content"][1]["text"] == "Also look at prod."
    # Saved as a user message: a reload shows it where it came.
    replayed = await load(agent, session, workspace)
    said = chunks(replayed, "user_message_chunk")
    assert said == ["check it", "Also look at prod."]


async def test_steering_after_the_last_answer_gets_an_answer_of_its_own(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """An answer that is streaming is not cut; the turn goes on with one more request."""
    model_server.enqueue(reply(["Slow ", "answer."], delay=0.3), reply("About prod: fine."))
    session = await start(agent, workspace)
    prompt_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "first"}]}
    )
    await agent.receive_update("agent_message_chunk")  # the answer is streaming
    steered = await agent.request(
        "_session/steering",
        {"sessionId": session, "prompt": [{"type": "text", "text": "And prod?"}]},
    )
    assert steered["result"] == {"outcome": "injected"}
    answer, before = await agent.response(prompt_id)
    assert answer["result"]["stopReason"] == "end_turn"
    assert "".join(
        chunks([m for m in agent.received if m.get("method") == "session/update"])
    ).startswith("Slow answer.")
    assert user_texts(model_server.requests[1].body)[-1] == "And prod?"
    assert model_server.requests[1].body["messages"][-2]["content"][0]["text"] == "Slow answer."


async def test_steering_while_idle_follows_idle_behavior(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply("Started by steering."))
    session = await start(agent, workspace)
    refused = await agent.call(
        "_session/steering",
        {
            "sessionId": session,
            "prompt": [{"type": "text", "text": "hello"}],
            "idleBehavior": "promptRequired",
        },
    )
    assert refused == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert model_server.requests == []
    started = await agent.call(
        "_session/steering", {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}
    )
    assert started == {"outcome": "startedNewTurn"}
    update = await agent.receive_update("agent_message_chunk")
    assert update["params"]["update"]["content"]["text"] == "Started by steering."
    assert user_texts(model_server.requests[0].body) == ["hello"]


async def test_two_prompts_queue_behind_a_running_turn_and_run_in_order(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        call("bash", command="echo one"),
        reply("first done"),
        reply("second done"),
        reply("third done"),
    )
    session = await start(agent, workspace)
    first, question, _ = await prompt_until_asked(agent, session, "first")
    later = [
        await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        )
        for text in ("second", "third")
    ]
    await agent.reply(question["id"], ALLOW)
    answers, _ = await answers_to(agent, first, *later)
    assert list(answers) == [first, *later]
    assert all(m["result"]["stopReason"] == "end_turn" for m in answers.values())
    assert [user_texts(r.body)[-1] for r in model_server.requests] == [
        "first",
        "first",
        "second",
        "third",
    ]


async def test_a_cancel_answers_the_running_and_the_queued_prompt_cancelled(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="touch ran"), reply("next one"))
    session = await start(agent, workspace)
    first, _, _ = await prompt_until_asked(agent, session, "first")
    queued = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "queued"}]}
    )
    await agent.notify("session/cancel", {"sessionId": session})
    answers, _ = await answers_to(agent, first, queued)
    assert answers[first]["result"]["stopReason"] == "cancelled"
    assert answers[queued]["result"]["stopReason"] == "cancelled"
    assert len(model_server.requests) == 1  # the queued prompt never reached the model
    response, _, _ = await agent.run_prompt(session, "after")
    assert response["result"]["stopReason"] == "end_turn"


async def test_cancel_request_for_a_queued_prompt_drops_that_one_only(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("bash", command="echo one"), reply("first done"), reply("third done"))
    session = await start(agent, workspace)
    first, question, _ = await prompt_until_asked(agent, session, "first")
    dropped, third = [
        await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        )
        for text in ("second", "third")
    ]
    await agent.notify("$/cancel_request", {"requestId": dropped})
    answer, _ = await agent.response(dropped)
    assert answer["error"]["code"] == -32800
    await agent.reply(question["id"], ALLOW)
    for request_id in (first, third):
        answer, _ = await agent.response(request_id)
        assert answer["result"]["stopReason"] == "end_turn"
    assert [user_texts(r.body)[-1] for r in model_server.requests] == ["first", "first", "third"]


async def test_a_model_error_inside_a_sub_agent_still_ends_its_call(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """A model error ends the sub-agent's turn: the parent's `agent` call gets its final
    update (failed, saying why) and the parent turn goes on."""
    model_server.enqueue(
        call("agent", prompt="Look around", description="explore"),
        error_status(400, "prompt is too long"),
        reply("The helper failed; I will look myself."),
    )
    session = await start(agent, workspace)
    response, updates, _ = await agent.run_prompt(session, "explore", choose("allow_once"))
    assert response["result"]["stopReason"] == "end_turn"
    done = final_states(updates)["toolu_agent"]
    assert done["status"] == "failed" and done["name"] == "agent"
    assert "without an answer" in done["content"][0]["content"]["text"]


async def test_a_write_through_the_editor_into_a_new_folder(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """An editor that serves fs/write_text_file but makes no parent folders (Toad): the agent
    makes the missing ones inside the project, once the write is allowed, then hands the
    write over."""
    from acp_conformance.client import ErrorAnswer

    model_server.enqueue(
        call("write_file", path="infra/modules/net/main.tf", content='variable "cidr" {}\n'),
        reply("wrote"),
    )
    session = await start(agent, workspace, fs={"readTextFile": True, "writeTextFile": True})
    written: dict[str, str] = {}
    folder_when_asked: list[bool] = []

    def editor(message: dict[str, Any]) -> Any:
        params = message["params"]
        if message["method"] == "session/request_permission":
            folder_when_asked.append((workspace / "infra").exists())
            return ALLOW
        assert message["method"] == "fs/write_text_file", message
        target = Path(params["path"])
        if not target.parent.is_dir():
            return ErrorAnswer(-32603, f"No such file or directory: {target.parent}")
        written[params["path"]] = params["content"]
        return {}

    _, updates, _ = await agent.run_prompt(session, "add the module", editor)
    assert folder_when_asked == [False]  # nothing made before the user allowed it
    target = workspace / "infra" / "modules" / "net" / "main.tf"
    assert written == {str(target): 'variable "cidr" {}\n'}
    assert target.parent.is_dir() and not target.exists()  # the editor owns the file
    assert tool_updates(updates, "toolu_write_file")[-1]["status"] == "completed"


def _shown(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The messages a client would show, in order: (kind, text), chunks of one kind joined."""
    shown: list[tuple[str, str]] = []
    for message in updates:
        update = message["params"]["update"]
        kind = update["sessionUpdate"]
        if kind in ("user_message_chunk", "agent_message_chunk"):
            text = update["content"].get("text", "")
            if shown and shown[-1][0] == kind:
                shown[-1] = (kind, shown[-1][1] + text)
            else:
                shown.append((kind, text))
        elif kind.startswith("tool_call"):
            shown.append((kind, update["toolCallId"]))
    return shown


async def test_commands_replay_as_they_were_lived(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """/compact, /clear and /mcp come back after a load as the user's messages, each followed
    by its own answer (not glued onto the agent's message before)."""
    model_server.enqueue(reply("Hi there."))
    session = await start(agent, workspace)
    live: list[tuple[str, str]] = []
    for text in ("hello", "/compact", "/clear", "/mcp"):
        _, updates, _ = await agent.run_prompt(session, text)
        live += [("user_message_chunk", text)] + _shown(
            [u for u in updates if u.get("method") == "session/update"]
        )
    replayed = _shown(await load(agent, session, workspace))
    assert [kind for kind, _ in replayed] == ["user_message_chunk", "agent_message_chunk"] * 4
    assert replayed == [
        (kind, text.strip()) if kind == "user_message_chunk" else (kind, text)
        for kind, text in live
    ]
    assert replayed[7][1].startswith("No MCP servers.")


async def test_a_sub_agents_calls_are_shown_after_a_load(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    sub_agent_research(model_server, workspace)
    session = await start(agent, workspace)
    _, updates, _ = await agent.run_prompt(session, "research", choose("allow_once"))
    live = [(kind, call_id) for kind, call_id in _shown(updates) if kind.startswith("tool_call")]
    assert ("tool_call", "toolu_child") in live
    replayed = await load(agent, session, workspace)
    order = [(kind, call_id) for kind, call_id in _shown(replayed) if kind.startswith("tool_call")]
    # The parent's start, the child's start and end, the parent's end: as the user saw them.
    assert order == [
        ("tool_call", "toolu_agent"),
        ("tool_call", "toolu_child"),
        ("tool_call_update", "toolu_child"),
        ("tool_call_update", "toolu_agent"),
    ]
    child = tool_updates(replayed, "toolu_child")
    assert all(u["_meta"]["iaccode"]["parentToolCallId"] == "toolu_agent" for u in child)
    assert (
        child[-1]["status"] == "completed"
        and child[0]["title"] == tool_updates(updates, "toolu_child")[0]["title"]
    )


async def test_an_infrastructure_calls_title_is_the_same_after_a_load(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    # A CLI whose change the line's question names (terraform's is asked at its gate, with
    # the plan: tests/e2e/test_plan_gate.py).
    command = "aws cloudformation delete-stack --stack-name web"
    model_server.enqueue(call("bash", command=command), reply("Not deleted."))
    session = await start(agent, workspace)
    questions: list[dict[str, Any]] = []

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        questions.append(message)
        return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}

    _, updates, _ = await agent.run_prompt(session, "apply", editor)

    def last_title(shown: list[dict[str, Any]]) -> str:
        titles: list[str] = [u["title"] for u in shown if u.get("title")]
        return titles[-1]

    live = last_title([*tool_updates(updates, "toolu_bash"), questions[0]["params"]["toolCall"]])
    assert live == f"Changes real infrastructure: {command}"
    assert last_title(tool_updates(updates, "toolu_bash")) == live  # its last update says so
    assert last_title(tool_updates(await load(agent, session, workspace), "toolu_bash")) == live
