"""Serve the agent on stdin/stdout until the editor goes away.

End of input, SIGTERM and SIGINT all shut down the same way: every running turn is cancelled,
pending answers and updates are written, and the process exits 0 within about two seconds.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.llm.providers import make_provider
from iaccode.server.agent import Agent
from iaccode.server.handshake import Answered, Early
from iaccode.server.routes import Dispatcher
from iaccode.wire.connection import Connection
from iaccode.wire.encode import dumps_line
from iaccode.wire.errors import RpcError

if TYPE_CHECKING:
    from iaccode.transcript.recorder import Recorder

log = logging.getLogger(__name__)


async def serve_stdio(config: Config, protocol_in: int, protocol_out: int,
                      early: Early | None = None) -> None:
    """Serve ACP on the two file descriptors (the caller keeps them away from print/logging),
    taking over from the early handshake (``handshake.answer_early``) when it ran."""
    recorder = None
    if config.record_path is not None:
        from iaccode.transcript.recorder import Recorder

        recorder = Recorder(config.record_path, model=config.model, home=config.home,
                            provider=config.provider)
    provider: Provider = make_provider(config, recorder)
    receive: trio.abc.ReceiveStream = trio.lowlevel.FdStream(protocol_in)
    if early is not None and early.unread:
        receive = ReadFirst(early.unread, receive)
    connection = Connection(
        receive,
        trio.lowlevel.FdStream(protocol_out),
        max_line_bytes=config.max_line_bytes,
        tap=recorder.connection_tap if recorder is not None else None,
    )
    async with trio.open_nursery() as background:

        def on_initialized() -> None:
            preload = getattr(provider, "preload", None)
            if preload is not None:
                background.start_soon(preload)

        background.start_soon(_stop_on_signal, connection)
        await serve_agent(config, provider, connection, on_initialized=on_initialized,
                          recorder=recorder,
                          answered=early.answered if early is not None else None)
        background.cancel_scope.cancel()
    if recorder is not None:
        recorder.close()
    log.info("connection closed; exiting")


async def serve_agent(config: Config, provider: Provider, connection: Connection, *,
                      on_initialized: Callable[[], None] = lambda: None,
                      recorder: Recorder | None = None, close_sessions: bool = False,
                      answered: Answered | None = None) -> None:
    """Serve one client on ``connection`` with an Agent of its own until the client goes away.

    ``answered``: the ``initialize`` the early handshake answered, which the agent then handles
    first (its answer is not sent again).

    The agent's sessions live in a nursery of their own, cancelled when this returns. At end of
    input every running turn is cancelled and answered (see ``Connection.serve``); with
    ``close_sessions`` (a remote connection: the process lives on) each session is then
    released on disk, so another connection can load it. Either way every session's file is
    closed once its tasks have ended.
    """
    async with trio.open_nursery() as sessions:
        agent = Agent(config=config, provider=provider, connection=connection,
                      session_nursery=sessions, on_initialized=on_initialized,
                      recorder=recorder)
        dispatcher = Dispatcher(agent)
        if answered is not None:
            await _initialize_as_answered(dispatcher, answered)
        await connection.serve(dispatcher, drain_timeout=config.drain_timeout)
        agent.save_all()
        if close_sessions:
            for session in list(agent.sessions.values()):
                await session.close()
        sessions.cancel_scope.cancel()
    for session in agent.sessions.values():
        session.release()


async def _stop_on_signal(connection: Connection) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            connection.stop_reading()
            return


async def _initialize_as_answered(dispatcher: Dispatcher, answered: Answered) -> None:
    """Initialize the agent with the params the early handshake answered, through the same
    route as any ``initialize``, and check that its answer is the one sent."""
    if answered.write_error is not None:
        log.warning("the early answer to initialize could not be written: %s",
                    answered.write_error)
    try:
        result = await dispatcher.handle_request("initialize", answered.params, lambda: None)
        line = dumps_line({"jsonrpc": "2.0", "id": answered.request_id, "result": result})
    except RpcError as exc:
        line = f"error {exc.code} {exc.message} {exc.data}".encode()
    if line != answered.line:
        log.error("the early answer to initialize differs from the server's (a bug): sent "
                  "%r, the server's is %r", answered.line, line)
    else:
        log.debug("initialize was answered before start-up")


class ReadFirst(trio.abc.ReceiveStream):
    """``first``, then what ``stream`` receives: stdin after the early handshake read part
    of it."""

    def __init__(self, first: bytes, stream: trio.abc.ReceiveStream) -> None:
        self._first = first
        self._stream = stream

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if not self._first:
            return await self._stream.receive_some(max_bytes)
        await trio.lowlevel.checkpoint()
        size = len(self._first) if max_bytes is None else max_bytes
        data, self._first = self._first[:size], self._first[size:]
        return data

    async def aclose(self) -> None:
        await self._stream.aclose()
