"""session/new, unknown sessions, session/set_mode, session/set_config_option, session/close."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_conformance.driver import AgentConnection, deadline, updates
from acp_conformance.harness import Checks
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import (
    Model,
    assert_error,
    capability_or_na,
    error_code,
    start,
    stop_reason,
)
from acp_conformance.script import hang

UNKNOWN_SESSION = "sess_conformance_does_not_exist"


@requirement(
    "SESSION-NEW",
    "MUST",
    "session/new with an absolute cwd answers a fresh, distinct sessionId each time",
)
async def test_new_sessions_are_distinct(agent: AgentConnection, workspace: Path) -> None:
    await agent.initialize()
    first = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    second = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert isinstance(first.get("sessionId"), str) and first["sessionId"], first
    assert first["sessionId"] != second["sessionId"], "two sessions got the same id"


@requirement(
    "SESSION-NEW-RELATIVE-CWD", "SHOULD", "session/new with a relative cwd is refused with -32602"
)
async def test_relative_cwd_is_refused(agent: AgentConnection) -> None:
    await agent.initialize()
    answer = await agent.request("session/new", {"cwd": "relative/dir", "mcpServers": []})
    assert_error(answer, "session/new with a relative cwd", -32602)


@requirement(
    "SESSION-UNKNOWN", "MUST", "session/prompt for an unknown sessionId is answered with an error"
)
async def test_unknown_session_is_an_error(agent: AgentConnection, check: Checks) -> None:
    await agent.initialize()
    answer = await agent.request(
        "session/prompt",
        {"sessionId": UNKNOWN_SESSION, "prompt": [{"type": "text", "text": "hello"}]},
    )
    code = assert_error(answer, "session/prompt for an unknown session")
    check.should(
        "SESSION-UNKNOWN-CODE",
        "an unknown sessionId is -32602 (invalid params) or -32002 (resource not found)",
        code in (-32602, -32002),
        f"error code {code}",
    )


@requirement(
    "SESSION-SET-MODE",
    "CAPABILITY",
    "when session/new returns modes: session/set_mode to another available mode "
    "answers an object; an unknown modeId is an error",
)
async def test_set_mode(agent: AgentConnection, workspace: Path, check: Checks) -> None:
    await agent.initialize()
    created = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    modes = created.get("modes")
    if not modes:
        not_applicable("session/new returned no modes")
    ids = [m["id"] for m in modes["availableModes"]]
    assert modes["currentModeId"] in ids, f"currentModeId {modes['currentModeId']!r} not in {ids}"
    other = next((i for i in ids if i != modes["currentModeId"]), ids[0])
    session = created["sessionId"]
    set_id = await agent.send_request("session/set_mode", {"sessionId": session, "modeId": other})
    answer, before = await agent.response(set_id)
    assert isinstance(answer.get("result"), dict), f"session/set_mode answered {answer}"
    mode_options = [
        o["id"] for o in created.get("configOptions") or [] if o.get("category") == "mode"
    ]
    if mode_options:
        told = updates(before, session, "config_option_update")
        told += updates(await agent.late_updates(session), None, "config_option_update")
        values = [
            o.get("currentValue")
            for u in told
            for o in u.get("configOptions") or []
            if o.get("id") == mode_options[0]
        ]
        check.should(
            "SESSION-MODE-CONFIG-SYNC",
            "set_mode is reflected in the mode config option (config_option_update)",
            other in values,
            f"no config_option_update with {mode_options[0]}={other!r}",
        )
    answer = await agent.request(
        "session/set_mode", {"sessionId": session, "modeId": "conformance-no-such-mode"}
    )
    code = assert_error(answer, "session/set_mode to an unknown mode")
    check.should(
        "SESSION-SET-MODE-CODE", "an unknown modeId is -32602", code == -32602, f"error code {code}"
    )


def _values(option: dict[str, Any]) -> list[str]:
    """The values of a select option (options may be grouped)."""
    values = []
    for entry in option.get("options") or []:
        if "value" in entry:
            values.append(entry["value"])
        values.extend(o["value"] for o in entry.get("options") or [] if "value" in o)
    return values


@requirement(
    "SESSION-SET-CONFIG",
    "CAPABILITY",
    "when session/new returns configOptions: session/set_config_option answers the "
    "full set with the new value; an unknown value is an error",
)
async def test_set_config_option(agent: AgentConnection, workspace: Path, check: Checks) -> None:
    await agent.initialize()
    created = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    options = created.get("configOptions") or []
    selects = [o for o in options if o.get("type") == "select" and len(_values(o)) > 1]
    if not selects:
        not_applicable("session/new returned no select config option with two values")
    selects.sort(key=lambda o: o.get("category") == "model")  # prefer a cheap change
    option = selects[0]
    new_value = next(v for v in _values(option) if v != option["currentValue"])
    result = await agent.call(
        "session/set_config_option",
        {"sessionId": created["sessionId"], "configId": option["id"], "value": new_value},
    )
    returned = {o["id"]: o for o in result.get("configOptions") or []}
    missing = [o["id"] for o in options if o["id"] not in returned]
    assert not missing, f"the answer lacks config options {missing} (it must be the full set)"
    current = returned[option["id"]].get("currentValue")
    assert current == new_value, f"{option['id']} is {current!r} after setting {new_value!r}"
    answer = await agent.request(
        "session/set_config_option",
        {
            "sessionId": created["sessionId"],
            "configId": option["id"],
            "value": "conformance-no-such-value",
        },
    )
    code = assert_error(answer, "session/set_config_option to an unknown value")
    check.should(
        "SESSION-SET-CONFIG-CODE",
        "an unknown config value is -32602",
        code == -32602,
        f"error code {code}",
    )


@requirement(
    "SESSION-CLOSE",
    "CAPABILITY",
    "session/close answers an object; the closed session then refuses prompts",
)
async def test_close_idle_session(agent: AgentConnection, workspace: Path) -> None:
    session = await start(agent, workspace)
    capability_or_na(agent, "sessionCapabilities.close")
    result = await agent.call("session/close", {"sessionId": session})
    assert isinstance(result, dict), f"session/close answered {result!r}, not an object"
    answer = await agent.request(
        "session/prompt",
        {"sessionId": session, "prompt": [{"type": "text", "text": "still there?"}]},
    )
    assert_error(answer, "session/prompt after session/close")


@requirement(
    "SESSION-CLOSE-BUSY",
    "CAPABILITY",
    "session/close during a turn ends the turn with stopReason cancelled and answers the close",
)
async def test_close_cancels_a_running_turn(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(hang())
    session = await start(agent, workspace)
    capability_or_na(agent, "sessionCapabilities.close")
    prompt_id = await agent.send_request(
        "session/prompt",
        {"sessionId": session, "prompt": [{"type": "text", "text": "think for a long time"}]},
    )
    if not await model.wait_for_request():
        not_applicable("the agent does not use the Messages API, so no turn can be held open")
    close_id = await agent.send_request("session/close", {"sessionId": session})
    answers: dict[Any, dict[str, Any]] = {}
    with deadline(agent.timeout, "no answer to the prompt and the close"):
        while len(answers) < 2:
            message = await agent.receive()
            if message.get("id") in (prompt_id, close_id) and "method" not in message:
                answers[message["id"]] = message
    assert stop_reason(answers[prompt_id]) == "cancelled", answers[prompt_id]
    assert "result" in answers[close_id], f"session/close: {answers[close_id].get('error')}"
    assert error_code(answers[close_id]) is None
