"""The fake Messages API's prompt-cache accounting (``acp_conformance.fakes.prompt_cache``):
what a request with ``cache_control`` breakpoints reads and writes, as the real API bills it."""

from __future__ import annotations

import math
from typing import Any

from acp_conformance.fakes.prompt_cache import BYTES_PER_TOKEN, PromptCache, _blocks

MARK = {"type": "ephemeral"}
SYSTEM = "s" * 8000  # 2,000 tokens: over the 1,024-token minimum on its own

Body = dict[str, Any]


def body(messages: list[Body], system: str = SYSTEM, marked: bool = True) -> Body:
    """A request; ``marked``: with the two breakpoints an agent puts for a tool loop, at the
    end of the system prompt and on the newest message's last block."""
    if not marked:
        return {"model": "m", "system": system, "messages": messages}
    *older, newest = messages
    last = {**newest["content"][-1], "cache_control": MARK}
    return {
        "model": "m",
        "system": [{"type": "text", "text": system, "cache_control": MARK}],
        "messages": [*older, {**newest, "content": [*newest["content"][:-1], last]}],
    }


def user(text: str) -> Body:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> Body:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def total_tokens(request: Body) -> int:
    return math.ceil(sum(len(data) for data, _ in _blocks(request)) / BYTES_PER_TOKEN)


def test_no_breakpoints_nothing_cached() -> None:
    cache = PromptCache()
    request = body([user("hi")], marked=False)
    for _ in range(2):
        usage = cache.account(request)
        assert usage == {
            "input_tokens": total_tokens(request),
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }


def test_a_tool_loop_reads_the_previous_requests_prefix() -> None:
    cache = PromptCache()
    first = body([user("x" * 400)])
    usage = cache.account(first)
    # Everything up to the newest message's last block is written; nothing was there to read.
    assert usage["cache_read_input_tokens"] == 0
    assert usage["cache_creation_input_tokens"] == total_tokens(first)
    assert usage["input_tokens"] == 0
    second = body([user("x" * 400), assistant("y" * 40), user("z" * 4000)])
    usage = cache.account(second)
    assert usage["cache_read_input_tokens"] == total_tokens(first)
    assert usage["cache_creation_input_tokens"] == total_tokens(second) - total_tokens(first)
    assert sum(usage.values()) == total_tokens(second)


def test_a_changed_system_prompt_misses() -> None:
    cache = PromptCache()
    cache.account(body([user("hi")]))
    usage = cache.account(body([user("hi")], system=SYSTEM + "!"))
    assert usage["cache_read_input_tokens"] == 0


def test_the_same_prefix_with_another_newest_message_reads_the_system_part() -> None:
    cache = PromptCache()
    cache.account(body([user("first question")]))
    usage = cache.account(body([user("another question")]))
    system_only = {"model": "m", "system": SYSTEM, "messages": []}
    assert usage["cache_read_input_tokens"] == total_tokens(system_only)


def test_prefixes_under_the_minimum_are_not_written() -> None:
    cache = PromptCache()
    small = body([user("hi")], system="short")
    assert cache.account(small)["cache_creation_input_tokens"] == 0
    assert cache.account(small)["cache_read_input_tokens"] == 0


def test_lookback_is_twenty_blocks() -> None:
    cache = PromptCache(min_tokens=1)
    history = [user("a"), assistant("b")]
    cache.account(body(history))
    # 21 more blocks after the cached one: the newest breakpoint's lookback cannot reach it,
    # only the system breakpoint hits.
    longer = history + [m for i in range(11) for m in (user(f"q{i}"), assistant(f"a{i}"))][:21]
    usage = cache.account(body(longer))
    system_only = {"model": "m", "system": SYSTEM, "messages": []}
    assert usage["cache_read_input_tokens"] == total_tokens(system_only)
