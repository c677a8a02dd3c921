"""What ACP added in 2026 (stable v1 and the npm SDK 2.4.0 schema): terminal auth and logout,
additional workspace roots, message ids, and the client-gated notice and compaction updates.

Each applies only where the agent advertises it (CAPABILITY), except what the spec makes a
rule for every agent (MUST): no ``terminal`` auth method to a client that did not ask for
them, no ``notice`` or ``compaction_*`` update to a client that did not advertise it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_conformance.driver import AgentConnection, updates
from acp_conformance.harness import Checks
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import Model, assert_error, capability_or_na, start, stop_reason
from acp_conformance.script import error_status, reply

GATED = {
    "notice": "session.notices",
    "compaction_update": "session.compaction",
    "compaction_summary_chunk": "session.compaction",
}
"""Update kinds only a client that advertised the capability may get."""


def _terminal_methods(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m
        for m in result.get("authMethods") or []
        if isinstance(m, dict) and m.get("type") == "terminal"
    ]


@requirement(
    "AUTH-TERMINAL-GATED",
    "MUST",
    "an agent offers `terminal` auth methods only to a client that advertised "
    "clientCapabilities.auth.terminal",
)
async def test_no_terminal_method_unasked(agent: AgentConnection) -> None:
    result = await agent.initialize()
    offered = _terminal_methods(result)
    assert not offered, f"terminal auth methods to a client without auth.terminal: {offered}"


@requirement(
    "AUTH-TERMINAL-METHOD",
    "CAPABILITY",
    "to a client with auth.terminal, each `terminal` auth method the agent offers has "
    "an id, a name and `args` as a list of strings (appended to the agent's command)",
)
async def test_terminal_method_shape(agent: AgentConnection) -> None:
    result = await agent.initialize(auth={"terminal": True})
    offered = _terminal_methods(result)
    if not offered:
        not_applicable("the agent offers no terminal auth method")
    for method in offered:
        assert isinstance(method.get("id"), str) and method["id"], method
        assert isinstance(method.get("name"), str) and method["name"], method
        args = method.get("args", [])
        assert isinstance(args, list) and all(isinstance(a, str) for a in args), method


@requirement(
    "AUTH-LOGOUT",
    "CAPABILITY",
    "when agentCapabilities.auth.logout is advertised, `logout` is answered with a result object",
)
async def test_logout_answers(agent: AgentConnection) -> None:
    await agent.initialize()
    capability_or_na(agent, "auth.logout")
    answer = await agent.request("logout", {})
    assert isinstance(answer.get("result"), dict), f"logout answered {answer}"


@requirement(
    "SESSION-ADDITIONAL-DIRS",
    "CAPABILITY",
    "when sessionCapabilities.additionalDirectories is advertised, session/new takes "
    "additionalDirectories (absolute folders), and session/list (when advertised) "
    "reports them as the session's list",
)
async def test_additional_directories(
    agent: AgentConnection, workspace: Path, tmp_path: Path
) -> None:
    await agent.initialize()
    capability_or_na(agent, "sessionCapabilities.additionalDirectories")
    extra = tmp_path / "shared-root"
    extra.mkdir()
    created = await agent.call(
        "session/new",
        {"cwd": str(workspace), "mcpServers": [], "additionalDirectories": [str(extra)]},
    )
    session = created["sessionId"]
    if agent.capability("sessionCapabilities.list") is None:
        return
    listed = await agent.call("session/list", {})
    info = next((s for s in listed.get("sessions") or [] if s.get("sessionId") == session), None)
    assert info is not None, f"session/list does not list {session}"
    assert info.get("additionalDirectories") == [str(extra)], info


@requirement(
    "SESSION-ADDITIONAL-DIRS-RELATIVE",
    "CAPABILITY",
    "when sessionCapabilities.additionalDirectories is advertised, an entry that is "
    "not an absolute path is refused with an error (never dropped silently)",
)
async def test_relative_additional_directory(
    agent: AgentConnection, workspace: Path, check: Checks
) -> None:
    await agent.initialize()
    capability_or_na(agent, "sessionCapabilities.additionalDirectories")
    answer = await agent.request(
        "session/new",
        {"cwd": str(workspace), "mcpServers": [], "additionalDirectories": ["relative/dir"]},
    )
    code = assert_error(answer, "session/new with a relative additional directory")
    check.should(
        "SESSION-ADDITIONAL-DIRS-RELATIVE-CODE",
        "it is -32602 (invalid params)",
        code == -32602,
        f"error code {code}",
    )


def _chunk_ids(messages: list[dict[str, Any]], session: str) -> list[Any]:
    return [
        u.get("messageId")
        for u in updates(messages, session, "agent_message_chunk", "agent_thought_chunk")
    ]


@requirement(
    "MESSAGE-ID-ONE-PER-MESSAGE",
    "SHOULD",
    "the chunks of one streamed model answer (its thinking and its text) carry one "
    "messageId, and the next answer another",
)
async def test_message_ids(agent: AgentConnection, model: Model, workspace: Path) -> None:
    session = await start(agent, workspace)
    model.plan(reply(["Hello ", "there."], thinking=["Think", "ing."]), reply(["Bye", "."]))
    first, before = await agent.prompt(session, "Say hello")
    stop_reason(first)
    ids = _chunk_ids(before, session)
    if not any(ids):
        not_applicable("the agent sends no messageId")
    assert len(set(ids)) == 1 and None not in ids, f"one answer's chunks carry {ids}"
    second, after = await agent.prompt(session, "Say bye")
    stop_reason(second)
    later = set(_chunk_ids(after, session))
    assert later and not later & set(ids), f"the next answer's ids {later} repeat {ids}"


@requirement("MESSAGE-ID-LOAD", "SHOULD", "session/load replays the messageIds the chunks had live")
async def test_message_ids_after_load(
    agent: AgentConnection, model: Model, workspace: Path
) -> None:
    session = await start(agent, workspace)
    capability_or_na(agent, "loadSession")
    model.plan(reply(["One ", "answer."]))
    answer, live = await agent.prompt(session, "Answer once")
    stop_reason(answer)
    ids = [i for i in _chunk_ids(live, session) if i]
    if not ids:
        not_applicable("the agent sends no messageId")
    if agent.capability("sessionCapabilities.close") is not None:
        await agent.call("session/close", {"sessionId": session})
    load = await agent.send_request(
        "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    loaded, replayed = await agent.response(load)
    assert isinstance(loaded.get("result"), dict), f"session/load answered {loaded}"
    shown = [i for i in _chunk_ids(replayed, session) if i]
    assert set(shown) == set(ids), f"live ids {sorted(set(ids))}, replayed {sorted(set(shown))}"


@requirement(
    "UPDATES-CLIENT-GATED",
    "MUST",
    "a client that advertised neither session.notices nor session.compaction never "
    "gets `notice`, `compaction_update` or `compaction_summary_chunk` (here: a turn "
    "whose model requests all fail, where an agent would give notice)",
)
async def test_gated_updates_stay_away(
    agent: AgentConnection, model: Model, workspace: Path
) -> None:
    session = await start(agent, workspace)
    model.plan(*[error_status(500, "conformance: the model is down") for _ in range(8)])
    answer, before = await agent.prompt(session, "Hello", timeout=60)
    assert "result" in answer or "error" in answer, answer
    late = await agent.late_updates(session)
    sent = [
        u["sessionUpdate"]
        for u in updates([*before, *late], session)
        if u.get("sessionUpdate") in GATED
    ]
    assert not sent, f"sent {sent} to a client that advertised none of {set(GATED.values())}"
