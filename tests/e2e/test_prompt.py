"""A prompt turn end to end: a real ``iaccode acp`` talking to the fake Messages API."""

from __future__ import annotations

from pathlib import Path

import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import error_status, hang, reply, stream_error

from tests.support.agent_process import AgentConnection


def updates(messages: list[dict], kind: str) -> list[dict]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


def text_of(messages: list[dict], kind: str) -> str:
    return "".join(u["content"]["text"] for u in updates(messages, kind))


async def test_streamed_answer_with_thinking_and_usage(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(
            ["Hel", "lo ", "world"],
            thinking=["Let me ", "think."],
            input_tokens=12,
            output_tokens=7,
            cache_read_input_tokens=100,
            cache_creation_input_tokens=3,
        )
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    response, before = await agent.prompt(session, "Say hello")

    assert response["result"]["stopReason"] == "end_turn"
    assert response["result"]["usage"] == {
        "inputTokens": 115,
        "outputTokens": 7,
        "totalTokens": 122,
        "cachedReadTokens": 100,
        "cachedWriteTokens": 3,
    }
    # Each delta is its own update, thinking first, in the order the model produced them.
    kinds = [m["params"]["update"]["sessionUpdate"] for m in before]
    assert kinds == ["available_commands_update", "session_info_update"] + [
        "agent_thought_chunk"
    ] * 2 + ["agent_message_chunk"] * 3 + ["usage_update"]
    assert text_of(before, "agent_thought_chunk") == "Let me think."
    assert [u["content"]["text"] for u in updates(before, "agent_message_chunk")] == [
        "Hel",
        "lo ",
        "world",
    ]
    assert all(m["params"]["sessionId"] == session for m in before)
    assert updates(before, "usage_update")[0]["size"] == 200_000

    sent = model_server.requests[0].body
    assert sent["stream"] is True
    assert sent["messages"] == [  # the newest block is a prompt-cache breakpoint
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Say hello", "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]
    assert sent["model"] == "claude-sonnet-5-5"
    assert sent["thinking"] == {"type": "adaptive", "display": "summarized"}
    headers = model_server.requests[0].headers
    # The SDK sends the key as x-api-key or, in newer releases, as a bearer token.
    assert "test-key" in (headers.get("x-api-key"), headers.get("authorization", "")[7:])


async def test_deltas_stream_as_they_arrive(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    # 0.3 s between events: the first chunk must reach us long before the answer ends.
    model_server.enqueue(reply(["one", "two", "three"], delay=0.3))
    await agent.initialize()
    session = await agent.new_session(workspace)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "count"}]}
    )
    first = await agent.receive_update("agent_message_chunk")
    assert first["params"]["update"]["content"]["text"] == "one"
    response, _ = await agent.response(request_id)
    assert response["result"]["stopReason"] == "end_turn"


async def test_history_carries_into_the_next_turn(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply("First answer", thinking="hmm"), reply("Second answer"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    await agent.prompt(session, "one")
    await agent.prompt(session, "two")
    messages = model_server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assistant = messages[1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "hmm", "signature": "fake-signature"}
    assert assistant[1] == {"type": "text", "text": "First answer"}


async def test_stop_reasons(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply("cut", stop_reason="max_tokens"),
        reply("", stop_reason="refusal"),
        reply("done", stop_reason="stop_sequence"),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    stops = [(await agent.prompt(session, f"p{i}"))[0]["result"]["stopReason"] for i in range(3)]
    assert stops == ["max_tokens", "refusal", "end_turn"]


async def test_prompt_content_blocks_reach_the_model(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply("ok"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    response = await agent.request(
        "session/prompt",
        {
            "sessionId": session,
            "prompt": [
                {"type": "text", "text": "Look:"},
                {"type": "resource_link", "name": "main.tf", "uri": "file:///p/main.tf"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///p/vars.tf",
                        "text": "variable x {}",
                        "mimeType": "text/plain",
                    },
                },
                {"type": "image", "data": "", "mimeType": "image/png", "uri": "file:///p/shot.png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            ],
        },
    )
    assert response["result"]["stopReason"] == "end_turn"
    texts = [b["text"] for b in model_server.requests[0].body["messages"][0]["content"]]
    assert texts == [
        "Look:",
        "[resource: main.tf <file:///p/main.tf>]",
        '<resource uri="file:///p/vars.tf">\nvariable x {}\n</resource>',
        "[image: image/png <file:///p/shot.png>]",  # no data: only its uri
        "[audio: audio/wav]",
    ]


async def test_model_error_is_a_readable_message_and_the_session_lives_on(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        error_status(400, "prompt is too long"),
        stream_error("partial ", message="Overloaded"),
        reply("back again"),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)

    response, before = await agent.prompt(session, "one")
    assert response["result"]["stopReason"] == "end_turn"
    assert "400" in text_of(before, "agent_message_chunk")
    assert "prompt is too long" in text_of(before, "agent_message_chunk")

    response, before = await agent.prompt(session, "two")
    assert response["result"]["stopReason"] == "end_turn"
    shown = text_of(before, "agent_message_chunk")
    assert shown.startswith("partial ") and "Overloaded" in shown

    response, before = await agent.prompt(session, "three")
    assert text_of(before, "agent_message_chunk") == "back again"
    # The partial answer the user saw is part of the history the model gets next.
    messages = model_server.requests[2].body["messages"]
    assert messages[-2] == {"role": "assistant", "content": [{"type": "text", "text": "partial "}]}


async def test_retry_after_429_then_success(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(error_status(429, retry_after=0.5), error_status(529), reply("finally"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    started = trio.current_time()
    response, before = await agent.prompt(session, "hi")
    assert response["result"]["stopReason"] == "end_turn"
    assert text_of(before, "agent_message_chunk") == "finally"
    assert len(model_server.requests) == 3
    assert trio.current_time() - started >= 0.5  # the retry-after was honoured


async def test_second_prompt_while_busy_is_queued_and_sessions_run_concurrently(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(hang(), reply("other session"))
    await agent.initialize()
    busy = await agent.new_session(workspace)
    other = await agent.new_session(workspace)
    first = await agent.send_request(
        "session/prompt", {"sessionId": busy, "prompt": [{"type": "text", "text": "slow"}]}
    )
    await trio.to_thread.run_sync(model_server.wait_for_requests, 1, 30)

    # Queued behind the running turn (see test_real_clients.py for how it runs after it).
    queued = await agent.send_request(
        "session/prompt", {"sessionId": busy, "prompt": [{"type": "text", "text": "again"}]}
    )

    response, before = await agent.prompt(other, "fast")
    assert text_of(before, "agent_message_chunk") == "other session"

    await agent.notify("session/cancel", {"sessionId": busy})
    response, _ = await agent.response(first)
    assert response["result"]["stopReason"] == "cancelled"
    response, _ = await agent.response(queued)
    assert response["result"]["stopReason"] == "cancelled"


async def test_an_editor_that_pauses_reading_gets_every_delta_in_order(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """More output than the pipe and the agent's outbox hold: the turn waits for the editor
    (back-pressure) instead of dropping or reordering deltas, and the answer comes last."""
    deltas = [f"w{i:05d}-" + "x" * 200 for i in range(4000)]  # ~1 MB of updates
    model_server.enqueue(reply(deltas))
    await agent.initialize()
    session = await agent.new_session(workspace)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
    )
    await trio.sleep(1.5)  # the editor is busy: the agent fills the pipe, then waits
    response, before = await agent.response(request_id, timeout=60)
    assert response["result"]["stopReason"] == "end_turn"
    chunks = [u["content"]["text"] for u in updates(before, "agent_message_chunk")]
    assert chunks == deltas
    model_server.enqueue(reply("ok"))
    response, _ = await agent.prompt(session, "again")  # the session goes on
    assert response["result"]["stopReason"] == "end_turn"
