"""The connection's life: initialize (version negotiation, what the agent says about itself,
requests before it), a clean stdout, and a prompt exit at the end of stdin."""

from __future__ import annotations

from pathlib import Path

import trio

from acp_conformance.driver import AgentConnection
from acp_conformance.harness import Checks, Harness
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import Model, error_code, start, stop_reason
from acp_conformance.script import hang, reply

EXIT_DEADLINE = 5.0


@requirement(
    "INIT-VERSION", "MUST", "initialize with protocolVersion 1 is answered with protocolVersion 1"
)
async def test_initialize_echoes_version_1(agent: AgentConnection) -> None:
    result = await agent.initialize()
    assert result.get("protocolVersion") == 1, f"protocolVersion {result.get('protocolVersion')!r}"


@requirement(
    "INIT-NEGOTIATE",
    "MUST",
    "an unsupported protocolVersion is answered with the latest version the agent "
    "supports (not an error, not the client's)",
)
async def test_unsupported_version_gets_the_agents_latest(agent: AgentConnection) -> None:
    answer = await agent.request("initialize", {"protocolVersion": 65000, "clientCapabilities": {}})
    assert "result" in answer, f"initialize answered an error: {answer.get('error')}"
    version = answer["result"].get("protocolVersion")
    assert isinstance(version, int) and 1 <= version < 65000, f"protocolVersion {version!r}"


@requirement(
    "INIT-MINIMAL",
    "MUST",
    "initialize with only protocolVersion (capabilities and clientInfo omitted) works",
)
async def test_minimal_initialize(agent: AgentConnection) -> None:
    answer = await agent.request("initialize", {"protocolVersion": 1})
    assert "result" in answer, f"initialize answered an error: {answer.get('error')}"
    assert answer["result"].get("protocolVersion") == 1


@requirement("INIT-AGENT-INFO", "SHOULD", "initialize reports agentInfo with a name and a version")
async def test_agent_info(agent: AgentConnection) -> None:
    result = await agent.initialize()
    info = result.get("agentInfo")
    assert isinstance(info, dict), "no agentInfo in the initialize answer"
    assert info.get("name") and info.get("version"), f"agentInfo {info!r}"


@requirement(
    "INIT-FIRST",
    "SHOULD",
    "a session request before initialize gets an error answer (-32600 or similar)",
)
async def test_session_before_initialize(agent: AgentConnection, workspace: Path) -> None:
    answer = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert "error" in answer, "session/new before initialize was accepted"
    result = await agent.initialize()  # and the connection still starts normally
    assert result.get("protocolVersion") == 1


@requirement(
    "AUTH-UNKNOWN-METHOD",
    "SHOULD",
    "authenticate with a methodId the agent did not offer is answered with an error",
)
async def test_authenticate_unknown_method(agent: AgentConnection, check: Checks) -> None:
    await agent.initialize()
    answer = await agent.request("authenticate", {"methodId": "conformance-no-such-method"})
    assert error_code(answer) is not None, f"authenticate answered {answer.get('result')!r}"
    check.should(
        "AUTH-UNKNOWN-METHOD-CODE",
        "an unknown auth methodId is -32602",
        error_code(answer) == -32602,
        f"error code {error_code(answer)}",
    )


@requirement(
    "AUTH-REQUIRED-OFFERS-METHOD",
    "SHOULD",
    "an agent that answers -32000 (authentication required) offered at least one "
    "authMethod in initialize, so the client can act on it",
)
async def test_auth_required_offers_a_method(harness: Harness, model: Model) -> None:
    async with harness.spawn(without=harness.credential_variables) as agent:
        result = await agent.initialize()
        answer = await agent.request(
            "session/new", {"cwd": str(harness.workspace), "mcpServers": []}
        )
        if "result" in answer:
            answer, _ = await agent.prompt(answer["result"]["sessionId"], "Hello")
        if error_code(answer) != -32000:
            not_applicable("the agent did not answer -32000 without credentials")
        methods = result.get("authMethods") or []
        assert methods, "-32000 (authentication required), but initialize offered no authMethods"


# -- the end of the connection ------------------------------------------------------------


@requirement("LIFE-EOF-IDLE", "MUST", "an idle agent exits within 5 s of the end of its stdin")
async def test_exit_at_end_of_input(agent: AgentConnection, workspace: Path, check: Checks) -> None:
    await start(agent, workspace)
    await agent.close_stdin()
    await agent.read_until_eof(timeout=EXIT_DEADLINE)
    code = await agent.wait_exit(timeout=EXIT_DEADLINE)
    check.should(
        "LIFE-EOF-EXIT-STATUS",
        "the end of stdin is a clean exit (status 0)",
        code == 0,
        f"exit status {code}",
    )


@requirement(
    "LIFE-EOF-PARTIAL-LINE",
    "MUST",
    "an agent whose stdin ends in the middle of a line exits within 5 s",
)
async def test_exit_at_end_of_input_mid_line(agent: AgentConnection, workspace: Path) -> None:
    await start(agent, workspace)
    await agent.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": "session/ne')
    await agent.close_stdin()
    await agent.read_until_eof(timeout=EXIT_DEADLINE)
    await agent.wait_exit(timeout=EXIT_DEADLINE)


@requirement(
    "LIFE-EOF-BUSY",
    "MUST",
    "an agent in the middle of a turn exits within 5 s of the end of its stdin",
)
async def test_exit_at_end_of_input_mid_turn(
    agent: AgentConnection, workspace: Path, model: Model, check: Checks
) -> None:
    model.plan(hang())
    session = await start(agent, workspace)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "Think hard"}]}
    )
    await model.wait_for_request(timeout=5)
    closed_at = trio.current_time()
    await agent.close_stdin()
    rest = await agent.read_until_eof(timeout=EXIT_DEADLINE)
    await agent.wait_exit(timeout=EXIT_DEADLINE)
    assert trio.current_time() - closed_at < EXIT_DEADLINE
    if model.used:
        answered = [m for m in rest if m.get("id") == request_id and "method" not in m]
        check.should(
            "LIFE-EOF-ANSWERS-PENDING",
            "a turn cut short by the end of stdin is "
            "answered (stopReason cancelled) before the exit",
            bool(answered) and answered[0].get("result", {}).get("stopReason") == "cancelled",
            f"answer {answered[0] if answered else None}",
        )


@requirement(
    "LIFE-STDOUT",
    "MUST",
    "with verbose logging, a full turn (thinking, text, tool) leaves stdout all "
    "newline-terminated JSON-RPC objects, one per line",
)
async def test_stdout_hygiene(harness: Harness, model: Model) -> None:
    async with harness.spawn(harness.debug_env) as agent:
        session = await start(agent, harness.workspace)
        exchanges = [reply(["Some ", "text."], thinking=["Thinking ", "aloud."])]
        if (profile := harness.maybe_tools(agent)) is not None:
            notes = harness.workspace / "notes.txt"
            notes.write_text("hello\n")
            exchanges = [profile.call("toolu_conformance_read", profile.read(notes)), *exchanges]
        model.plan(*exchanges)
        stop_reason((await agent.prompt(session, "Read notes.txt"))[0])
        await agent.late_updates(session)  # and whatever the agent writes just after
        assert not agent.stdout_violations, agent.stdout_violations[0]
        assert agent.received, "nothing on stdout"
