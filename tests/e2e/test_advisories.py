"""``compaction_update`` and ``notice`` (issue 24; unstable schema, npm SDK 2.4.0) for clients
that advertise ``session.compaction`` / ``session.notices``; the others keep today's text
messages (the rest of the e2e suite checks those).

The agent fixture checks every message against the official schema.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acp_conformance.driver import updates
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, error_status, hang, reply

from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent

SHOWS_BOTH: dict[str, Any] = {"session": {"compaction": {}, "notices": {}}}


def kinds(messages: list[dict], session: str) -> list[str]:
    return [u["sessionUpdate"] for u in updates(messages, session)]


def chunk_texts(messages: list[dict], session: str) -> list[str]:
    return [u["content"]["text"] for u in updates(messages, session, "agent_message_chunk")]


def the_notice(live: list[dict], session: str, severity: str, title: str) -> dict:
    """The one notice of a prompt (and no ⚠ text in the chat beside it)."""
    notices = updates(live, session, "notice")
    assert [(n["severity"], n["title"]) for n in notices] == [(severity, title)]
    assert not any("⚠" in text for text in chunk_texts(live, session))
    return notices[0]


async def three_turns(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, **capabilities: object
) -> str:
    model_server.enqueue(reply("a1"), reply("a2"), reply("a3"))
    await agent.initialize(**capabilities)
    session = await agent.new_session(workspace)
    for text in ("one", "two", "three"):
        await agent.run_prompt(session, text)
    return session


async def test_compact_is_shown_as_compaction_updates(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    session = await three_turns(agent, model_server, workspace, **SHOWS_BOTH)
    model_server.enqueue(
        reply("The user asked three things.", input_tokens=40_000, output_tokens=1_200)
    )
    _, live, _ = await agent.run_prompt(session, "/compact")
    shown = updates(live, session, "compaction_update")
    assert [u["status"] for u in shown] == ["in_progress", "completed"]
    assert shown[0]["compactionId"] == shown[1]["compactionId"]
    summary = shown[1]["summary"][0]["text"]
    assert summary.startswith("[Context compacted: Summarised 2 earlier messages")
    assert "The user asked three things." in summary
    assert chunk_texts(live, session) == []  # not also as text in the chat


async def test_a_failed_compaction_says_why(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    session = await three_turns(agent, model_server, workspace, **SHOWS_BOTH)
    model_server.enqueue(error_status(400, "prompt is too long"))
    _, live, _ = await agent.run_prompt(session, "/compact")
    shown = updates(live, session, "compaction_update")
    assert [u["status"] for u in shown] == ["in_progress", "failed"]
    assert "prompt is too long" in shown[1]["error"]


async def test_a_compaction_cut_short_by_a_cancel_is_cancelled(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    session = await three_turns(agent, model_server, workspace, **SHOWS_BOTH)
    model_server.enqueue(hang())
    request = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "/compact"}]}
    )
    await agent.receive_update("compaction_update")
    await agent.notify("session/cancel", {"sessionId": session})
    answer, live = await agent.response(request)
    assert answer["result"]["stopReason"] == "cancelled"
    assert [u["status"] for u in updates(live, session, "compaction_update")] == ["cancelled"]


async def test_automatic_compaction_too(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    env = {**agent_env, "IAC_CODE_COMPACTION_THRESHOLD": "0.5"}
    model_server.enqueue(
        reply("a1"),
        reply("a2"),
        reply("a3"),
        reply(tool_uses=[ToolUse("toolu_l", "list_files", {"path": "."})], input_tokens=150_000),
        reply("The summary."),
        reply("done after compaction"),
    )
    async with spawn_agent(env, tmp_path / "stderr", WireChecker(aliases=METHOD_ALIASES)) as agent:
        await agent.initialize(**SHOWS_BOTH)
        session = await agent.new_session(workspace)
        for text in ("one", "two", "three"):
            await agent.run_prompt(session, text)
        _, live, _ = await agent.run_prompt(session, "four")
    assert [u["status"] for u in updates(live, session, "compaction_update")] == [
        "in_progress",
        "completed",
    ]
    assert not any("Context compacted" in text for text in chunk_texts(live, session))


async def test_a_model_that_gave_up_is_a_notice(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    env = {**agent_env, "IAC_CODE_MAX_RETRIES": "0"}
    model_server.enqueue(error_status(529, "Overloaded", error_type="overloaded_error"))
    async with spawn_agent(env, tmp_path / "stderr", WireChecker(aliases=METHOD_ALIASES)) as agent:
        await agent.initialize(**SHOWS_BOTH)
        session = await agent.new_session(workspace)
        answer, live, _ = await agent.run_prompt(session, "hello")
    assert answer["result"]["stopReason"] == "end_turn"
    notice = the_notice(live, session, "error", "The model request failed")
    assert "Overloaded" in notice["description"]


async def test_an_mcp_server_that_cannot_start_is_a_notice(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(reply("went on without it"))
    await agent.initialize(**SHOWS_BOTH)
    broken = {
        "name": "broken-db",
        "command": str(tmp_path / "no-such-server"),
        "args": [],
        "env": [],
    }
    result = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": [broken]})
    session = result["sessionId"]
    _, live, _ = await agent.run_prompt(session, "hello")
    notice = the_notice(live, session, "warning", "An MCP server is not available")
    assert "broken-db" in notice["description"]


async def test_without_the_capabilities_the_text_stays(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    session = await three_turns(agent, model_server, workspace)
    model_server.enqueue(reply("summary"))
    _, live, _ = await agent.run_prompt(session, "/compact")
    assert "compaction_update" not in kinds(live, session)
    assert any("Context compacted" in text for text in chunk_texts(live, session))
    broken = {"name": "broken-db", "command": sys.executable + "-missing", "args": [], "env": []}
    other = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": [broken]})
    model_server.enqueue(reply("ok"))
    _, live, _ = await agent.run_prompt(other["sessionId"], "hello")
    assert "notice" not in kinds(live, other["sessionId"])
    assert any(
        "⚠" in text and "broken-db" in text for text in chunk_texts(live, other["sessionId"])
    )


async def test_without_the_capabilities_a_failed_compaction_is_a_warning_like_the_others(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """The same ⚠ chunk as every other warning, with the failure in ``_meta.iaccode.error``."""
    session = await three_turns(agent, model_server, workspace)
    model_server.enqueue(error_status(400, "prompt is too long"))
    _, live, _ = await agent.run_prompt(session, "/compact")
    [chunk] = [
        u for u in updates(live, session, "agent_message_chunk") if "⚠" in u["content"]["text"]
    ]
    failure = chunk["_meta"]["iaccode"]["error"]
    assert failure.startswith("Could not compact the conversation: ")
    assert "prompt is too long" in failure
    assert chunk["content"]["text"] == f"\n\n⚠ {failure}\n"
