"""A live session: its history, its model, and at most one running turn.

Each prompt runs in its own cancel scope (the turn); ``session/cancel`` and ``session/close``
cancel that scope, and the prompt then answers ``cancelled``. The turn runs inside the prompt
request's task, so a ``$/cancel_request`` for the prompt cancels it the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.protocol.content import ContentBlock
from iaccode.protocol.messages import PromptResponse, Usage
from iaccode.turn.prompt_input import to_model_content
from iaccode.turn.turn import SendUpdate, Turn
from iaccode.wire import errors

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 2.0
"""How long ``close`` waits for a cancelled turn to finish answering."""


class Session:
    def __init__(self, *, session_id: str, cwd: Path, config: Config, provider: Provider,
                 model: str, mcp_servers: list[dict[str, Any]], send_update: SendUpdate) -> None:
        self.id = session_id
        self.cwd = cwd
        self.model = model
        self.mcp_servers = mcp_servers
        """Accepted and kept; not connected to yet."""
        self.history: list[dict[str, Any]] = []
        self._config = config
        self._provider = provider
        self._send_update = send_update
        self._turn: trio.CancelScope | None = None
        self._turn_done = trio.Event()
        self._turn_done.set()

    @property
    def busy(self) -> bool:
        return self._turn is not None

    async def prompt(self, blocks: list[ContentBlock], ready: Callable[[], None]) -> PromptResponse:
        """Run one turn. Calls ``ready()`` once the turn is registered, so a cancel read after
        this prompt finds it.

        Cancellation (``cancel``, ``close``, or of the calling task): answers ``cancelled``
        with the usage so far, after the turn's last update.
        """
        if self._turn is not None:
            raise errors.RpcError(errors.INVALID_PARAMS, "A prompt is already running",
                                  {"params.sessionId": "this session is busy with a prompt; "
                                   "send session/cancel first"})
        scope = self._turn = trio.CancelScope()
        self._turn_done = trio.Event()
        ready()
        turn = Turn(config=self._config, provider=self._provider, model=self.model,
                    history=self.history, send_update=self._send_update)
        stop_reason = None
        try:
            with scope:
                stop_reason = await turn.run(to_model_content(blocks))
        finally:
            self._turn = None
            self._turn_done.set()
        return PromptResponse(stop_reason or "cancelled", _usage(turn))

    def cancel(self) -> None:
        """Cancel the running turn, if any. Never blocks."""
        if self._turn is not None:
            self._turn.cancel()

    async def close(self) -> None:
        """Cancel the running turn and wait (bounded) until it has answered."""
        self.cancel()
        with trio.move_on_after(CLOSE_TIMEOUT):
            await self._turn_done.wait()


def _usage(turn: Turn) -> Usage:
    usage = turn.usage
    inputs = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    return Usage(
        input_tokens=inputs,
        output_tokens=usage.output_tokens,
        total_tokens=inputs + usage.output_tokens,
        cached_read_tokens=usage.cache_read_input_tokens or None,
        cached_write_tokens=usage.cache_creation_input_tokens or None,
    )
