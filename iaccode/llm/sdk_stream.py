"""What the providers on an official SDK share: the retry-wait cap, raw SSE reading, and
requests that UTF-8 can carry.

Both SDKs (``anthropic``, ``openai``) run on httpx under anyio, retry 408/409/429/5xx before a
stream starts honouring ``retry-after``, and obey ``x-should-retry``; :func:`no_long_retry_waits`
is the one hook that caps their waits. Both providers read the stream as raw SSE lines
(:func:`sse_data`) instead of the SDKs' typed events: plain dicts, no pydantic object per delta.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

CLOSE_TIMEOUT = 1.0
"""Bound on closing the HTTP stream after a cancel; the close itself is shielded."""

MAX_RETRY_WAIT = 60.0
"""The longest ``retry-after`` we honour. The SDKs would wait for whatever the server asks (the
Anthropic SDK up to 49 days, the OpenAI SDK two minutes) with the turn silent; a longer wait is
not retried: the user sees the error at once."""


async def no_long_retry_waits(response: Any) -> None:
    """httpx response hook: mark an answer that asks for a wait over MAX_RETRY_WAIT as not to
    be retried (the SDKs obey ``x-should-retry``)."""
    headers = response.headers
    wait: float | None = None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            wait = float(headers.get(name)) * scale
            break
        except (TypeError, ValueError):
            continue
    if wait is None and headers.get("retry-after"):
        try:  # an HTTP date
            moment = email.utils.parsedate_to_datetime(headers["retry-after"])
            wait = moment.timestamp() - time.time()
        except (TypeError, ValueError):
            wait = None
    if wait is not None and wait > MAX_RETRY_WAIT:
        headers["x-should-retry"] = "false"


async def sse_data(lines: AsyncIterator[str]) -> AsyncGenerator[str, None]:
    """The data of each server-sent event, from the body's lines (multi-line data joined).

    ``event:`` lines (the type the data repeats), ``id:``, comments and blank keep-alives are
    skipped; a last event without its terminating blank line still counts.
    """
    data: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
            continue
        if line or not data:
            continue
        yield "\n".join(data)
        data.clear()
    if data:
        yield "\n".join(data)


def encodable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as UTF-8 can carry them. A lone surrogate (valid as a JSON escape: a model
    or a client may send one) would make the request impossible to encode, in this turn and
    every later one; it goes out as "?" (the history keeps it)."""
    text = json.dumps(messages, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.loads(text.encode("utf-8", "replace"))  # type: ignore[no-any-return]
    return messages
