"""MUST-tier checks every ACP agent passes: handshake, sessions, a prompt turn, errors, EOF."""

from __future__ import annotations

from pathlib import Path

from tests.support.agent_process import AgentProcess

STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}


async def test_initialize_negotiates_version_1(agent: AgentProcess) -> None:
    result = await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert result["protocolVersion"] == 1


async def test_session_new_and_a_prompt_turn(agent: AgentProcess, tmp_path: Path) -> None:
    await agent.initialize()
    session = await agent.new_session(tmp_path)
    response, updates = await agent.prompt(session, "Hello")
    assert response["result"]["stopReason"] in STOP_REASONS
    assert all(u["params"]["sessionId"] == session for u in updates
               if u.get("method") == "session/update")


async def test_unknown_method_is_32601(agent: AgentProcess) -> None:
    await agent.initialize()
    answer = await agent.request("conformance/no_such_method", {})
    assert answer["error"]["code"] == -32601


async def test_invalid_json_is_32700_with_null_id(agent: AgentProcess) -> None:
    await agent.send_raw(b"{this is not json\n")
    answer = await agent.receive()
    assert answer["error"]["code"] == -32700 and answer["id"] is None
    await agent.initialize()  # still serving


async def test_exits_promptly_at_end_of_input(agent: AgentProcess) -> None:
    await agent.initialize()
    await agent.close_stdin()
    await agent.read_until_eof(timeout=5)
    assert await agent.wait_exit(timeout=5) == 0
