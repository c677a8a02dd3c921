"""Serve the agent on stdin/stdout until the editor goes away.

End of input, SIGTERM, SIGINT and SIGHUP all shut down the same way: every running turn is
cancelled, pending answers and updates are written, the agent's temporary folders are removed,
and the process exits 0 within about two seconds. SIGHUP (the terminal of a client such as acpx
closed) is left alone when it was ignored at the start (``nohup``).
"""

from __future__ import annotations

import logging
import signal

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.server.provider import make_provider
from iaccode.server.serve import serve_agent
from iaccode.wire.connection import Connection

log = logging.getLogger(__name__)


async def serve_stdio(config: Config, protocol_in: int, protocol_out: int) -> None:
    """Serve ACP on the two file descriptors (the caller keeps them away from print/logging)."""
    recorder = None
    if config.record_path is not None:
        from iaccode.transcript.recorder import Recorder

        recorder = Recorder(
            config.record_path, model=config.model, home=config.home, provider=config.provider
        )
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


def _stop_signals() -> list[signal.Signals]:
    ignored = signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    return [signal.SIGTERM, signal.SIGINT, *([] if ignored else [signal.SIGHUP])]


async def _stop_on_signal(connection: Connection) -> None:
    with trio.open_signal_receiver(*_stop_signals()) as signals:
        async for signum in signals:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            connection.stop_reading()
            return
