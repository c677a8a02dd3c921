"""A live session: its history, its model, its nursery, and at most one running turn.

Each session owns a trio nursery (``serve``); each prompt's turn runs there in its own cancel
scope. ``session/cancel`` and ``session/close`` cancel that scope and the prompt then answers
``cancelled``; a ``$/cancel_request`` for the prompt request cancels the same scope and the
request answers -32800. Either way the answer goes out after the turn's last update.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.protocol.content import ContentBlock
from iaccode.protocol.messages import (
    ClientCapabilities,
    CurrentModeUpdate,
    PromptResponse,
    StopReason,
    Usage,
)
from iaccode.session.client_access import ClientFiles, ClientTerminal
from iaccode.tools.base import FileAccess
from iaccode.tools.local_files import LocalFiles
from iaccode.tools.registry import builtin_tools
from iaccode.turn.env import Request, SendUpdate, TurnEnv
from iaccode.turn.permissions import MODES
from iaccode.turn.prompt_input import to_model_content
from iaccode.turn.subagent import SubAgent
from iaccode.turn.turn import Turn
from iaccode.wire import errors

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 2.0
"""How long ``close`` waits for a cancelled turn to finish answering."""


class Session:
    def __init__(self, *, session_id: str, cwd: Path, config: Config, provider: Provider,
                 model: str, mcp_servers: list[dict[str, Any]], send_update: SendUpdate,
                 request: Request, client: ClientCapabilities) -> None:
        self.id = session_id
        self.cwd = Path(os.path.realpath(cwd))
        self.model = model
        self.mode = "default"
        self.remembered: dict[str, bool] = {}
        """Permission answers that hold for the session: tool name -> allow (True) / reject."""
        self.mcp_servers = mcp_servers
        """Accepted and kept; not connected to yet."""
        self.history: list[dict[str, Any]] = []
        self._config = config
        self._provider = provider
        self._send_update = send_update
        self._request = request
        local = LocalFiles(max_bytes=config.tool_limits.read_max_bytes)
        fs = client.fs
        self._files: FileAccess = (
            ClientFiles(request, session_id, local, read=fs.read_text_file,
                        write=fs.write_text_file)
            if fs.read_text_file or fs.write_text_file else local)
        self._terminal = ClientTerminal(request, session_id) if client.terminal else None
        self._turn: trio.CancelScope | None = None
        self._turn_done = trio.Event()
        self._turn_done.set()
        self._nursery: trio.Nursery | None = None
        self._serve_scope = trio.CancelScope()

    def _turn_env(self) -> TurnEnv:
        tools = builtin_tools()
        sub_agent = SubAgent({name: tool for name, tool in tools.items() if tool.read_only})
        tools[sub_agent.name] = sub_agent
        env = TurnEnv(
            config=self._config, provider=self._provider, model=self.model, session_id=self.id,
            cwd=self.cwd, send_update=self._send_update, request=self._request,
            files=self._files, terminal=self._terminal, tools=tools, mode=lambda: self.mode,
            remembered=self.remembered, limits=self._config.tool_limits, cancel_turn=self.cancel)
        sub_agent.bind(env)
        return env

    async def set_mode(self, mode_id: str) -> None:
        """Switch mode and tell the editor (``current_mode_update``). Takes effect at once,
        for the running turn's next tool call too."""
        if mode_id not in MODES:
            raise errors.invalid_params({"params.modeId": (
                f"unknown mode {mode_id!r}; the modes are {', '.join(MODES)}")})
        self.mode = mode_id
        await self._send_update(CurrentModeUpdate(mode_id))

    @property
    def busy(self) -> bool:
        return self._turn is not None

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                    ) -> None:
        """Own the session's nursery until ``close``. Turns run in it."""
        with self._serve_scope:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()

    async def prompt(self, blocks: list[ContentBlock], ready: Callable[[], None]) -> PromptResponse:
        """Run one turn in the session's nursery and wait for it.

        Calls ``ready()`` once the turn is registered, so a cancel read after this prompt
        finds it. Cancellation (``cancel``, ``close``): answers ``cancelled`` with the usage
        so far. Cancelling the calling task cancels the turn, waits for it, and re-raises.
        Errors: a bug in the turn is re-raised here (the request answers -32603).
        """
        if self._turn is not None:
            raise errors.RpcError(errors.INVALID_PARAMS, "A prompt is already running",
                                  {"params.sessionId": "this session is busy with a prompt; "
                                   "send session/cancel first"})
        if self._nursery is None:
            raise RuntimeError("Session.serve must be started before prompts")
        scope = self._turn = trio.CancelScope()
        finished = self._turn_done = trio.Event()
        ready()
        turn = Turn(self._turn_env(), self.history)
        content = to_model_content(blocks)
        stop_reason: list[StopReason] = []
        failure: list[Exception] = []

        async def run_turn() -> None:
            try:
                with scope:
                    stop_reason.append(await turn.run(content))
            except Exception as exc:  # handed to the prompt's task, which reports it
                failure.append(exc)
            finally:
                self._turn = None
                finished.set()

        self._nursery.start_soon(run_turn)
        try:
            await finished.wait()
        except trio.Cancelled:
            scope.cancel()
            with trio.CancelScope(shield=True):
                await finished.wait()
            raise
        if failure:
            raise failure[0]
        return PromptResponse(stop_reason[0] if stop_reason else "cancelled", _usage(turn))

    def cancel(self) -> None:
        """Cancel the running turn, if any. Never blocks."""
        if self._turn is not None:
            self._turn.cancel()

    async def close(self) -> None:
        """Cancel the running turn, wait (bounded) until it has answered, end the nursery."""
        self.cancel()
        with trio.move_on_after(CLOSE_TIMEOUT):
            await self._turn_done.wait()
        self._serve_scope.cancel()


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
