"""The OpenAI-compatible provider's two translations: our history -> a Chat Completions
request, and Chat Completions chunks -> the provider events every provider gives.

Each converted request is checked with the fake API's own strictness rules (``refusal``), the
ones the real API enforces."""

from __future__ import annotations

from typing import Any

from acp_conformance.fakes.chat import refusal

from iaccode.llm.anthropic_provider import sendable
from iaccode.llm.assemble import StreamAssembler
from iaccode.llm.base import Finished, ModelEvent, ModelRequest, TextDelta, ThinkingDelta
from iaccode.llm.openai_request import NO_RESULT, chat_body, chat_messages
from iaccode.llm.openai_stream import ChunkTranslator

IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
}


def body(
    messages: list[dict[str, Any]], model: str = "m", thinking: str = "off", style: str = "none"
) -> dict[str, Any]:
    request = ModelRequest(
        model=model, messages=messages, max_tokens=100, system="sys", thinking=thinking
    )
    out = chat_body(request, thinking=style, max_tokens_field="max_tokens")
    assert refusal(out) is None, refusal(out)
    return out


def test_an_anthropic_history_with_tools_images_and_thinking() -> None:
    messages = body(
        [
            {"role": "user", "content": [{"type": "text", "text": "Look at this"}, IMAGE]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "secret", "signature": "sig"},
                    {"type": "text", "text": "Reading."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "read_file",
                        "input": {"path": "a"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "grep",
                        "input": {"pattern": "x"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a's text"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "is_error": True,
                        "content": [{"type": "text", "text": "bad pattern"}, IMAGE],
                    },
                    {"type": "text", "text": "and then?"},
                ],
            },
        ]
    )["messages"]
    assert messages == [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look at this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a"}'},
                },
                {
                    "id": "toolu_2",
                    "type": "function",
                    "function": {"name": "grep", "arguments": '{"pattern": "x"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "a's text"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: bad pattern"},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "text", "text": "and then?"},
            ],
        },
    ]


def test_histories_the_api_would_refuse_are_mended() -> None:
    messages = chat_messages(
        None,
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "ls"}}
                ],
            },
            # No result for c1 (a crash before it was saved), and a result answering no call.
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c9", "content": "stray"},
                    {"type": "text", "text": "continue"},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "only this", "signature": "s"}],
            },
            {"role": "user", "content": "next"},
        ],
    )
    assert messages == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": NO_RESULT},
        {"role": "user", "content": "continue"},
        {"role": "user", "content": "next"},
    ]
    assert refusal({"model": "m", "messages": messages}) is None


def test_thinking_levels() -> None:
    history = [{"role": "user", "content": "hi"}]
    assert body(history, "o4-mini", "high", "reasoning_effort")["reasoning_effort"] == "high"
    assert body(history, "openai/gpt-5.1", "low", "reasoning_effort")["reasoning_effort"] == "low"
    assert "reasoning_effort" not in body(history, "gpt-4.1", "high", "reasoning_effort")
    # OpenRouter maps the effort to each model's own form (Claude's budget, Qwen's switch).
    assert (
        body(history, "qwen/qwen3-coder", "high", "reasoning_effort_any")["reasoning_effort"]
        == "high"
    )
    assert body(history, "qwen3-max", "medium", "enable_thinking")["extra_body"] == {
        "enable_thinking": True
    }
    assert "extra_body" not in body(history, "qwen3-coder-plus", "high", "enable_thinking")
    for style in ("reasoning_effort", "reasoning_effort_any", "enable_thinking"):
        off = body(history, "o3", "off", style)
        assert "reasoning_effort" not in off and "extra_body" not in off


def play(chunks: list[dict[str, Any]]) -> list[ModelEvent]:
    translator = ChunkTranslator()
    assembler = StreamAssembler()
    events = []
    for chunk in chunks:
        for raw in translator.feed(chunk):
            if (event := assembler.feed(raw)) is not None:
                events.append(event)
    for raw in translator.finish():
        if (event := assembler.feed(raw)) is not None:
            events.append(event)
    return events


def delta(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_chunks_become_the_same_events_as_an_anthropic_stream() -> None:
    events = play(
        [
            delta({"role": "assistant", "content": None, "reasoning_content": "hm"}),
            delta({"reasoning": "m"}),
            delta({"content": "Hi"}),
            delta(
                {
                    "tool_calls": [
                        {"index": 1, "id": "c2", "function": {"name": "grep", "arguments": '{"pat'}}
                    ]
                }
            ),
            delta(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"name": "read_file", "arguments": '{"path":"a"}'}}
                    ]
                }
            ),
            delta({"tool_calls": [{"index": 1, "function": {"arguments": 'tern":"x"}'}}]}),
            delta({}, "stop"),  # some servers say stop after tool calls
            {
                "id": "x",
                "choices": [],
                "usage": {
                    "prompt_tokens": 50,
                    "completion_tokens": 9,
                    "prompt_cache_hit_tokens": 30,
                    "completion_tokens_details": {"reasoning_tokens": 4},
                },
            },
        ]
    )
    assert events[:3] == [ThinkingDelta("hm"), ThinkingDelta("m"), TextDelta("Hi")]
    finished = events[3]
    assert isinstance(finished, Finished) and len(events) == 4
    assert finished.stop_reason == "tool_use"
    content = finished.content
    # The reasoning is kept (unsigned: never sent back, see api_messages), then the answer.
    assert content[:2] == [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Hi"}]
    assert [(b["name"], b["input"]) for b in content[2:]] == [
        ("read_file", {"path": "a"}),
        ("grep", {"pattern": "x"}),
    ]
    assert content[2]["id"].startswith("call_") and content[3]["id"] == "c2"
    usage = finished.usage
    assert (
        usage.input_tokens,
        usage.cache_read_input_tokens,
        usage.output_tokens,
        usage.thought_tokens,
    ) == (20, 30, 9, 4)


def test_invalid_arguments_and_finish_reasons() -> None:
    events = play(
        [
            delta(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "[1, 2]"}}
                    ]
                }
            ),
            delta({}, "length"),
        ]
    )
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.stop_reason == "max_tokens"
    assert finished.invalid_tool_inputs == {"c1": "[1, 2]"}  # JSON, but not an object
    for reason, ours in [
        ("stop", "end_turn"),
        ("content_filter", "refusal"),
        ("tool_calls", "tool_use"),
    ]:
        last = play([delta({"content": "x"}, reason)])[-1]
        assert isinstance(last, Finished) and last.stop_reason == ours


def test_unsigned_thinking_is_kept_in_the_history_but_never_sent_to_anthropic() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "one"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "only reasoning"}]},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm"},
                {"type": "thinking", "thinking": "signed", "signature": "sig"},
                {"type": "text", "text": "answer"},
            ],
        },
    ]
    assert sendable(history) == [
        {"role": "user", "content": [{"type": "text", "text": "one"}]},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed", "signature": "sig"},
                {"type": "text", "text": "answer"},
            ],
        },
    ]
    # Chat Completions APIs get no reasoning back, except DeepSeek (reasoning_back).
    assert "hm" not in str(chat_messages(None, history))
    deepseek = chat_messages(None, history, reasoning_back=True)
    assert [m.get("reasoning_content") for m in deepseek if m["role"] == "assistant"] == [
        "hmsigned"
    ]
