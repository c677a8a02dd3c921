"""Serve the agent on stdin/stdout until the editor goes away.

End of input, SIGTERM and SIGINT all shut down the same way: every running turn is cancelled,
pending answers and updates are written, and the process exits 0 within about two seconds.
"""

from __future__ import annotations

import logging
import signal
from typing import TYPE_CHECKING

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.server.agent import Agent
from iaccode.server.provider import make_provider
from iaccode.server.routes import Dispatcher
from iaccode.wire.connection import Connection

if TYPE_CHECKING:
    from iaccode.transcript.recorder import Recorder

log = logging.getLogger(__name__)


async def serve_stdio(config: Config, protocol_in: int, protocol_out: int) -> None:
    """Serve ACP on the two file descriptors (the caller keeps them away from print/logging)."""
    recorder = None
    if config.record_path is not None:
        from iaccode.transcript.recorder import Recorder

        recorder = Recorder(config.record_path, model=config.model, home=config.home,
                            provider=config.provider)
    provider: Provider = make_provider(config, recorder)
    connection = Connection(
        trio.lowlevel.FdStream(protocol_in),
        trio.lowlevel.FdStream(protocol_out),
        max_line_bytes=config.max_line_bytes,
        tap=recorder.connection_tap if recorder is not None else None,
    )
    async with trio.open_nursery() as background:
        # The provider's SDK is imported from the process start (``iaccode/preload.py``).
        background.start_soon(_stop_on_signal, connection)
        await serve_agent(config, provider, connection, recorder=recorder)
        background.cancel_scope.cancel()
    if recorder is not None:
        recorder.close()
    log.info("connection closed; exiting")


async def serve_agent(config: Config, provider: Provider, connection: Connection, *,
                      recorder: Recorder | None = None, close_sessions: bool = False) -> None:
    """Serve one client on ``connection`` with an Agent of its own until the client goes away.

    The agent's sessions live in a nursery of their own, cancelled when this returns. At end of
    input every running turn is cancelled and answered (see ``Connection.serve``); with
    ``close_sessions`` (a remote connection: the process lives on) each session is then
    released on disk, so another connection can load it. Either way every session's file is
    closed once its tasks have ended.
    """
    async with trio.open_nursery() as sessions:
        agent = Agent(config=config, provider=provider, connection=connection,
                      session_nursery=sessions, recorder=recorder)
        await connection.serve(Dispatcher(agent), drain_timeout=config.drain_timeout)
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
