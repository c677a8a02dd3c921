"""The prompt-cache breakpoints the Anthropic provider marks (the fake API's accounting of them
is tested with the harness, ``conformance/tests/test_fake_prompt_cache.py``)."""

from __future__ import annotations

import copy
import json
import math

from acp_conformance.fakes.prompt_cache import BYTES_PER_TOKEN, PromptCache, _blocks

from iaccode.llm.anthropic_provider import MAX_BREAKPOINTS, with_cache_breakpoints

MARK = {"type": "ephemeral"}
SYSTEM = "s" * 8000  # 2,000 tokens: over the 1,024-token minimum on its own


def body(messages: list[dict], system: str = SYSTEM, marked: bool = True) -> dict:
    out = {"model": "m", "system": system, "messages": messages}
    return with_cache_breakpoints(out) if marked else out


def user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def total_tokens(request: dict) -> int:
    return math.ceil(sum(len(data) for data, _ in _blocks(request)) / BYTES_PER_TOKEN)


def test_the_providers_marks_make_a_tool_loop_read_the_previous_request() -> None:
    """What the breakpoints are for, billed by the fake as the real API bills them: the next
    request of a tool loop reads all of the previous one from cache."""
    cache = PromptCache()
    first = body([user("x" * 400)])
    assert cache.account(first)["cache_creation_input_tokens"] == total_tokens(first)
    second = body([user("x" * 400), assistant("y" * 40), user("z" * 4000)])
    usage = cache.account(second)
    assert usage["cache_read_input_tokens"] == total_tokens(first)
    assert sum(usage.values()) == total_tokens(second)


def marks(request: dict) -> int:
    return json.dumps(request).count('"cache_control"')


def test_breakpoints_on_system_and_the_newest_messages_last_block() -> None:
    messages = [
        user("q"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "t", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]
    original = copy.deepcopy(messages)
    request = with_cache_breakpoints(
        {"model": "m", "system": "sys", "messages": messages, "tools": [{"name": "a"}]}
    )
    assert messages == original  # the history is not changed
    assert request["system"] == [{"type": "text", "text": "sys", "cache_control": MARK}]
    assert request["messages"][-1]["content"][-1]["cache_control"] == MARK
    assert marks(request) == 2
    # no system: the tools carry the first breakpoint
    request = with_cache_breakpoints(
        {"model": "m", "messages": messages, "tools": [{"name": "a"}, {"name": "b"}]}
    )
    assert request["tools"][-1]["cache_control"] == MARK and marks(request) == 2


def test_never_more_than_four_breakpoints() -> None:
    marked = [
        {"role": "user", "content": [{"type": "text", "text": str(i), "cache_control": MARK}]}
        for i in range(3)
    ]
    request = with_cache_breakpoints({"model": "m", "system": "sys", "messages": marked})
    assert marks(request) == MAX_BREAKPOINTS
    assert "cache_control" not in request["messages"][-1]["content"][-1] or all(
        "cache_control" in m["content"][-1] for m in marked
    )  # the given ones are kept
    assert "cache_control" in request["system"][-1]
