"""The model script builders (``acp_conformance.script``): the exchanges the fakes play, and
how the fakes read an exchange back (``read_exchange``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp_conformance import script as builders
from acp_conformance.script import (
    ToolUse,
    error_body,
    error_status,
    exchange_kind,
    hang,
    read_exchange,
    reply,
    reset,
    stream_error,
)
from hypothesis import given
from hypothesis import strategies as st


def types(exchange: dict[str, Any]) -> list[str]:
    return [event["type"] for event in exchange["events"]]


def deltas(exchange: dict[str, Any], kind: str, field: str) -> list[str]:
    return [
        event["delta"][field]
        for event in exchange["events"]
        if event["type"] == "content_block_delta" and event["delta"]["type"] == kind
    ]


def test_reply_text_chunks_in_order() -> None:
    ex = reply(["Hel", "lo", " world"])
    assert exchange_kind(ex) == "events"
    assert ex["delay"] == 0.0 and ex["cut_after"] is None
    assert types(ex) == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert deltas(ex, "text_delta", "text") == ["Hel", "lo", " world"]
    assert ex["events"][1]["content_block"] == {"type": "text", "text": ""}
    assert ex["events"][-2]["delta"]["stop_reason"] == "end_turn"


def test_reply_single_string_is_one_delta() -> None:
    assert deltas(reply("hello"), "text_delta", "text") == ["hello"]


def test_reply_empty_has_no_blocks() -> None:
    assert types(reply()) == ["message_start", "message_delta", "message_stop"]


def test_reply_thinking_text_tools_order() -> None:
    tools = [ToolUse("tu_1", "read_file", {"path": "a.py"}), ToolUse("tu_2", "ls", {})]
    ex = reply("Let me look.", thinking=["Hmm", ", ok"], tool_uses=tools, signature="sig")
    events = ex["events"]
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [(s["index"], s["content_block"]["type"]) for s in starts] == [
        (0, "thinking"),
        (1, "text"),
        (2, "tool_use"),
        (3, "tool_use"),
    ]
    assert starts[2]["content_block"] == {
        "type": "tool_use",
        "id": "tu_1",
        "name": "read_file",
        "input": {},
    }
    assert deltas(ex, "thinking_delta", "thinking") == ["Hmm", ", ok"]
    # The signature comes last in the thinking block, just before its stop.
    sig = next(
        i for i, e in enumerate(events) if e.get("delta", {}).get("type") == "signature_delta"
    )
    assert events[sig]["delta"]["signature"] == "sig"
    assert events[sig + 1] == {"type": "content_block_stop", "index": 0}
    # Tool inputs are streamed as 2-3 partial JSON pieces per block.
    for index, tool in ((2, tools[0]), (3, tools[1])):
        pieces = [
            e["delta"]["partial_json"]
            for e in events
            if e["type"] == "content_block_delta" and e["index"] == index
        ]
        assert 2 <= len(pieces) <= 3
        assert json.loads("".join(pieces)) == tool.input
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


def test_reply_explicit_stop_reason_wins() -> None:
    ex = reply(tool_uses=[ToolUse("t", "x", {})], stop_reason="max_tokens")
    assert ex["events"][-2]["delta"]["stop_reason"] == "max_tokens"


def test_reply_usage() -> None:
    ex = reply(
        "x",
        input_tokens=100,
        output_tokens=42,
        cache_read_input_tokens=80,
        cache_creation_input_tokens=7,
        model="claude-test",
        message_id="msg_1",
    )
    start = ex["events"][0]["message"]
    assert start["id"] == "msg_1" and start["model"] == "claude-test"
    assert start["usage"] == {
        "input_tokens": 100,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 80,
        "output_tokens": 1,
    }
    assert ex["events"][-2]["usage"] == {
        "input_tokens": 100,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 80,
        "output_tokens": 42,
    }
    plain = reply("x")["events"][0]["message"]["usage"]
    assert "cache_read_input_tokens" not in plain and "cache_creation_input_tokens" not in plain


def test_reply_delay_and_cut_after_are_checked() -> None:
    assert reply("x", delay=0.5, cut_after=2)["cut_after"] == 2
    with pytest.raises(builders.ScriptError, match="delay"):
        reply("x", delay=-1)
    with pytest.raises(builders.ScriptError, match="cut_after"):
        reply("x", cut_after=99)


def test_stream_error() -> None:
    ex = stream_error("partial", "api_error", "boom")
    assert types(ex) == ["message_start", "content_block_start", "content_block_delta", "error"]
    assert ex["events"][-1] == {"type": "error", "error": {"type": "api_error", "message": "boom"}}
    assert types(stream_error()) == ["message_start", "error"]
    assert stream_error()["events"][-1]["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (529, "overloaded_error"),
        (418, "invalid_request_error"),
    ],
)
def test_error_status_body(status: int, error_type: str) -> None:
    ex = error_status(status)
    assert exchange_kind(ex) == "status"
    assert ex["status"] == status and ex["headers"] == {}
    assert ex["body"]["type"] == "error"
    assert ex["body"]["error"]["type"] == error_type
    assert isinstance(ex["body"]["error"]["message"], str)


def test_error_status_retry_after_and_headers() -> None:
    assert error_status(429, retry_after=1)["headers"] == {"retry-after": "1"}
    assert error_status(429, retry_after=0.25)["headers"] == {"retry-after": "0.25"}
    ex = error_status(529, "busy", headers={"x-should-retry": "false"})
    assert ex["headers"] == {"x-should-retry": "false"}
    assert ex["body"]["error"] == {"type": "overloaded_error", "message": "busy"}
    assert error_body(500, "m", error_type="x")["error"] == {"type": "x", "message": "m"}
    with pytest.raises(builders.ScriptError, match="status"):
        error_status(200)


def test_hang_and_reset() -> None:
    assert hang() == {"hang": True} and exchange_kind(hang()) == "hang"
    assert reset() == {"reset": True} and exchange_kind(reset()) == "reset"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_tool_input_pieces_rebuild_the_input(tool_input: dict[str, Any]) -> None:
    ex = reply(tool_uses=[ToolUse("tu", "tool", tool_input)])
    pieces = deltas(ex, "input_json_delta", "partial_json")
    assert 2 <= len(pieces) <= 3
    assert all(pieces)
    assert json.loads("".join(pieces)) == tool_input
    assert read_exchange(json.loads(json.dumps(ex))) == ex


@given(st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=8))
def test_text_chunks_are_kept(chunks: list[str]) -> None:
    assert deltas(reply(chunks), "text_delta", "text") == chunks
    assert deltas(reply(thinking=chunks), "thinking_delta", "thinking") == chunks
