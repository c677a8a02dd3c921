"""Sessions that last: every test crosses at least one real process restart."""

from __future__ import annotations

import json
import signal
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, hang, reply

from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent


def spawn(
    env: dict[str, str], tmp_path: Path, name: str = "agent"
) -> AbstractAsyncContextManager[AgentConnection]:
    return spawn_agent(env, tmp_path / f"{name}.stderr", WireChecker(aliases=METHOD_ALIASES))


def kinds(messages: list[dict]) -> list[str]:
    return [
        m["params"]["update"]["sessionUpdate"]
        for m in messages
        if m.get("method") == "session/update"
    ]


def allow(message: dict) -> dict:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def assert_valid_history(messages: list[dict[str, Any]]) -> None:
    """What the API demands: roles alternate, every tool_use is answered right after."""
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False)), roles
    for index, message in enumerate(messages):
        uses = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if uses:
            answered = [
                b["tool_use_id"]
                for b in messages[index + 1]["content"]
                if b.get("type") == "tool_result"
            ]
            assert sorted(answered) == sorted(uses)


async def open_session(
    agent: AgentConnection, method: str, session: str, workspace: Path
) -> tuple[dict, list[dict]]:
    request_id = await agent.send_request(
        method, {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    return await agent.response(request_id)


async def test_prompt_exit_list_load_resume(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "main.tf").write_text('variable "region" {}\n')
    model_server.enqueue(
        reply(
            "Let me look.",
            thinking="Read the module first.",
            tool_uses=[ToolUse("toolu_1", "read_file", {"path": "main.tf"})],
        ),
        reply("It declares region."),
        reply("Still here."),
        reply("And again."),
    )
    async with spawn(agent_env, tmp_path, "first") as agent:
        init = await agent.initialize()
        caps = init["agentCapabilities"]
        assert caps["loadSession"] is True
        assert caps["sessionCapabilities"] == {
            "list": {},
            "close": {},
            "resume": {},
            "fork": {},
            "delete": {},
            "additionalDirectories": {},
        }
        session = await agent.new_session(workspace)
        response, updates, _ = await agent.run_prompt(session, "What does   main.tf declare?")
        assert response["result"]["stopReason"] == "end_turn"
        assert "session_info_update" in kinds(updates)
        await agent.close_stdin()
        assert await agent.wait_exit(5) == 0

    async with spawn(agent_env, tmp_path, "second") as agent:
        await agent.initialize()
        listed = await agent.call("session/list", {"cwd": str(workspace)})
        assert [s["sessionId"] for s in listed["sessions"]] == [session]
        assert listed["sessions"][0]["title"] == "What does main.tf declare?"
        assert listed["sessions"][0]["updatedAt"].endswith("Z")
        assert (await agent.call("sessions/list", {"cwd": "/elsewhere"}))["sessions"] == []

        response, replay = await open_session(agent, "session/load", session, workspace)
        assert set(response["result"]) >= {"modes", "models", "configOptions"}
        assert kinds(replay) == [
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        assert replay[0]["params"]["update"]["content"]["text"] == "What does   main.tf declare?"
        assert replay[4]["params"]["update"]["status"] == "completed"
        after = await agent.receive()  # the commands come after the answer
        assert after["params"]["update"]["sessionUpdate"] == "available_commands_update"
        names = {c["name"] for c in after["params"]["update"]["availableCommands"]}
        assert {"compact", "clear"} <= names

        response, _, _ = await agent.run_prompt(session, "Still there?")
        history = model_server.requests[-1].body["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant", "user"]
        assert_valid_history(history)
        await agent.close_stdin()

    async with spawn(agent_env, tmp_path, "third") as agent:
        await agent.initialize()
        response, before = await open_session(agent, "session/resume", session, workspace)
        assert "sessionId" not in response["result"]
        assert [k for k in kinds(before) if k != "available_commands_update"] == []
        await agent.run_prompt(session, "Once more")
        assert len(model_server.requests[-1].body["messages"]) == 7


async def test_fork_is_independent(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("one"), reply("fork answer"), reply("original answer"))
    async with spawn(agent_env, tmp_path) as agent:
        await agent.initialize()
        original = await agent.new_session(workspace)
        await agent.run_prompt(original, "first")
        forked = (await agent.call("session/fork", {"sessionId": original, "cwd": str(workspace)}))[
            "sessionId"
        ]
        assert forked != original
        await agent.run_prompt(forked, "in the fork")
        await agent.run_prompt(original, "in the original")
    fork_history = model_server.requests[1].body["messages"]
    original_history = model_server.requests[2].body["messages"]
    assert fork_history[-1]["content"][0]["text"] == "in the fork"
    assert original_history[-1]["content"][0]["text"] == "in the original"
    assert len(fork_history) == len(original_history) == 3
    assert all("in the fork" not in json.dumps(m) for m in original_history)


async def test_delete(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("hi"))
    async with spawn(agent_env, tmp_path) as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        await agent.run_prompt(session, "hello")
        assert await agent.call("session/delete", {"sessionId": session}) == {}
        assert await agent.call("session/delete", {"sessionId": session}) == {}
        assert (await agent.call("session/list", {}))["sessions"] == []
        _, _ = await open_session(agent, "session/load", session, workspace)  # noqa: F841
    async with spawn(agent_env, tmp_path, "again") as agent:
        await agent.initialize()
        answer = await agent.request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        assert answer["error"]["code"] == -32602


async def test_session_ids_are_validated(agent: AgentConnection, workspace: Path) -> None:
    await agent.initialize()
    for bad in ("../../etc", "sess_../../x", "", "x" * 500):
        answer = await agent.request(
            "session/load", {"sessionId": bad, "cwd": str(workspace), "mcpServers": []}
        )
        assert answer["error"]["code"] == -32602, bad


@pytest.mark.process  # kill -9
async def test_kill_during_streaming_then_load(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply("done"), reply([f"w{i} " for i in range(100)], delay=0.05), reply("recovered")
    )
    async with spawn(agent_env, tmp_path, "killed") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        await agent.run_prompt(session, "first")
        await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "stream"}]}
        )
        while (await agent.receive()).get("method") != "session/update":
            pass
        agent.process.send_signal(signal.SIGKILL)
        await agent.process.wait()
    async with spawn(agent_env, tmp_path, "after") as agent:
        await agent.initialize()
        await open_session(agent, "session/load", session, workspace)
        response, _, _ = await agent.run_prompt(session, "are you back?")
        assert response["result"]["stopReason"] == "end_turn"
    history = model_server.requests[-1].body["messages"]
    assert_valid_history(history)
    assert history[0]["content"][0]["text"] == "first"


@pytest.mark.process  # kill -9
async def test_kill_during_a_tool_call_then_load(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_sleep", "bash", {"command": "touch started; sleep 30"})]),
        reply("recovered"),
    )
    async with spawn(agent_env, tmp_path, "killed") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]}
        )
        while True:
            message = await agent.receive()
            if message.get("method") == "session/request_permission":
                await agent.reply(message["id"], allow(message))
                break
        with trio.fail_after(10):
            while not (workspace / "started").exists():  # noqa: ASYNC110
                await trio.sleep(0.05)
        agent.process.send_signal(signal.SIGKILL)
        await agent.process.wait()
    async with spawn(agent_env, tmp_path, "after") as agent:
        await agent.initialize()
        _, replay = await open_session(agent, "session/load", session, workspace)
        failed = [
            m["params"]["update"]
            for m in replay
            if m["params"]["update"].get("toolCallId") == "toolu_sleep"
        ]
        assert failed[-1]["status"] == "failed"
        await agent.run_prompt(session, "what happened?")
    history = model_server.requests[-1].body["messages"]
    assert_valid_history(history)
    result = history[2]["content"][0]
    assert result["tool_use_id"] == "toolu_sleep" and result["is_error"] is True
    assert "interrupted" in result["content"]


async def test_torn_last_line_is_tolerated(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("one"), reply("two"))
    async with spawn(agent_env, tmp_path, "first") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        await agent.run_prompt(session, "first")
    history_file = next((tmp_path / "home" / "sessions").glob(f"{session}/*.jsonl"))
    with history_file.open("a") as torn:
        torn.write('{"type": "message", "message": {"role": "user", "cont')
    async with spawn(agent_env, tmp_path, "second") as agent:
        await agent.initialize()
        await open_session(agent, "session/load", session, workspace)
        response, _, _ = await agent.run_prompt(session, "second")
        assert response["result"]["stopReason"] == "end_turn"
    assert_valid_history(model_server.requests[-1].body["messages"])
    for line in history_file.read_text().splitlines():
        json.loads(line)  # the next append started on a clean line


@pytest.mark.process  # the lock between processes
async def test_two_processes_cannot_open_one_session(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    async with spawn(agent_env, tmp_path, "one") as first:
        await first.initialize()
        session = await first.new_session(workspace)
        async with spawn(agent_env, tmp_path, "two") as second:
            await second.initialize()
            answer = await second.request(
                "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
            )
            assert answer["error"]["code"] == -32602
            assert "another" in json.dumps(answer["error"]["data"])


async def test_settings_and_permission_memory_survive_a_reload(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_a", "bash", {"command": "true"})]),
        reply("ok"),
        reply(tool_uses=[ToolUse("toolu_b", "bash", {"command": "true"})]),
        reply("ok again"),
    )
    async with spawn(agent_env, tmp_path, "first") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        options = await agent.call(
            "session/set_config_option",
            {"sessionId": session, "configId": "thought_level", "value": "high"},
        )
        assert {o["id"] for o in options["configOptions"]} == {"model", "mode", "thought_level"}
        await agent.call(
            "session/set_config_option",
            {"sessionId": session, "configId": "model", "value": "claude-opus-5-5"},
        )
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "accept_edits"})
        await agent.run_prompt(
            session,
            "run",
            lambda m: {"outcome": {"outcome": "selected", "optionId": "allow_always"}},
        )
        bad = await agent.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "thought_level", "value": "extreme"},
        )
        assert bad["error"]["code"] == -32602 and "medium" in json.dumps(bad["error"]["data"])
    async with spawn(agent_env, tmp_path, "second") as agent:
        await agent.initialize()
        response, _ = await open_session(agent, "session/load", session, workspace)
        result = response["result"]
        assert result["modes"]["currentModeId"] == "accept_edits"
        current = {o["id"]: o["currentValue"] for o in result["configOptions"]}
        assert current == {
            "model": "claude-opus-5-5",
            "mode": "accept_edits",
            "thought_level": "high",
        }
        _, _, asked = await agent.run_prompt(session, "run again")
        assert asked == []  # allow_always came back with the session
    assert model_server.requests[-1].body["model"] == "claude-opus-5-5"


async def test_compaction_keeps_the_request_in_the_window(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    env = {**agent_env, "IAC_CODE_COMPACTION_THRESHOLD": "0.5"}
    # Three quick turns, then a tool turn whose answer reports a nearly full window.
    model_server.enqueue(
        reply("a1"),
        reply("a2"),
        reply("a3"),
        reply(tool_uses=[ToolUse("toolu_l", "list_files", {"path": "."})], input_tokens=150_000),
        reply("The summary of turns one to three."),  # the compaction request
        reply("done after compaction"),
    )
    async with spawn(env, tmp_path) as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        for text in ("one", "two", "three"):
            await agent.run_prompt(session, text)
        response, updates, _ = await agent.run_prompt(session, "four")
        assert response["result"]["stopReason"] == "end_turn"
        notices = [
            m["params"]["update"]["content"]["text"]
            for m in updates
            if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert any("Context compacted" in text for text in notices)
    summary_request = model_server.requests[4].body["messages"]
    assert "Summarise" in summary_request[-1]["content"][-1]["text"]
    final = model_server.requests[5].body["messages"]
    assert_valid_history(final)
    assert "The summary of turns one to three." in final[0]["content"][0]["text"]
    assert "one" not in json.dumps(final[1:])  # the older turns are gone from the request
    assert any(b.get("type") == "tool_use" for m in final for b in m["content"])  # pair kept


async def test_slash_commands(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply("a1"), reply("a2"), reply("summary"), reply("fresh"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    await agent.run_prompt(session, "one")
    await agent.run_prompt(session, "two")
    response, updates, _ = await agent.run_prompt(session, "/compact")
    assert response["result"]["stopReason"] == "end_turn"
    assert len(model_server.requests) == 3
    await agent.run_prompt(session, "/clear")
    await agent.run_prompt(session, "after clear")
    assert model_server.requests[-1].messages == [
        {"role": "user", "content": [{"type": "text", "text": "after clear"}]}
    ]


@pytest.mark.process  # the lock between processes
async def test_close_releases_the_session_for_another_process(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(hang())
    async with spawn(agent_env, tmp_path, "one") as first:
        await first.initialize()
        session = await first.new_session(workspace)
        await first.call("session/close", {"sessionId": session})
        async with spawn(agent_env, tmp_path, "two") as second:
            await second.initialize()
            response, _ = await open_session(second, "session/load", session, workspace)
            assert "result" in response
