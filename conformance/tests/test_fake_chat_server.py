"""The fake Chat Completions API, driven by the real openai SDK (its own typed stream helper,
not an agent's provider), so the fake is checked against what the SDK expects of the real API.

The SDK's synchronous client: its async typed stream leaves async generators for the garbage
collector under trio (a ResourceWarning)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from acp_conformance.fakes.chat import CHAT_PATH, FakeChatServer, refusal
from acp_conformance.script import ToolUse, error_status, reply

MESSAGES: list[Any] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as fake:
        yield fake


def client_for(server: FakeChatServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", base_url=server.base_url, max_retries=0, timeout=10)


def test_the_sdk_assembles_text_tool_calls_and_usage(server: FakeChatServer) -> None:
    server.enqueue(
        reply(
            ["Hel", "lo"],
            tool_uses=[
                ToolUse("c1", "grep", {"pattern": "x"}),
                ToolUse("c2", "bash", {"command": "ls"}),
            ],
            input_tokens=7,
            output_tokens=3,
            cache_read_input_tokens=2,
        )
    )
    with (
        client_for(server) as client,
        client.chat.completions.stream(
            model="m", messages=MESSAGES, stream_options={"include_usage": True}
        ) as stream,
    ):
        for _ in stream:
            pass
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.message.content == "Hello"
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("c1", "grep", '{"pattern": "x"}'),
        ("c2", "bash", '{"command": "ls"}'),
    ]
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (9, 3)
    assert final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 2


def test_usage_only_when_asked_and_non_streamed_answers(server: FakeChatServer) -> None:
    server.enqueue(reply("one"), reply("two", stop_reason="max_tokens"))
    with client_for(server) as client:
        chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        whole = client.chat.completions.create(model="m", messages=MESSAGES)
    assert all(chunk.usage is None for chunk in chunks)  # no stream_options.include_usage
    assert whole.choices[0].message.content == "two"
    assert whole.choices[0].finish_reason == "length"


def test_errors_have_the_apis_shape(server: FakeChatServer) -> None:
    server.enqueue(error_status(429, "Slow down"))
    with client_for(server) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="m", messages=MESSAGES)
        assert "Slow down" in caught.value.message
        # A request the real API refuses: a tool message answering no call.
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="m",
                messages=[*MESSAGES, {"role": "tool", "tool_call_id": "nope", "content": "x"}],
            )
    assert "must be a response to a preceeding message" in refused.value.message
    assert server.requests[-1].path == CHAT_PATH
    assert len(server.problems) == 1  # the refusal is recorded for the test to see


def test_the_fake_refuses_what_the_real_api_refuses() -> None:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    unanswered = [{"role": "user", "content": "x"}, call, {"role": "user", "content": "y"}]
    assert "did not have response messages: c1" in str(
        refusal({"model": "m", "messages": unanswered})
    )
    orphan = [
        {"role": "user", "content": "x"},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    assert "must be a response to a preceeding message" in str(
        refusal({"model": "m", "messages": orphan})
    )
    anthropic_block = [{"role": "user", "content": [{"type": "tool_result"}]}]
    assert "Invalid value" in str(refusal({"model": "m", "messages": anthropic_block}))
    assert "thinking" in str(refusal({"model": "m", "thinking": {}, "messages": unanswered[:1]}))
    anthropic_tool = {"name": "bash", "input_schema": {"type": "object"}}
    assert "tools[0].type" in str(
        refusal({"model": "m", "messages": unanswered[:1], "tools": [anthropic_tool]})
    )
