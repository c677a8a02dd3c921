"""The offline provider: plays a model script (see ``script.py``) with no network and no key.

Selected with ``IAC_CODE_MODEL_SCRIPT=PATH`` or ``iaccode acp --model-script PATH``. Each model
request takes the next exchange of the script, whatever the request says; all sessions of the
process share one script. Error exchanges become the same ModelErrors the Anthropic provider
raises (without retrying).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from iaccode.llm.assemble import StreamAssembler
from iaccode.llm.base import ModelError, ModelEvent, ModelRequest, RawTap


class ScriptedProvider:
    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        self._exchanges = deque(exchanges)
        self.requests: list[ModelRequest] = []
        """Every request received, in order (what a test or a recording looks at)."""

    def check_credentials(self) -> None:
        return None  # a script needs no key

    @asynccontextmanager
    async def stream(
        self, request: ModelRequest, tap: RawTap | None = None
    ) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        self.requests.append(request)
        if not self._exchanges:
            raise ModelError("The offline model script has no answer left for this request.")
        exchange = self._exchanges.popleft()
        if exchange.get("hang"):
            await trio.sleep_forever()
        if "model_error" in exchange:
            raise ModelError(exchange["model_error"])
        if exchange.get("reset"):
            raise ModelError("Could not reach the model API: the connection was reset.")
        if "status" in exchange:
            body = exchange.get("body")
            error = (body.get("error") if isinstance(body, dict) else None) or {}
            message = error.get("message") if isinstance(error, dict) else None
            raise ModelError(
                f"The model API answered {exchange['status']}" + (f": {message}" if message else "")
            )
        events = self._play(exchange, tap)
        try:
            yield events
        finally:
            await events.aclose()

    async def _play(
        self, exchange: dict[str, Any], tap: RawTap | None
    ) -> AsyncGenerator[ModelEvent, None]:
        assembler = StreamAssembler(tap)
        delay = float(exchange.get("delay") or 0.0)
        cut_after = exchange.get("cut_after")
        for count, raw in enumerate(exchange.get("events", [])):
            if cut_after is not None and count >= cut_after:
                break
            if delay:
                await trio.sleep(delay)
            event = assembler.feed(raw)
            if event is not None:
                yield event
        if exchange.get("then_hang"):
            await trio.sleep_forever()  # recorded as cancelled here: wait for the cancel
        if not assembler.finished:
            raise ModelError("The model's answer broke off before it was complete.")
