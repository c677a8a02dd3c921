"""session/cancel: a clean `cancelled`, nothing after the answer, races, idle cancels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from acp_conformance.driver import AgentConnection, deadline, text_of, updates
from acp_conformance.harness import Harness
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import Model, error_code, slow_text, start, stop_reason
from acp_conformance.script import hang, reply

CANCEL_DEADLINE = 5.0
"""Seconds a cancelled turn may take to answer."""


async def streaming_turn(agent: AgentConnection, session: str, model: Model) -> Any:
    """Start a prompt whose model answer streams for seconds; wait for its first chunk
    (n/a when the agent does not stream that answer)."""
    request_id = await agent.send_request(
        "session/prompt",
        {"sessionId": session, "prompt": [{"type": "text", "text": "Tell a long story"}]},
    )
    with deadline(agent.timeout, "no agent_message_chunk"):
        while True:
            message = await agent.receive()
            if message.get("id") == request_id and "method" not in message:
                not_applicable(
                    "the turn ended before any agent_message_chunk (the agent does "
                    "not stream the Messages API answer)"
                )
            if updates([message], session, "agent_message_chunk"):
                break
    if not model.used:
        await agent.response(request_id)
        not_applicable("the agent does not use the Messages API, so no turn can be held open")
    return request_id


async def cancelled_answer(
    agent: AgentConnection, session: str, request_id: Any
) -> list[dict[str, Any]]:
    """Cancel; the prompt must answer `cancelled` promptly. Returns what came before."""
    await agent.notify("session/cancel", {"sessionId": session})
    answer, before = await agent.response(request_id, timeout=CANCEL_DEADLINE)
    assert stop_reason(answer) == "cancelled", f"stopReason {answer['result']['stopReason']!r}"
    return before


@requirement(
    "CANCEL-STREAMING",
    "MUST",
    "session/cancel while the answer streams: the prompt answers stopReason "
    "cancelled within 5 s, and the session takes the next prompt",
)
async def test_cancel_while_streaming(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(slow_text(words=200), reply("After the cancel."))
    session = await start(agent, workspace)
    await cancelled_answer(agent, session, await streaming_turn(agent, session, model))
    answer, before = await agent.prompt(session, "Again")
    assert stop_reason(answer) == "end_turn"
    text = text_of(before, session, "agent_message_chunk")
    assert "word" not in text, f"the cancelled turn leaked into the next: {text[:100]!r}"


@requirement(
    "CANCEL-NO-LATE-UPDATES",
    "MUST",
    "after a cancelled prompt's answer, no session/update for the session arrives",
)
async def test_nothing_after_the_cancelled_answer(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(slow_text(words=200, delay=0.02))
    session = await start(agent, workspace)
    await cancelled_answer(agent, session, await streaming_turn(agent, session, model))
    late = await agent.late_updates(session, settle=0.5)
    assert not late, f"updates after the answer: {[u.get('sessionUpdate') for u in late]}"


@requirement(
    "CANCEL-WAITING",
    "MUST",
    "session/cancel while the model has not answered yet: the prompt answers "
    "stopReason cancelled within 5 s",
)
async def test_cancel_while_waiting_for_the_model(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(hang())
    session = await start(agent, workspace)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "Think hard"}]}
    )
    if not await model.wait_for_request():
        not_applicable("the agent does not use the Messages API, so no turn can be held open")
    await cancelled_answer(agent, session, request_id)
    assert not await agent.late_updates(session)


@requirement(
    "CANCEL-RACE",
    "MUST",
    "a cancel sent right behind its prompt never gets an error or a late update; "
    "the prompt answers (cancelled, or done if it finished first)",
)
async def test_cancel_right_behind_the_prompt(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(*[slow_text(words=30, delay=0.01)] * 3)
    session = await start(agent, workspace)
    for delay in (0.0, 0.05, 0.2):
        request_id = await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "Go"}]}
        )
        await trio.sleep(delay)
        await agent.notify("session/cancel", {"sessionId": session})
        answer, _ = await agent.response(request_id)
        stop_reason(answer)
        late = await agent.late_updates(session)
        assert not late, f"updates after the answer: {[u.get('sessionUpdate') for u in late]}"
    stop_reason((await agent.prompt(session, "And now?"))[0])


@requirement(
    "CANCEL-IDLE",
    "MUST",
    "session/cancel with no turn running (or for an unknown session) gets no "
    "answer and changes nothing",
)
async def test_idle_cancel(agent: AgentConnection, workspace: Path) -> None:
    session = await start(agent, workspace)
    await agent.notify("session/cancel", {"sessionId": session})
    await agent.notify("session/cancel", {"sessionId": "sess_conformance_unknown"})
    answer, before = await agent.prompt(session, "Hello")
    answered = [m for m in before if "method" not in m]
    assert not answered, f"a notification got an answer: {answered[0]}"
    assert stop_reason(answer) == "end_turn"


@requirement(
    "CANCEL-REQUEST",
    "SHOULD",
    "$/cancel_request for an in-flight prompt ends it: -32800 or stopReason cancelled",
)
async def test_cancel_request(agent: AgentConnection, workspace: Path, model: Model) -> None:
    model.plan(hang())
    session = await start(agent, workspace)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "Think hard"}]}
    )
    if not await model.wait_for_request():
        not_applicable("the agent does not use the Messages API, so no turn can be held open")
    await agent.notify("$/cancel_request", {"requestId": request_id})
    answer, _ = await agent.response(request_id, timeout=CANCEL_DEADLINE)
    if error_code(answer) != -32800:
        assert stop_reason(answer) == "cancelled", answer


@requirement(
    "CANCEL-TOOL",
    "MUST",
    "session/cancel while a tool (a 30 s shell command) runs: the prompt answers "
    "stopReason cancelled within 5 s",
)
async def test_cancel_while_a_tool_runs(
    agent: AgentConnection, harness: Harness, model: Model
) -> None:
    session = await start(agent, harness.workspace)
    profile = harness.tools(agent)
    marker = harness.workspace / "started.txt"
    model.plan(
        profile.call("toolu_conformance_sleep", profile.shell(f"echo started > {marker}; sleep 30"))
    )
    request_id = await agent.send_request(
        "session/prompt",
        {"sessionId": session, "prompt": [{"type": "text", "text": "Run the slow command"}]},
    )
    with deadline(agent.timeout, "the slow command did not start"):
        while not marker.exists():  # written by the agent's child: polling is the way
            with trio.move_on_after(0.05):
                message = await agent.receive()
                if message.get("id") == request_id and "method" not in message:
                    raise AssertionError(f"the prompt ended before the command ran: {message}")
    await cancelled_answer(agent, session, request_id)
    assert not await agent.late_updates(session)
