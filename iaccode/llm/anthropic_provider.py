"""The Anthropic provider, on the official SDK (``AsyncAnthropic``, which runs under trio).

``anthropic`` is imported lazily: it costs about two seconds, and editors wait for
``initialize``. :meth:`AnthropicProvider.preload` imports it in a worker thread once the
handshake is done.

Retries: the SDK retries 408/409/429/5xx/529 before the stream starts, honouring
``retry-after`` and backing off with jitter otherwise; its waits are trio sleeps, so
``session/cancel`` interrupts them. We add no second retry loop. A stream that breaks midway is
not retried (the user has already seen part of it): it becomes a ModelError.
"""

from __future__ import annotations

import email.utils
import importlib
import importlib.util
import json
import logging
import os
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from iaccode.llm.assemble import StreamAssembler
from iaccode.llm.base import (
    MissingCredentials,
    ModelError,
    ModelEvent,
    ModelRequest,
    RawTap,
)

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 1.0
"""Bound on closing the HTTP stream after a cancel; the close itself is shielded."""

CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")

MAX_RETRY_WAIT = 60.0
"""The longest ``retry-after`` we honour. The SDK would wait for whatever the server asks (up to
49 days) with the turn silent; a longer wait is not retried: the user sees the error at once."""


async def _no_long_retry_waits(response: Any) -> None:
    """httpx response hook: mark an answer that asks for a wait over MAX_RETRY_WAIT as not to
    be retried (the SDK obeys ``x-should-retry``)."""
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


def _import_sdk() -> Any:
    import anthropic

    return anthropic


def _http_errors() -> tuple[type[BaseException], ...]:
    """Transport errors raised while iterating a stream (the SDK does not wrap those)."""
    anthropic = _import_sdk()
    # Its transport: httpx2 in SDK 2.x, httpx before.
    transport = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")
    return (anthropic.APIError, transport.HTTPError)


def _describe(exc: BaseException) -> str:
    anthropic = _import_sdk()
    if isinstance(exc, anthropic.APIStatusError):
        message = exc.message
        body = exc.body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            message = body["error"].get("message", message)
        return f"The model API answered {exc.status_code}: {message}"
    if isinstance(exc, anthropic.APITimeoutError):
        return "The model API did not answer in time."
    if isinstance(exc, anthropic.APIConnectionError):
        return f"Could not reach the model API: {exc.__cause__ or exc}"
    return f"The model's answer broke off: {type(exc).__name__}: {exc}"


_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d+)(?:-(\d{1,2}))?(?:-|$)")


THINKING_BUDGETS = {"low": 2_048, "medium": 8_192, "high": 24_576}
"""Token budgets for models that think with a fixed budget (Claude 4.5 and older)."""


def thinking_config(model: str, level: str, max_tokens: int) -> dict[str, Any]:
    """The request fields for a thinking level on this model ({} for off).

    Claude 4.6 and later think adaptively, steered by ``output_config.effort`` (the 5 family
    rejects a fixed budget with a 400); 4.5 and earlier only know ``enabled`` with
    ``budget_tokens``, which must stay below ``max_tokens``. A model id we cannot read a
    version from keeps the budget form. ``summarized`` asks for thinking text to stream.
    """
    if level not in THINKING_BUDGETS:
        return {}
    match = _VERSION.search(model)
    version = (int(match.group(1)), int(match.group(2) or 0)) if match else (0, 0)
    if version >= (4, 6) or "mythos" in model:
        return {"thinking": {"type": "adaptive", "display": "summarized"},
                "output_config": {"effort": level}}
    budget = min(THINKING_BUDGETS[level], max_tokens - 1_024)
    if budget < 1_024:  # the API's minimum; too little room to think
        return {}
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def _encodable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as UTF-8 can carry them. A lone surrogate (valid as a JSON escape: a model
    or a client may send one) would make the request impossible to encode, in this turn and
    every later one; it goes out as "?" (the history keeps it)."""
    text = json.dumps(messages, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.loads(text.encode("utf-8", "replace"))  # type: ignore[no-any-return]
    return messages


EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
"""The API refuses a request with more ``cache_control`` breakpoints than this."""
UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})
"""Blocks that cannot carry ``cache_control``."""


def with_cache_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """Mark the request for prompt caching (a new body; the history is not touched).

    Two breakpoints: the end of the tools + system prefix, which every request of the session
    shares, and the last block of the newest message, so that the next request of a tool loop
    (the same messages plus an answer and its tool results) reads all of this one from cache.
    Breakpoints already in the messages are kept, as long as the total stays within
    MAX_BREAKPOINTS (the newest message's is then the one left out).
    """
    body = dict(body)
    marks = _count_marks(body.get("messages", []))
    if body.get("system"):
        system = body["system"]
        blocks: list[dict[str, Any]] = (
                  [{"type": "text", "text": system}] if isinstance(system, str)
                  else [dict(block) for block in system])
        if not any("cache_control" in block for block in blocks):
            blocks[-1]["cache_control"] = dict(EPHEMERAL)
        body["system"] = blocks
        marks += sum("cache_control" in block for block in blocks)
    elif body.get("tools"):
        tools = [dict(tool) for tool in body["tools"]]
        if not any("cache_control" in tool for tool in tools):
            tools[-1]["cache_control"] = dict(EPHEMERAL)
        body["tools"] = tools
        marks += sum("cache_control" in tool for tool in tools)
    messages = body.get("messages") or []
    if messages and marks < MAX_BREAKPOINTS:
        body["messages"] = [*messages[:-1], _mark_last_block(messages[-1])]
    return body


def _count_marks(messages: list[dict[str, Any]]) -> int:
    return sum(1 for message in messages if isinstance(message.get("content"), list)
               for block in message["content"]
               if isinstance(block, dict) and "cache_control" in block)


def _mark_last_block(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = ([{"type": "text", "text": content}] if isinstance(content, str) and content
              else list(content) if isinstance(content, list) else [])
    for index in range(len(blocks) - 1, -1, -1):
        block = blocks[index]
        if not isinstance(block, dict) or block.get("type") in UNCACHEABLE:
            continue
        if block.get("type") == "text" and not block.get("text"):
            continue  # an empty text block cannot be cached (nor sent)
        blocks[index] = {**block, "cache_control": dict(EPHEMERAL)}
        return {**message, "content": blocks}
    return message


class AnthropicProvider:
    def __init__(self, *, max_retries: int, timeout: float) -> None:
        self._max_retries = max_retries
        self._timeout = timeout
        self._client: anthropic.AsyncAnthropic | None = None

    async def preload(self) -> None:
        """Import the SDK in a worker thread so the first prompt does not pay for it."""
        await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)

    def check_credentials(self) -> None:
        if not any(os.environ.get(name) for name in CREDENTIAL_VARIABLES):
            raise MissingCredentials(
                "No Anthropic credentials: set ANTHROPIC_API_KEY in the environment the editor "
                "starts iaccode with (or IAC_CODE_MODEL_SCRIPT to play a scripted model offline)."
            )

    async def _get_client(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            # In a thread: if the preload is still importing, we wait without blocking the loop.
            anthropic = await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)
            # The SDK reads ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN / ANTHROPIC_BASE_URL itself.
            self._client = anthropic.AsyncAnthropic(
                max_retries=self._max_retries,
                timeout=anthropic.Timeout(self._timeout, connect=10.0),
                http_client=anthropic.DefaultAsyncHttpxClient(
                    event_hooks={"response": [_no_long_retry_waits]}),
            )
        return self._client

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": _encodable(request.messages),
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = request.tools
        body.update(thinking_config(request.model, request.thinking, request.max_tokens))
        return with_cache_breakpoints(body)

    @asynccontextmanager
    async def stream(self, request: ModelRequest, tap: RawTap | None = None
                     ) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        client = await self._get_client()
        errors = _http_errors()
        try:
            # Raw SSE lines instead of the SDK's typed events: we need plain dicts for the
            # assembler (shared with the offline provider) and skip building pydantic objects
            # per delta.
            response_cm = client.messages.with_streaming_response.create(**self._body(request))
            response = await response_cm.__aenter__()
        except errors as exc:
            raise ModelError(_describe(exc)) from exc
        events = self._events(response.http_response.aiter_lines(), errors, tap)
        try:
            yield events
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
                await events.aclose()
                await response_cm.__aexit__(None, None, None)

    async def _events(
        self, lines: AsyncIterator[str], errors: tuple[type[BaseException], ...],
        tap: RawTap | None,
    ) -> AsyncGenerator[ModelEvent, None]:
        assembler = StreamAssembler(tap)
        data: list[str] = []
        try:
            async for line in lines:
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                    continue
                if line or not data:
                    continue  # "event:" lines name the type the data repeats; comments; blanks
                event = assembler.feed(json.loads("\n".join(data)))
                data.clear()
                if event is not None:
                    yield event
            if data:  # a last event without its terminating blank line
                event = assembler.feed(json.loads("\n".join(data)))
                if event is not None:
                    yield event
        except errors as exc:
            raise ModelError(_describe(exc)) from exc
        except (ValueError, TypeError, LookupError, AttributeError, RecursionError) as exc:
            # Events of a shape the assembler cannot read (malformed JSON, wrong types).
            raise ModelError(f"The model API sent an unreadable event: {exc}") from exc
        if not assembler.finished:
            raise ModelError("The model's answer broke off before it was complete.")
