"""The OpenAI-compatible provider (OpenAI, DashScope/Qwen, DeepSeek, OpenRouter, Ollama, any
Chat Completions API), on the official SDK's ``AsyncOpenAI``.

It runs under trio: the SDK sits on httpx (httpx2 in 2.x and later), whose anyio backend
supports trio, and its retry waits are ``anyio.sleep``, so ``session/cancel`` interrupts them
(tests/e2e/test_openai_provider.py drives it through a real ``iaccode acp``).

``openai`` is imported lazily, like ``anthropic``: it costs about a second, and editors wait for
their first session. ``iaccode acp`` imports it in the background (``iaccode/preload.py``);
:meth:`OpenAIProvider.preload` does it in a worker thread (``iaccode serve``).

Requests are Chat Completions with ``stream: true`` and ``stream_options.include_usage``
(``openai_request.py``); the chunks are translated into Anthropic events and assembled by the
same code as the Anthropic provider's (``openai_stream.py``), so the turn loop cannot tell
which provider runs. Retries, cancellation and errors are the Anthropic provider's, in the code
both share (``sdk_stream.py``): the SDK retries 408/409/429/5xx before the stream starts
(``IAC_CODE_MAX_RETRIES``, honouring ``retry-after`` up to a minute); a stream that breaks
midway becomes a ModelError; leaving the stream early closes the HTTP response at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from iaccode.llm.base import MissingCredentials, ModelEvent, ModelRequest, RawTap
from iaccode.llm.openai_request import chat_body
from iaccode.llm.openai_stream import ChunkTranslator
from iaccode.llm.sdk_stream import encodable, no_long_retry_waits, open_stream, sse_data

if TYPE_CHECKING:
    import openai

    from iaccode.llm.providers import Endpoint


DONE = "[DONE]"
"""The data of the stream's last event."""


def _import_sdk() -> Any:
    import openai

    return openai


class OpenAIProvider:
    def __init__(
        self, endpoint: Endpoint, *, default_model: str, max_retries: int, timeout: float
    ) -> None:
        self._endpoint = endpoint
        self._default_model = default_model
        self._max_retries = max_retries
        self._timeout = timeout
        self._client: openai.AsyncOpenAI | None = None
        self._client_key: str | None = None
        """The key the client was built with: a login or logout meanwhile makes a new one."""

    async def preload(self) -> None:
        """Import the SDK in a worker thread so the first prompt does not pay for it."""
        await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)

    def check_credentials(self) -> None:
        problem = self._endpoint.missing(self._default_model)
        if problem is not None:
            raise MissingCredentials(problem)

    async def aclose(self) -> None:
        """Close the HTTP client and its pooled connections (for a process that goes on
        without this provider: ``iaccode acp`` just exits)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def _get_client(self) -> openai.AsyncOpenAI:
        key = self._endpoint.api_key()  # the environment's, else the stored one: read each time
        if self._client is None or key != self._client_key:
            openai = await trio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)
            if self._client is not None and key == self._client_key:
                return self._client  # made by another turn meanwhile (anthropic_provider.py)
            self._client_key = key
            self._client = openai.AsyncOpenAI(
                api_key=key,
                base_url=self._endpoint.base_url,
                max_retries=self._max_retries,
                timeout=openai.Timeout(self._timeout, connect=10.0),
                http_client=openai.DefaultAsyncHttpxClient(
                    event_hooks={"response": [no_long_retry_waits]}
                ),
            )
        return self._client

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        preset = self._endpoint.preset
        body = chat_body(
            request,
            thinking=preset.thinking,
            max_tokens_field=preset.max_tokens_field,
            reasoning_back=preset.reasoning_back,
        )
        body["messages"] = encodable(body["messages"])
        return body

    @asynccontextmanager
    async def stream(
        self, request: ModelRequest, tap: RawTap | None = None
    ) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        client = await self._get_client()
        # The raw response, not the SDK's typed chunks: plain dicts for the translator.
        response = client.chat.completions.with_streaming_response.create(**self._body(request))
        async with open_stream(_import_sdk(), response, _raw_events, tap) as events:
            yield events


async def _raw_events(lines: AsyncIterator[str]) -> AsyncGenerator[dict[str, Any], None]:
    """The chunks of the body, as the Anthropic events they translate into."""
    translator = ChunkTranslator()
    done = False
    async with aclosing(sse_data(lines)) as datas:
        async for data in datas:
            if data.strip() == DONE:
                done = True
                break
            chunk = json.loads(data)
            if not isinstance(chunk, dict):
                raise TypeError(f"a chunk is not an object: {data:.40}")
            for event in translator.feed(chunk):
                yield event
    # Some servers end without [DONE]; a body that ended after the finish reason is complete
    # (a cut one raised above, in the transport).
    if done or translator.finish_reason is not None:
        for event in translator.finish():
            yield event
