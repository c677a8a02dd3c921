"""The Anthropic provider, on the official SDK (``AsyncAnthropic``, which runs under trio).

``anthropic`` is imported lazily: it costs about two seconds, and editors wait for their first
session. ``iaccode acp`` imports it in the background (``iaccode/preload.py``);
:meth:`AnthropicProvider.preload` does it in a worker thread (``iaccode serve``).

Retries: the SDK retries 408/409/429/5xx/529 before the stream starts, honouring
``retry-after`` and backing off with jitter otherwise; its waits are trio sleeps, so
``session/cancel`` interrupts them. We add no second retry loop. Opening, reading and closing
the stream, and its errors, are shared with the OpenAI-compatible provider (``sdk_stream.py``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from iaccode.llm.base import (
    MissingCredentials,
    ModelEvent,
    ModelRequest,
    RawTap,
)
from iaccode.llm.providers import CREDENTIAL_VARIABLES
from iaccode.llm.sdk_stream import encodable, no_long_retry_waits, open_stream, sse_data

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)


def _import_sdk() -> Any:
    import anthropic

    return anthropic


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
        return {
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": level},
        }
    budget = min(THINKING_BUDGETS[level], max_tokens - 1_024)
    if budget < 1_024:  # the API's minimum; too little room to think
        return {}
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def sendable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history without thinking that has no signature (an OpenAI-compatible model's
    reasoning, kept for replay after a provider switch): the Messages API refuses it. A message
    left empty goes too (the API joins the turns around it)."""
    if not any(
        _unsigned(block)
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
    ):
        return messages
    kept = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [block for block in content if not _unsigned(block)]
            if not content:
                continue
            message = {**message, "content": content}
        kept.append(message)
    return kept


def _unsigned(block: Any) -> bool:
    return (
        isinstance(block, dict) and block.get("type") == "thinking" and not block.get("signature")
    )


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
            [{"type": "text", "text": system}]
            if isinstance(system, str)
            else [dict(block) for block in system]
        )
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
    return sum(
        1
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and "cache_control" in block
    )


def _mark_last_block(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = (
        [{"type": "text", "text": content}]
        if isinstance(content, str) and content
        else list(content)
        if isinstance(content, list)
        else []
    )
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
    def __init__(
        self,
        *,
        max_retries: int,
        timeout: float,
        base_url: str | None = None,
        key_variable: str | None = None,
        stored_key: Callable[[], str | None] = lambda: None,
    ) -> None:
        """``base_url`` and ``key_variable`` (IAC_CODE_BASE_URL, IAC_CODE_API_KEY or config's
        ``api_key_env``) replace ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY when given;
        ``stored_key`` gives the key ``iaccode login`` saved, used while the variables are
        unset (read at each request: a login or logout meanwhile counts)."""
        self._max_retries = max_retries
        self._timeout = timeout
        self._base_url = base_url
        self._key_variable = key_variable
        self._stored_key = stored_key
        self._client: anthropic.AsyncAnthropic | None = None
        self._client_key: str | None = None
        """The stored key the client was built with (None: the environment's)."""

    async def preload(self) -> None:
        """Import the SDK in a worker thread so the first prompt does not pay for it."""
        await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)

    def _variables(self) -> tuple[str, ...]:
        return (self._key_variable,) if self._key_variable else CREDENTIAL_VARIABLES

    def check_credentials(self) -> None:
        variables = self._variables()
        if not any(os.environ.get(name) for name in variables) and not self._stored_key():
            raise MissingCredentials(
                f"No Anthropic credentials: set {variables[0]} in the environment the editor "
                "starts iaccode with, or run `iaccode login` (or set IAC_CODE_MODEL_SCRIPT to "
                "play a scripted model offline)."
            )

    async def aclose(self) -> None:
        """Close the HTTP client and its pooled connections (for a process that goes on
        without this provider: ``iaccode acp`` just exits)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def _get_client(self) -> anthropic.AsyncAnthropic:
        # The environment wins; without it, the stored key (a new client when it changed).
        stored = (
            None
            if any(os.environ.get(name) for name in self._variables())
            else (self._stored_key())
        )
        if self._client is None or stored != self._client_key:
            # In a thread: if the preload is still importing, we wait without blocking the loop.
            anthropic = await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)
            if self._client is not None and stored == self._client_key:
                # Made by another turn while this one waited for the import (two first
                # prompts at once under `iaccode serve`): a second client would be dropped
                # with its connections open.
                return self._client
            # The SDK reads ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN / ANTHROPIC_BASE_URL itself.
            self._client_key = stored
            self._client = anthropic.AsyncAnthropic(
                api_key=stored
                or (os.environ.get(self._key_variable) if self._key_variable else None),
                base_url=self._base_url,
                max_retries=self._max_retries,
                timeout=anthropic.Timeout(self._timeout, connect=10.0),
                http_client=anthropic.DefaultAsyncHttpxClient(
                    event_hooks={"response": [no_long_retry_waits]}
                ),
            )
        return self._client

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": encodable(sendable(request.messages)),
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = request.tools
        body.update(thinking_config(request.model, request.thinking, request.max_tokens))
        return with_cache_breakpoints(body)

    @asynccontextmanager
    async def stream(
        self, request: ModelRequest, tap: RawTap | None = None
    ) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        client = await self._get_client()
        # Raw SSE lines instead of the SDK's typed events: we need plain dicts for the
        # assembler (shared with the offline provider) and skip building pydantic objects
        # per delta.
        response = client.messages.with_streaming_response.create(**self._body(request))
        async with open_stream(_import_sdk(), response, _raw_events, tap) as events:
            yield events


async def _raw_events(lines: AsyncIterator[str]) -> AsyncGenerator[dict[str, Any], None]:
    async with aclosing(sse_data(lines)) as datas:
        async for data in datas:
            yield json.loads(data)
