"""MCP servers end to end: real MCP servers written with the official SDK
(acp_conformance/fakes/mcp_server.py) on stdio, streamable HTTP and SSE, a real `iaccode acp`,
and the fake model asking for their tools; the test plays the editor."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.mcp_server import ROOT, RemoteServer, acp_stdio_server, calls
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.processes import pid_alive
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent

stdio_server = acp_stdio_server


@pytest.fixture
def calls_log(tmp_path: Path) -> Path:
    return tmp_path / "mcp-calls.jsonl"


@pytest.fixture(params=["http", "sse"])
def remote_server(request: pytest.FixtureRequest, calls_log: Path) -> Iterator[RemoteServer]:
    server = RemoteServer(request.param, calls_log)
    yield server
    server.close()


def call(tool: str, call_id: str = "toolu_1", **args: Any) -> dict[str, Any]:
    return reply(tool_uses=[ToolUse(call_id, tool, args)])


def choose(option: str) -> Any:
    def answer(message: dict[str, Any]) -> dict[str, Any]:
        assert message["method"] == "session/request_permission"
        return {"outcome": {"outcome": "selected", "optionId": option}}

    return answer


def tool_updates(updates: list[dict[str, Any]], call_id: str = "toolu_1") -> list[dict[str, Any]]:
    return [
        u["params"]["update"] for u in updates if u["params"]["update"].get("toolCallId") == call_id
    ]


def messages_text(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["params"]["update"]["content"].get("text", "")
        for u in updates
        if u["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def result_for(
    server: FakeModelServer, request_index: int, call_id: str = "toolu_1"
) -> dict[str, Any]:
    for message in server.requests[request_index].body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and block["tool_use_id"] == call_id:
                return block  # type: ignore[no-any-return]
    raise AssertionError(f"no tool_result for {call_id}")


async def open_session(
    agent: AgentConnection, workspace: Path, servers: list[dict[str, Any]]
) -> str:
    init = await agent.initialize()
    assert init["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
    result = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": servers})
    return str(result["sessionId"])


async def test_stdio_tools_reach_the_model_and_a_read_only_one_runs_without_asking(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__lookup", key="region"), reply("It is set."))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    response, updates, requests = await agent.run_prompt(session, "look it up")
    assert response["result"]["stopReason"] == "end_turn"
    assert requests == []  # readOnlyHint: no question
    tools = {t["name"]: t for t in model_server.requests[0].body["tools"]}
    assert {"read_file", "bash", "mcp__db__lookup", "mcp__db__drop_table"} <= tools.keys()
    system = json.dumps(model_server.requests[0].body["system"])
    assert "- mcp__db__lookup (read-only): Look a key up in the database." in system
    assert "- mcp__db__drop_table: Drop a table." in system  # the system prompt names them
    lookup = tools["mcp__db__lookup"]
    assert lookup["description"] == "Look a key up in the database."
    assert lookup["input_schema"]["properties"]["key"]["type"] == "string"
    assert lookup["input_schema"]["required"] == ["key"]
    start, running, done = tool_updates(updates)
    assert start["title"] == "lookup (db MCP server)" and start["kind"] == "read"
    assert start["rawInput"] == {"key": "region"}
    assert running["status"] == "in_progress"
    assert done["status"] == "completed"
    assert done["content"] == [
        {"type": "content", "content": {"type": "text", "text": "value of region"}}
    ]
    assert result_for(model_server, 1)["content"] == "value of region"
    assert calls(calls_log) == [{"tool": "lookup", "arguments": {"key": "region"}}]


async def test_a_sub_agent_gets_the_read_only_mcp_tools(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(
        call("agent", "toolu_agent", prompt="What is the region?", description="look it up"),
        call("mcp__db__lookup", "toolu_child", key="region"),
        reply("The region is set."),
        reply("Done."),
    )
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    response, updates, requests = await agent.run_prompt(session, "research", choose("allow_once"))
    assert response["result"]["stopReason"] == "end_turn"
    assert len(requests) == 1  # the agent call; the child's lookup is read-only
    child_tools = {t["name"] for t in model_server.requests[1].body["tools"]}
    assert "mcp__db__lookup" in child_tools and "read_file" in child_tools
    assert "mcp__db__drop_table" not in child_tools and "agent" not in child_tools
    child = tool_updates(updates, "toolu_child")
    assert child[-1]["status"] == "completed"
    assert all(u["_meta"]["iaccode"]["parentToolCallId"] == "toolu_agent" for u in child)
    assert result_for(model_server, 2, "toolu_child")["content"] == "value of region"
    assert calls(calls_log) == [{"tool": "lookup", "arguments": {"key": "region"}}]


@pytest.mark.parametrize(("option", "runs"), [("allow_once", True), ("reject_once", False)])
async def test_a_destructive_tool_asks_then_runs_or_not(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    option: str,
    runs: bool,
) -> None:
    model_server.enqueue(call("mcp__db__drop_table", name="users"), reply("done"))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    response, updates, requests = await agent.run_prompt(session, "drop it", choose(option))
    assert response["result"]["stopReason"] == "end_turn"
    assert [r["method"] for r in requests] == ["session/request_permission"]
    question = requests[0]["params"]
    assert question["toolCall"]["title"] == (
        "May change real infrastructure: drop_table (db MCP server)"
    )
    assert (
        "does not mark it read-only or non-destructive"
        in (question["toolCall"]["content"][0]["content"]["text"])
    )
    assert question["toolCall"]["kind"] == "other"
    assert question["toolCall"]["rawInput"] == {"name": "users"}
    assert [o["kind"] for o in question["options"]] == [
        "allow_once",
        "reject_once",
        "reject_always",
    ], "no Always allow for a destructive tool"
    done = tool_updates(updates)[-1]
    assert done["status"] == ("completed" if runs else "failed")
    assert calls(calls_log) == (
        [{"tool": "drop_table", "arguments": {"name": "users"}}] if runs else []
    )
    assert result_for(model_server, 1)["content"] == (
        "dropped users" if runs else "Permission denied."
    )


async def test_always_allow_holds_for_a_non_destructive_tool_and_plan_mode_refuses_it(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(
        call("mcp__db__append_note", text="a"),
        reply("1"),
        call("mcp__db__append_note", "toolu_2", text="b"),
        reply("2"),
        call("mcp__db__append_note", "toolu_3", text="c"),
        call("mcp__db__lookup", "toolu_4", key="k"),
        reply("3"),
    )
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    _, _, asked = await agent.run_prompt(session, "first", choose("allow_always"))
    assert len(asked) == 1
    _, _, asked = await agent.run_prompt(session, "second")
    assert asked == []
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "plan"})
    _, updates, asked = await agent.run_prompt(session, "third")
    assert asked == []
    assert tool_updates(updates, "toolu_3")[-1]["status"] == "failed"
    assert "Plan mode" in result_for(model_server, 5, "toolu_3")["content"]
    assert tool_updates(updates, "toolu_4")[-1]["status"] == "completed"  # read-only runs
    assert [c["arguments"] for c in calls(calls_log)] == [
        {"text": "a"},
        {"text": "b"},
        {"key": "k"},
    ]


async def test_bypass_asks_for_a_destructive_tool_and_runs_a_non_destructive_one(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(
        call("mcp__db__drop_table", name="x"),
        call("mcp__db__append_note", "toolu_2", text="y"),
        reply("ok"),
    )
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    _, updates, asked = await agent.run_prompt(session, "go", choose("reject_once"))
    assert [q["params"]["toolCall"]["toolCallId"] for q in asked] == ["toolu_1"]
    assert tool_updates(updates)[-1]["status"] == "failed"
    assert tool_updates(updates, "toolu_2")[-1]["status"] == "completed"
    assert calls(calls_log) == [{"tool": "append_note", "arguments": {"text": "y"}}]


async def test_a_trusted_servers_destructive_tool_follows_the_modes(
    agent_env: dict[str, str],
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    tmp_path: Path,
) -> None:
    write_config(
        Path(agent_env["IAC_CODE_HOME"]),
        'mode = "bypass"\n\n' + config_table("db", calls_log) + "trusted = true\n",
    )
    model_server.enqueue(call("mcp__db__drop_table", name="x"), reply("ok"))
    async with spawn_agent(agent_env, tmp_path / "agent.stderr") as agent:
        session = await open_session(agent, workspace, [])
        _, updates, asked = await agent.run_prompt(session, "go")
    assert asked == [], "trusted = true: bypass runs it"
    assert calls(calls_log) == [{"tool": "drop_table", "arguments": {"name": "x"}}]


async def test_text_and_image_result_reach_editor_and_model(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__picture"), reply("A diagram."))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    _, updates, _ = await agent.run_prompt(session, "show me")
    done = tool_updates(updates)[-1]
    assert done["status"] == "completed"
    text, image = done["content"]
    assert text["content"] == {"type": "text", "text": "the schema diagram"}
    assert image["content"]["type"] == "image" and image["content"]["mimeType"] == "image/png"
    result = result_for(model_server, 1)
    assert result["content"][0] == {
        "type": "text",
        "text": "the schema diagram\n[image: image/png]",
    }
    assert result["content"][1]["type"] == "image"
    assert result["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": image["content"]["data"],
    }


async def test_an_is_error_result_fails_the_call_and_the_turn_goes_on(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__broken"), reply("It is locked."))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    response, updates, _ = await agent.run_prompt(session, "try")
    assert response["result"]["stopReason"] == "end_turn"
    assert tool_updates(updates)[-1]["status"] == "failed"
    result = result_for(model_server, 1)
    assert result["is_error"] is True and "the table is locked" in result["content"]
    assert "It is locked." in messages_text(updates)


async def test_open_world_tool_is_a_fetch(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__fetch_page", url="https://example.com"), reply("ok"))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    _, updates, asked = await agent.run_prompt(session, "fetch")
    assert asked == []
    assert tool_updates(updates)[0]["kind"] == "fetch"


async def test_remote_servers_http_and_sse(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    remote_server: RemoteServer,
) -> None:
    transport = remote_server.transport
    model_server.enqueue(
        call("mcp__tracker__lookup", key="bug-1"),
        call("mcp__tracker__echo_header", "toolu_2"),
        reply("found"),
    )
    session = await open_session(
        agent,
        workspace,
        [{**remote_server.acp("tracker"), "headers": [{"name": "X-Test", "value": "sent"}]}],
    )
    _, updates, asked = await agent.run_prompt(session, "look")
    assert asked == []
    assert tool_updates(updates)[-1]["status"] == "completed"
    assert result_for(model_server, 1)["content"] == "value of bug-1"
    assert result_for(model_server, 2, "toolu_2")["content"] == "sent"  # the editor's header
    _, updates, _ = await agent.run_prompt(session, "/mcp")
    assert (
        f"tracker ({transport}, {remote_server.url}, from the editor): connected, 16 tools"
        in messages_text(updates)
    )
    remote_server.close()  # it goes away between prompts: the next one finds out and says so
    model_server.enqueue(reply("on without it"))
    response, updates, _ = await agent.run_prompt(session, "still there?")
    assert response["result"]["stopReason"] == "end_turn"
    assert "MCP server tracker stopped: " in messages_text(updates)
    assert "on without it" in messages_text(updates)
    assert not any(t["name"].startswith("mcp__") for t in model_server.requests[3].body["tools"])
    _, updates, _ = await agent.run_prompt(session, "/mcp")
    assert (
        f"tracker ({transport}, {remote_server.url}, from the editor): failed: "
        in messages_text(updates)
    )


async def test_a_failing_server_is_reported_once_and_the_session_goes_on(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(reply("first"), reply("second"))
    session = await open_session(
        agent,
        workspace,
        [
            {"name": "broken-db", "command": "/nonexistent/db-mcp", "args": [], "env": []},
            {
                "name": "noisy",
                "command": "/bin/sh",
                "args": ["-c", "echo boom-db-error >&2; exit 4"],
                "env": [],
            },
            stdio_server("db", calls_log),
        ],
    )
    response, updates, _ = await agent.run_prompt(session, "hello")
    assert response["result"]["stopReason"] == "end_turn"
    text = messages_text(updates)
    assert "MCP server broken-db could not start: /nonexistent/db-mcp: not found" in text
    assert "MCP server noisy could not start: exited with status 4" in text
    assert "first" in text
    names = {t["name"] for t in model_server.requests[0].body["tools"]}
    assert "mcp__db__lookup" in names
    assert not any(n.startswith(("mcp__broken-db__", "mcp__noisy__")) for n in names)
    response, updates, _ = await agent.run_prompt(session, "again")  # retried, not re-told
    assert "could not start" not in messages_text(updates)
    assert "second" in messages_text(updates)
    _, updates, _ = await agent.run_prompt(session, "/mcp")
    listing = messages_text(updates)
    assert (
        "broken-db (stdio, /nonexistent/db-mcp, from the editor): failed: "
        "/nonexistent/db-mcp: not found"
    ) in listing
    assert "db (stdio" in listing and "connected, 16 tools, 1 prompt\n" in listing + "\n"
    assert "MCP server broken-db (stdio) failed: /nonexistent/db-mcp: not found" in agent.stderr
    assert "MCP server noisy (stdio) failed: exited with status 4" in agent.stderr
    assert "boom-db-error" in agent.stderr  # its stderr's tail, in the log


async def test_a_server_that_goes_away_fails_the_call_and_comes_back_at_the_next_prompt(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__crash"), reply("It went away."))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    response, updates, _ = await agent.run_prompt(session, "crash it")
    assert response["result"]["stopReason"] == "end_turn"
    assert tool_updates(updates)[-1]["status"] == "failed"
    result = result_for(model_server, 1)
    assert result["is_error"] is True
    assert result["content"].startswith("MCP server db went away during the call")
    assert "It went away." in messages_text(updates)
    model_server.enqueue(call("mcp__db__lookup", "toolu_2", key="k"), reply("back"))
    response, updates, _ = await agent.run_prompt(session, "again")
    assert "MCP server db stopped: exited with status 3" in messages_text(updates)
    assert tool_updates(updates, "toolu_2")[-1]["status"] == "completed"  # started again
    assert [c["tool"] for c in calls(calls_log)] == ["crash", "lookup"]


async def test_a_late_server_does_not_hold_session_new_or_the_prompt(
    agent_env: dict[str, str],
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    tmp_path: Path,
) -> None:
    write_config(Path(agent_env["IAC_CODE_HOME"]), "mcp_startup_timeout = 0.2\n")
    server = stdio_server("late", calls_log)
    late = {
        **server,
        "command": "/bin/sh",
        "args": ["-c", 'sleep 3; exec "$0" "$@"', server["command"], *server["args"]],
    }
    model_server.enqueue(reply("without it"), reply("with it"))
    checker = WireChecker(aliases=METHOD_ALIASES)
    async with spawn_agent(agent_env, tmp_path / "agent.stderr", checker) as agent:
        session = await open_session(agent, workspace, [late])  # answered while it sleeps
        response, updates, _ = await agent.run_prompt(session, "hi")
        assert "without it" in messages_text(updates)
        assert not any(
            t["name"].startswith("mcp__") for t in model_server.requests[0].body["tools"]
        )
        assert "mcp__" not in json.dumps(model_server.requests[0].body["system"])
        _, updates, _ = await agent.run_prompt(session, "/mcp")
        assert "late (stdio, /bin/sh, from the editor): starting" in messages_text(updates)
        with trio.fail_after(20):
            while True:  # it connects in the background: its prompt becomes a command
                update = (await agent.receive_update("available_commands_update"))["params"]
                if any(c["name"] == "late:review" for c in update["update"]["availableCommands"]):
                    break
        response, updates, _ = await agent.run_prompt(session, "now")
        assert "mcp__late__lookup" in {t["name"] for t in model_server.requests[1].body["tools"]}
        assert "mcp__late__lookup" in json.dumps(model_server.requests[1].body["system"])


async def test_load_and_resume_connect_the_servers_they_are_given(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(reply("one"), reply("two"), reply("three"))
    session = await open_session(agent, workspace, [])
    await agent.run_prompt(session, "first")
    assert not any(t["name"].startswith("mcp__") for t in model_server.requests[0].body["tools"])
    for index, method in enumerate(["session/load", "session/resume"], start=1):
        if method == "session/resume":  # a live session is reattached as it is: close it
            await agent.call("session/close", {"sessionId": session})
        await agent.call(
            method,
            {
                "sessionId": session,
                "cwd": str(workspace),
                "mcpServers": [stdio_server(f"db{index}", calls_log)],
            },
        )
        await agent.run_prompt(session, "again")
        names = {t["name"] for t in model_server.requests[index].body["tools"]}
        assert f"mcp__db{index}__lookup" in names


async def test_bad_mcp_servers_are_invalid_params(agent: AgentConnection, workspace: Path) -> None:
    await agent.initialize()
    answer = await agent.request(
        "session/new",
        {
            "cwd": str(workspace),
            "mcpServers": [{"type": "http", "name": "x", "url": "ftp://nope", "headers": []}],
        },
    )
    assert answer["error"]["code"] == -32602
    assert "params.mcpServers[0].url" in answer["error"]["data"]


async def test_cancel_during_a_slow_tool_the_server_ignores(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__slow", seconds=30))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    prompt_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}
    )
    with trio.fail_after(15):
        while True:
            message = await agent.receive()
            update = message.get("params", {}).get("update", {})
            if update.get("status") == "in_progress":
                break
        await wait_for(lambda: bool(calls(calls_log)))
    await agent.notify("session/cancel", {"sessionId": session})
    response, before = await agent.response(prompt_id, timeout=5)
    assert response["result"]["stopReason"] == "cancelled"
    assert tool_updates(before)[-1]["status"] == "failed"
    await wait_for(lambda: {"tool": "slow: cancelled", "arguments": {}} in calls(calls_log))
    model_server.enqueue(call("mcp__db__lookup", "toolu_2", key="k"), reply("still there"))
    response, updates, _ = await agent.run_prompt(session, "next")
    assert tool_updates(updates, "toolu_2")[-1]["status"] == "completed"


async def test_prompts_are_slash_commands(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(reply("Reviewed."))
    session = await open_session(agent, workspace, [stdio_server("db", calls_log)])
    with trio.fail_after(15):
        while True:  # the first list, then the one with the server's prompt
            update = (await agent.receive_update("available_commands_update"))["params"]
            names = {c["name"]: c for c in update["update"]["availableCommands"]}
            if "db:review" in names:
                break
    assert {"compact", "clear", "mcp"} <= names.keys()
    assert names["db:review"]["input"] == {"hint": "<topic>"}
    response, updates, _ = await agent.run_prompt(session, "/db:review the schema")
    assert response["result"]["stopReason"] == "end_turn"
    last = model_server.requests[0].body["messages"][-1]
    assert last["role"] == "user"
    assert "Please review the schema carefully." in json.dumps(last["content"])
    _, updates, _ = await agent.run_prompt(session, "/db:review")
    assert "needs topic" in messages_text(updates)


@pytest.mark.parametrize(
    ("transport", "legacy"),
    [("stdio", False), ("http", False), ("sse", False), ("stdio", True), ("http", True)],
    ids=["stdio", "http", "sse", "stdio-before-2026", "http-before-2026"],
)
async def test_tools_and_prompts_a_server_adds_later_reach_the_next_prompt(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    transport: str,
    legacy: bool,
    tmp_path: Path,
) -> None:
    """At protocol 2026-07-28 the change comes on a subscriptions/listen stream, before as a
    notifications/*/list_changed; either way the next prompt has the new tool."""
    extra = ["--legacy"] if legacy else []
    remote = RemoteServer(transport, calls_log, *extra) if transport != "stdio" else None
    try:
        server = remote.acp("db") if remote else stdio_server("db", calls_log, *extra)
        model_server.enqueue(
            call("mcp__db__add_tool", name="extra"),
            reply("Added."),
            call("mcp__db__extra", "toolu_2"),
            reply("It ran."),
        )
        session = await open_session(agent, workspace, [server])
        response, updates, asked = await agent.run_prompt(session, "add a tool")
        assert response["result"]["stopReason"] == "end_turn" and asked == []
        assert "mcp__db__extra" not in {t["name"] for t in model_server.requests[1].body["tools"]}

        def has_the_new_prompt(message: dict[str, Any]) -> bool:
            update = message["params"]["update"]
            return update["sessionUpdate"] == "available_commands_update" and "db:extra_prompt" in {
                c["name"] for c in update["availableCommands"]
            }

        with trio.fail_after(15):  # the server said so: its new prompt shows as a command
            while not any(has_the_new_prompt(u) for u in updates):
                updates = [await agent.receive_update("available_commands_update")]
        response, updates, asked = await agent.run_prompt(session, "use it")
        assert response["result"]["stopReason"] == "end_turn" and asked == []  # read-only
        assert "MCP server" not in messages_text(updates)  # still connected: nothing to tell
        tools = {t["name"]: t for t in model_server.requests[2].body["tools"]}
        assert tools["mcp__db__extra"]["description"] == "Added at run time: extra."
        assert "mcp__db__extra" in json.dumps(model_server.requests[2].body["system"])
        assert tool_updates(updates, "toolu_2")[-1]["status"] == "completed"
        assert result_for(model_server, 3, "toolu_2")["content"] == "extra ran"
        assert [c["tool"] for c in calls(calls_log)] == ["add_tool", "extra"]
        era = "protocol 20" + ("25" if legacy else "26-07-28")
        assert (
            f"MCP server db connected ({transport}, {era}"
            in (tmp_path / "agent.stderr").read_text()
        )
    finally:
        if remote is not None:
            remote.close()


async def test_a_server_that_refuses_the_change_stream_stays_connected(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    tmp_path: Path,
) -> None:
    model_server.enqueue(
        call("mcp__db__lookup", key="a"),
        reply("one"),
        call("mcp__db__lookup", "toolu_2", key="b"),
        reply("two"),
    )
    session = await open_session(agent, workspace, [stdio_server("db", calls_log, "--no-listen")])
    for text in ("first", "second"):
        response, updates, _ = await agent.run_prompt(session, text)
        assert response["result"]["stopReason"] == "end_turn"
        assert "MCP server" not in messages_text(updates)
    assert result_for(model_server, 3, "toolu_2")["content"] == "value of b"
    assert (
        "MCP server db: no subscriptions/listen stream (Method not found)"
        in (tmp_path / "agent.stderr").read_text()
    )


def pids(path: Path) -> list[int]:
    """The server's pid and its child's, once the server has written them."""
    return [int(p) for p in path.read_text().split()] if path.exists() else []


async def wait_for(condition: Callable[[], bool], timeout: float = 15) -> None:
    """Until ``condition()`` (another process makes it true: no event to wait on)."""
    with trio.fail_after(timeout):
        while not condition():  # noqa: ASYNC110 - another process
            await trio.sleep(0.05)


async def wait_gone(*pid_list: int) -> None:
    await wait_for(lambda: not any(pid_alive(pid) for pid in pid_list))


async def wait_file(path: Path) -> None:
    await wait_for(lambda: len(pids(path)) == 2)


@pytest.mark.parametrize("method", ["session/close", "session/delete"])
async def test_close_and_delete_end_the_server_and_what_it_started(
    agent: AgentConnection, workspace: Path, calls_log: Path, tmp_path: Path, method: str
) -> None:
    pid_file = tmp_path / "pids"
    session = await open_session(
        agent, workspace, [stdio_server("db", calls_log, "--spawn-child", str(pid_file))]
    )
    await wait_file(pid_file)
    server_pid, child_pid = pids(pid_file)
    assert pid_alive(server_pid) and pid_alive(child_pid)
    await agent.call(method, {"sessionId": session})
    await wait_gone(server_pid, child_pid)


@pytest.mark.process  # the agent's exit, by signal too, with its process tree
@pytest.mark.parametrize("how", ["eof", signal.SIGTERM, signal.SIGINT])
async def test_agent_exit_leaves_no_server_process(
    agent_env: dict[str, str],
    workspace: Path,
    calls_log: Path,
    tmp_path: Path,
    how: str | signal.Signals,
) -> None:
    pid_file = tmp_path / "pids"
    checker = WireChecker(aliases=METHOD_ALIASES)
    async with spawn_agent(agent_env, tmp_path / "agent.stderr", checker) as agent:
        await open_session(
            agent, workspace, [stdio_server("db", calls_log, "--spawn-child", str(pid_file))]
        )
        await wait_file(pid_file)
        server_pid, child_pid = pids(pid_file)
        if how == "eof":
            await agent.close_stdin()
        else:
            assert isinstance(how, signal.Signals)
            agent.process.send_signal(how)
        assert await agent.wait_exit(15) == 0
        assert not pid_alive(server_pid) and not pid_alive(child_pid)


def config_table(name: str, calls_log: Path) -> str:
    """The fake MCP server (stdio) as a config.toml ``[mcp_servers.NAME]`` table."""
    server = stdio_server(name, calls_log)
    return (
        f"[mcp_servers.{name}]\ncommand = {json.dumps(server['command'])}\n"
        f"args = {json.dumps(server['args'])}\n"
        f"env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}\n"
    )


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


async def test_config_toml_servers_are_merged_and_the_editors_win(
    agent_env: dict[str, str],
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    tmp_path: Path,
) -> None:
    write_config(
        Path(agent_env["IAC_CODE_HOME"]),
        "mcp_startup_timeout = 20\n\n"
        + config_table("user-db", calls_log)
        + '\n[mcp_servers.shared]\ncommand = "/nonexistent/from-config"\n',
    )
    model_server.enqueue(reply("ok"), reply("ok"))
    checker = WireChecker(aliases=METHOD_ALIASES)
    async with spawn_agent(agent_env, tmp_path / "agent.stderr", checker) as agent:
        session = await open_session(agent, workspace, [stdio_server("shared", calls_log)])
        response, updates, _ = await agent.run_prompt(session, "hi")
        assert "could not start" not in messages_text(updates)  # the editor's "shared" won
        names = {t["name"] for t in model_server.requests[0].body["tools"]}
        assert {"mcp__user-db__lookup", "mcp__shared__lookup"} <= names
        _, updates, _ = await agent.run_prompt(session, "/mcp")
        listing = messages_text(updates)
        assert "user-db (stdio" in listing and "from the config.toml): connected" in listing
        assert "shared (stdio" in listing and "from the editor): connected" in listing


async def test_a_config_toml_http_server_sends_its_headers(
    agent_env: dict[str, str],
    model_server: FakeModelServer,
    workspace: Path,
    calls_log: Path,
    tmp_path: Path,
) -> None:
    remote = RemoteServer("http", calls_log)
    try:
        write_config(
            Path(agent_env["IAC_CODE_HOME"]),
            f"[mcp_servers.remote]\nurl = {json.dumps(remote.url)}\n"
            f'headers = {{ X-Test = "from config.toml" }}\n',
        )
        model_server.enqueue(call("mcp__remote__echo_header"), reply("ok"))
        checker = WireChecker(aliases=METHOD_ALIASES)
        async with spawn_agent(agent_env, tmp_path / "agent.stderr", checker) as agent:
            session = await open_session(agent, workspace, [])
            _, updates, _ = await agent.run_prompt(session, "which header?")
            assert result_for(model_server, 1)["content"] == "from config.toml"
    finally:
        remote.close()
