"""What the providers on an official SDK share: opening and closing the stream, its errors,
the retry-wait cap, raw SSE reading, and requests that UTF-8 can carry.

Both SDKs (``anthropic``, ``openai``) run on httpx under anyio, retry 408/409/429/5xx before a
stream starts honouring ``retry-after``, and obey ``x-should-retry``; :func:`no_long_retry_waits`
is the one hook that caps their waits. Both have the same exception classes (``APIError``,
``APIStatusError``, ``APITimeoutError``, ``APIConnectionError``), which :func:`describe` turns
into one message for the user. Both providers read the stream as raw SSE lines
(:func:`sse_data`) instead of the SDKs' typed events: plain dicts, no pydantic object per
delta, turned into Anthropic events and assembled in :func:`open_stream`.

A stream that breaks midway is not retried (the user has already seen part of it): it becomes
a ModelError. Leaving the stream early (a cancelled turn) closes the HTTP response at once.
"""

from __future__ import annotations

import email.utils
import importlib
import importlib.util
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import Any

import trio

from iaccode.llm.assemble import StreamAssembler
from iaccode.llm.base import ModelError, ModelEvent, RawTap

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


def _errors(sdk: Any) -> tuple[type[BaseException], ...]:
    """The SDK's errors and its transport's, raised while iterating a stream (the SDK does not
    wrap those): httpx2 in the current SDKs, httpx before."""
    transport = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")
    return (sdk.APIError, transport.HTTPError)


def describe(sdk: Any, exc: BaseException) -> str:
    """A failed request or stream, as the user reads it: what the API answered."""
    if isinstance(exc, sdk.APIStatusError):
        message = exc.message
        body = exc.body
        if isinstance(body, dict):  # {"error": {"message": ...}}, or that inner object
            inner = body.get("error")
            message = str((inner if isinstance(inner, dict) else body).get("message") or message)
        return f"The model API answered {exc.status_code}: {message}"
    if isinstance(exc, sdk.APITimeoutError):
        return "The model API did not answer in time."
    if isinstance(exc, sdk.APIConnectionError):
        return f"Could not reach the model API: {exc.__cause__ or exc}"
    return f"The model's answer broke off: {type(exc).__name__}: {exc}"


RawEvents = Callable[[AsyncIterator[str]], AsyncGenerator[dict[str, Any], None]]
"""The body's lines -> the raw Anthropic events they carry (a provider's reading of its API)."""


@asynccontextmanager
async def open_stream(
    sdk: Any, response: AbstractAsyncContextManager[Any], raw_events: RawEvents, tap: RawTap | None
) -> AsyncIterator[AsyncIterator[ModelEvent]]:
    """Enter the SDK's raw streaming ``response`` (``with_streaming_response.create(...)``:
    the SDK's retries happen here) and yield the assembled provider events.

    Errors: ModelError with a readable message, when opening or while iterating. Leaving the
    context closes the HTTP response (shielded, bounded by CLOSE_TIMEOUT).
    """
    errors = _errors(sdk)
    try:
        opened = await response.__aenter__()
    except errors as exc:
        raise ModelError(describe(sdk, exc)) from exc
    lines = opened.http_response.aiter_lines()
    events = _assembled(raw_events(lines), sdk, errors, tap)
    try:
        yield events
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
            await events.aclose()
            await lines.aclose()  # httpx's generator: not left for the garbage collector
            await response.__aexit__(None, None, None)


async def _assembled(
    raws: AsyncGenerator[dict[str, Any], None],
    sdk: Any,
    errors: tuple[type[BaseException], ...],
    tap: RawTap | None,
) -> AsyncGenerator[ModelEvent, None]:
    assembler = StreamAssembler(tap)
    try:
        async with aclosing(raws):
            async for raw in raws:
                event = assembler.feed(raw)
                if event is not None:
                    yield event
    except errors as exc:
        raise ModelError(describe(sdk, exc)) from exc
    except (ValueError, TypeError, LookupError, AttributeError, RecursionError) as exc:
        # Events of a shape we cannot read (malformed JSON, wrong types).
        raise ModelError(f"The model API sent an unreadable event: {exc}") from exc
    if not assembler.finished:
        raise ModelError("The model's answer broke off before it was complete.")
