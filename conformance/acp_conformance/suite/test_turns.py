"""Turns under pressure: concurrency, overlapping prompts, odd characters, model failures,
the model's stop reasons, an empty prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from acp_conformance.driver import AgentConnection, deadline, text_of
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import Model, error_code, slow_text, start, stop_reason
from acp_conformance.script import hang, reply, stream_error

TRICKY = (
    'line\u2028sep\u2029para\u0085nel \ufeffbom 😀 中文 "quoted" back\\slash '
    "new\nline crlf\r\n tab\t end"
)


@requirement(
    "TURN-CONCURRENT-SESSIONS",
    "MUST",
    "prompts in two sessions at once are both answered, each update naming its own session",
)
async def test_two_sessions_at_once(agent: AgentConnection, workspace: Path, model: Model) -> None:
    model.plan(slow_text(words=20, delay=0.02), slow_text(words=20, delay=0.02))
    await agent.initialize()
    sessions = [await agent.new_session(workspace) for _ in range(2)]
    ids = {
        await agent.send_request(
            "session/prompt", {"sessionId": s, "prompt": [{"type": "text", "text": "Go"}]}
        ): s
        for s in sessions
    }
    answers: dict[Any, dict[str, Any]] = {}
    seen: list[dict[str, Any]] = []
    with deadline(agent.timeout * 2, "not both prompts were answered"):
        while len(answers) < 2:
            message = await agent.receive()
            if message.get("id") in ids and "method" not in message:
                answers[message["id"]] = message
            else:
                seen.append(message)
    for request_id in ids:
        assert stop_reason(answers[request_id]) == "end_turn", answers[request_id]
    strangers = {
        m["params"].get("sessionId") for m in seen if m.get("method") == "session/update"
    } - set(sessions)
    assert not strangers, f"updates for unknown sessions {strangers}"


@requirement(
    "TURN-SERVES-DURING-TURN",
    "MUST",
    "while a turn waits on the model, other requests are answered (an extension "
    "request within 5 s, a session/new)",
)
async def test_requests_during_a_turn(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(hang())
    session = await start(agent, workspace)
    prompt_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "Think"}]}
    )
    if not await model.wait_for_request():
        not_applicable("the agent does not use the Messages API, so no turn can be held open")
    with deadline(5, "a request was not answered during a turn"):
        await agent.request("_conformance/ping", {})
    other = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert other.get("sessionId")
    await agent.notify("session/cancel", {"sessionId": session})
    stop_reason((await agent.response(prompt_id))[0])


@requirement(
    "TURN-OVERLAP",
    "SHOULD",
    "a second prompt while the session's turn runs is queued or refused with an "
    "error; the first turn still ends with a stopReason",
)
async def test_overlapping_prompts(agent: AgentConnection, workspace: Path, model: Model) -> None:
    model.plan(slow_text(words=20, delay=0.05))
    session = await start(agent, workspace)
    first = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "First"}]}
    )
    await trio.sleep(0.2)
    second = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "Second"}]}
    )
    answers: dict[Any, dict[str, Any]] = {}
    with deadline(agent.timeout * 2, "not both prompts were answered"):
        while len(answers) < 2:
            message = await agent.receive()
            if message.get("id") in (first, second) and "method" not in message:
                answers[message["id"]] = message
    stop_reason(answers[first])
    assert "result" in answers[second] or error_code(answers[second]) is not None


@requirement(
    "TURN-UNICODE",
    "MUST",
    "text with U+2028/U+2029/U+0085, a BOM, emoji, quotes, backslashes and newlines "
    "reaches the model and comes back intact",
)
async def test_tricky_text_round_trips(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(reply(["Echo: ", TRICKY]))
    session = await start(agent, workspace)
    answer, before = await agent.prompt(session, f"Echo: {TRICKY}")
    stop_reason(answer)
    if not model.used:
        not_applicable("the agent does not use the Messages API")
    asked = json.dumps([r.body for r in model.server.requests], ensure_ascii=False)
    assert json.dumps(TRICKY, ensure_ascii=False)[1:-1] in asked, "the prompt text was altered"
    streamed = text_of(before, session, "agent_message_chunk")
    assert TRICKY in streamed, f"the answer was altered: {streamed[-120:]!r}"


@requirement(
    "TURN-MODEL-ERROR",
    "MUST",
    "when the model fails mid-answer, the prompt is still answered (a stopReason or "
    "an error) and the session takes the next prompt",
)
async def test_model_failure_mid_answer(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(stream_error("Partial answer", "api_error", "Internal server error"))
    session = await start(agent, workspace)
    answer, _ = await agent.prompt(session, "Go", timeout=max(agent.timeout, 60))
    if not model.used:
        not_applicable("the agent does not use the Messages API")
    assert "result" in answer or error_code(answer) is not None
    if "result" in answer:
        stop_reason(answer)
    stop_reason((await agent.prompt(session, "Again", timeout=max(agent.timeout, 60)))[0])


@requirement(
    "TURN-MODEL-GARBAGE",
    "MUST",
    "a malformed model stream (unknown events, a delta for a block never started) "
    "ends the turn with an answer, and the session takes the next prompt",
)
async def test_malformed_model_stream(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    start_event = reply("x")["events"][0]
    model.plan(
        {
            "events": [
                start_event,
                {"type": "conformance_unknown_event", "data": 1},
                {
                    "type": "content_block_delta",
                    "index": 7,
                    "delta": {"type": "text_delta", "text": "orphan"},
                },
                {"type": "content_block_start", "index": 0, "content_block": {"type": "mystery"}},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 1},
                },
                {"type": "message_stop"},
            ]
        }
    )
    session = await start(agent, workspace)
    answer, _ = await agent.prompt(session, "Go", timeout=max(agent.timeout, 60))
    if not model.used:
        not_applicable("the agent does not use the Messages API")
    assert "result" in answer or error_code(answer) is not None
    stop_reason((await agent.prompt(session, "Again", timeout=max(agent.timeout, 60)))[0])


@requirement("TURN-LARGE-ANSWER", "MUST", "a 4 MiB model answer reaches the client intact")
async def test_large_answer(agent: AgentConnection, workspace: Path, model: Model) -> None:
    big = "".join(f"{i:07d} " for i in range(4 * 1024 * 1024 // 8))
    model.plan(reply([big[: len(big) // 2], big[len(big) // 2 :]]))
    session = await start(agent, workspace)
    answer, before = await agent.prompt(session, "Say a lot")
    assert stop_reason(answer) == "end_turn"
    if not model.used:
        not_applicable("the agent does not use the Messages API")
    assert big in text_of(before, session, "agent_message_chunk"), "the answer was altered"


@pytest.mark.parametrize(
    ("model_stop", "acp_stop"),
    [
        pytest.param(
            "max_tokens",
            "max_tokens",
            marks=pytest.mark.requirement(
                "TURN-STOP-MAX-TOKENS",
                "SHOULD",
                "a model answer cut by its token limit ends the turn with stopReason max_tokens",
            ),
        ),
        pytest.param(
            "refusal",
            "refusal",
            marks=pytest.mark.requirement(
                "TURN-STOP-REFUSAL",
                "SHOULD",
                "a model refusal ends the turn with stopReason refusal",
            ),
        ),
    ],
)
async def test_model_stop_reasons(
    agent: AgentConnection, workspace: Path, model: Model, model_stop: str, acp_stop: str
) -> None:
    model.plan(reply("Cut sho", stop_reason=model_stop))
    session = await start(agent, workspace)
    answer, _ = await agent.prompt(session, "Go")
    if not model.used:
        not_applicable("the agent does not use the Messages API")
    if model.request_count() > 1 and "result" in answer:
        not_applicable(f"the agent went on past the model's {model_stop} (another request)")
    reason = stop_reason(answer)
    assert reason == acp_stop, f"stopReason {reason!r}, expected {acp_stop!r}"


@requirement(
    "TURN-EMPTY-PROMPT",
    "SHOULD",
    "an empty prompt array is answered (a stopReason or -32602) and the agent keeps serving",
)
async def test_empty_prompt(agent: AgentConnection, workspace: Path) -> None:
    session = await start(agent, workspace)
    answer, _ = await agent.prompt(session, [])
    assert "result" in answer or error_code(answer) == -32602, answer
    stop_reason((await agent.prompt(session, "Hello"))[0])
