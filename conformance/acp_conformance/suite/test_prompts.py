"""Prompt turns: the answer and its updates, every content block kind, a 10 MiB resource."""

from __future__ import annotations

import base64
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from acp_conformance.driver import AgentConnection, text_of
from acp_conformance.harness import Checks
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import (
    Model,
    capability_or_na,
    error_code,
    start,
    stop_reason,
    text_block,
)
from acp_conformance.script import reply

MARK = "kestrel-lantern-5519"
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAA"
    "AABJRU5ErkJggg=="
)
WAV_EMPTY = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
    b"D\xac\x00\x00\x88X\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()


@requirement(
    "PROMPT-TURN",
    "MUST",
    "a text prompt is answered with a valid stopReason; every update before it names the session",
)
async def test_text_prompt_turn(agent: AgentConnection, workspace: Path) -> None:
    session = await start(agent, workspace)
    answer, before = await agent.prompt(session, "Hello")
    stop_reason(answer)
    others = [
        m["params"].get("sessionId")
        for m in before
        if m.get("method") == "session/update" and m["params"].get("sessionId") != session
    ]
    assert not others, f"updates for other sessions during the turn: {others}"


@requirement(
    "PROMPT-STREAMS-ANSWER",
    "MUST",
    "the model's answer reaches the client as agent_message_chunk text, before the prompt's answer",
)
async def test_model_answer_is_streamed(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(reply(["The answer ", "is ", MARK, "."]))
    session = await start(agent, workspace)
    answer, before = await agent.prompt(session, "Say the mark")
    assert stop_reason(answer) == "end_turn"
    if not model.used:
        not_applicable("the agent does not use the Messages API")
    streamed = text_of(before, session, "agent_message_chunk")
    assert MARK in streamed, f"agent_message_chunk text {streamed[:200]!r} lacks the answer"


@requirement(
    "PROMPT-NO-LATE-UPDATES",
    "MUST",
    "no session/update for the session arrives after the prompt's answer",
)
async def test_no_updates_after_the_answer(
    agent: AgentConnection, workspace: Path, model: Model
) -> None:
    model.plan(reply([f"chunk{i} " for i in range(20)], thinking=["Hm, ", "ok."]))
    session = await start(agent, workspace)
    for text in ("one", "two"):
        answer, _ = await agent.prompt(session, text)
        stop_reason(answer)
        late = await agent.late_updates(session)
        assert not late, f"updates after the answer: {[u.get('sessionUpdate') for u in late]}"


def _block(kind: str) -> dict[str, Any]:
    if kind == "text":
        return text_block(f"The mark is {MARK}.")
    if kind == "resource_link":
        return {
            "type": "resource_link",
            "uri": f"file:///tmp/{MARK}.txt",
            "name": f"{MARK}.txt",
            "mimeType": "text/plain",
        }
    if kind == "resource":
        return {
            "type": "resource",
            "resource": {
                "uri": f"file:///tmp/{MARK}.tf",
                "mimeType": "text/plain",
                "text": f'variable "{MARK}" {{}}\n',
            },
        }
    if kind == "resource_blob":
        return {
            "type": "resource",
            "resource": {
                "uri": f"file:///tmp/{MARK}.bin",
                "mimeType": "application/octet-stream",
                "blob": base64.b64encode(MARK.encode()).decode(),
            },
        }
    if kind == "image":
        return {"type": "image", "mimeType": "image/png", "data": PNG_1X1}
    return {"type": "audio", "mimeType": "audio/wav", "data": WAV_EMPTY}


BLOCKS = [
    pytest.param(
        "text",
        None,
        marks=pytest.mark.requirement(
            "PROMPT-BLOCK-TEXT", "MUST", "a text block is accepted and reaches the model"
        ),
    ),
    pytest.param(
        "resource_link",
        None,
        marks=pytest.mark.requirement(
            "PROMPT-BLOCK-RESOURCE-LINK",
            "MUST",
            "a resource_link block is accepted and reaches the model",
        ),
    ),
    pytest.param(
        "resource",
        "promptCapabilities.embeddedContext",
        marks=pytest.mark.requirement(
            "PROMPT-BLOCK-RESOURCE",
            "CAPABILITY",
            "with embeddedContext: an embedded text resource is accepted and reaches the model",
        ),
    ),
    pytest.param(
        "resource_blob",
        "promptCapabilities.embeddedContext",
        marks=pytest.mark.requirement(
            "PROMPT-BLOCK-RESOURCE-BLOB",
            "CAPABILITY",
            "with embeddedContext: an embedded blob resource is accepted",
        ),
    ),
    pytest.param(
        "image",
        "promptCapabilities.image",
        marks=pytest.mark.requirement(
            "PROMPT-BLOCK-IMAGE", "CAPABILITY", "with image: an image block is accepted"
        ),
    ),
    pytest.param(
        "audio",
        "promptCapabilities.audio",
        marks=pytest.mark.requirement(
            "PROMPT-BLOCK-AUDIO", "CAPABILITY", "with audio: an audio block is accepted"
        ),
    ),
]


@pytest.mark.parametrize(("kind", "capability"), BLOCKS)
async def test_content_block(
    agent: AgentConnection, workspace: Path, model: Model, kind: str, capability: str | None
) -> None:
    session = await start(agent, workspace)
    if capability is not None:
        capability_or_na(agent, capability)
    answer, _ = await agent.prompt(session, [text_block("Look at this:"), _block(kind)])
    stop_reason(answer)
    if model.used and kind in ("text", "resource_link", "resource"):
        assert MARK in model.asked_text(), f"the {kind} block's content never reached the model"


UNADVERTISED = {"image": "image", "audio": "audio", "resource": "embeddedContext"}


@requirement(
    "PROMPT-UNADVERTISED-BLOCK",
    "SHOULD",
    "a content block kind the agent did not advertise is answered (result or "
    "-32602), and the agent keeps serving",
)
async def test_unadvertised_block(agent: AgentConnection, workspace: Path) -> None:
    session = await start(agent, workspace)
    unadvertised = [
        kind
        for kind, flag in UNADVERTISED.items()
        if not agent.capability(f"promptCapabilities.{flag}")
    ]
    if not unadvertised:
        not_applicable("the agent advertises every content block kind")
    kind = unadvertised[0]
    answer, _ = await agent.prompt(session, [text_block("Look:"), _block(kind)])
    assert "result" in answer or error_code(answer) == -32602, f"{kind}: {answer}"
    stop_reason((await agent.prompt(session, "still there?"))[0])


@requirement(
    "PROMPT-LARGE-RESOURCE",
    "CAPABILITY",
    "with embeddedContext: a prompt with a 10 MiB embedded resource (one 10 MiB "
    "line) is answered, and the agent keeps serving",
)
async def test_ten_mib_resource(agent: AgentConnection, workspace: Path, check: Checks) -> None:
    session = await start(agent, workspace)
    capability_or_na(agent, "promptCapabilities.embeddedContext")
    line = ("x" * 1023 + "\n") * (10 * 1024)
    blocks = [
        text_block("Summarise the attached file."),
        {
            "type": "resource",
            "resource": {"uri": "file:///tmp/big.txt", "mimeType": "text/plain", "text": line},
        },
    ]
    params = {"sessionId": session, "prompt": blocks}
    async with trio.open_nursery() as nursery:  # send and read at once: no pipe deadlock
        nursery.start_soon(
            partial(agent.send_request, "session/prompt", params, request_id="big-prompt")
        )
        answer, _ = await agent.response("big-prompt", timeout=max(agent.timeout, 60))
    assert "result" in answer or "error" in answer
    check.should(
        "PROMPT-LARGE-RESOURCE-RESULT",
        "a 10 MiB resource gets a result, not an error",
        "result" in answer,
        f"error {answer.get('error')}"[:150],
    )
    stop_reason((await agent.prompt(session, "still there?"))[0])


@requirement(
    "PROMPT-META", "MUST", "_meta on the prompt request and on its content blocks is accepted"
)
async def test_meta_on_prompt(agent: AgentConnection, workspace: Path) -> None:
    session = await start(agent, workspace)
    meta = {"conformance.example/trace": {"id": "abc", "n": 1}}
    answer, _ = await agent.prompt(session, [text_block("hello", _meta=meta)], _meta=meta)
    stop_reason(answer)
