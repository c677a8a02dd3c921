"""Remote connections: each one an Agent of its own on a pair of pipes, and the registry.

A connection lives from its creation (an ``initialize`` POST, or a WebSocket upgrade) until it
is closed: by DELETE, by its WebSocket closing, by the server shutting down, by the idle
reaper (no request and no stream for ``idle_timeout``), or because its client stopped reading
(``send_timeout``: then the sockets of its streams are closed too, since a write to a client
that reads nothing never ends). Closing ends its input, so the agent shuts down as when an
editor closes stdin: running turns are cancelled and answered, commands they started are ended,
and its sessions are released on disk (``serve_agent(close_sessions=True)``); the streams end
once the last message is out.

The log names a connection by the first ``SHOWN_ID`` characters of its id: the id is what
lets a token holder use the connection, and logs travel further than tokens.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.remote.listener import Doorman, Peer
from iaccode.remote.pipes import Inbound, Outbound
from iaccode.remote.routing import Router
from iaccode.server.serve import serve_agent
from iaccode.store.store import SessionNotFound, SessionStore
from iaccode.wire.connection import Connection

log = logging.getLogger(__name__)

REAP_EVERY = 1.0
"""Seconds between two looks for idle connections (at most; less for short idle timeouts)."""

SHOWN_ID = 8
"""Characters of a connection id the log shows."""


class RemoteConnection:
    """One client: its pipes, and what the reaper needs to know."""

    def __init__(
        self,
        transport: str,
        peer: str,
        config: Config,
        shut: Callable[[Peer], None] = lambda peer: None,
    ) -> None:
        self.id = str(uuid.uuid4())
        self.shown = self.id[:SHOWN_ID]
        self.transport = transport
        """``http`` (POST + SSE) or ``websocket``."""
        self.peer = peer
        self.inbound = Inbound()
        self.outbound = Outbound(
            config.serve.send_timeout, self._stalled, Router() if transport == "http" else None
        )
        self.stream_peers: list[Peer | None] = []
        """The TCP connections its open streams are on (the SSE GETs, or the WebSocket),
        once per stream (HTTP/2 may carry several on one)."""
        self._shut = shut
        self.busy = 0
        """Requests of this connection being handled right now."""
        self.last_active = trio.current_time()
        self.closing: str | None = None
        """Why the connection is closing (None while it is open)."""
        self.done = trio.Event()

    def touch(self) -> None:
        self.last_active = trio.current_time()

    @property
    def streaming(self) -> bool:
        """A stream (an SSE GET, or the WebSocket) is attached and reading."""
        return self.transport == "websocket" or self.outbound.outbox.streams_open > 0

    def idle_for(self, now: float) -> float:
        return 0.0 if self.streaming or self.busy else now - self.last_active

    def close(self, reason: str, *, warn: bool = False) -> None:
        """End the connection (idempotent, never blocks); ``reason`` goes to the log."""
        if self.closing is not None:
            return
        self.closing = reason
        log.log(
            logging.WARNING if warn else logging.INFO,
            "connection %s (%s, %s) closing: %s",
            self.shown,
            self.transport,
            self.peer,
            reason,
        )
        self.inbound.close()

    def _stalled(self, reason: str) -> None:
        self.close(reason, warn=True)
        for peer in set(self.stream_peers):  # their writes would wait forever
            if peer is not None:
                self._shut(peer)


class ConnectionRegistry:
    """Every open connection, each served in ``nursery`` by an Agent of its own."""

    def __init__(
        self,
        config: Config,
        provider: Provider,
        nursery: trio.Nursery,
        doorman: Doorman | None = None,
    ) -> None:
        self._config = config
        self._provider = provider
        self._nursery = nursery
        self.doorman = doorman or Doorman()
        self._store = SessionStore(config.home / "sessions")
        self._connections: dict[str, RemoteConnection] = {}
        self._empty = trio.Event()
        self._empty.set()

    def open(self, transport: str, peer: str) -> RemoteConnection:
        remote = RemoteConnection(transport, peer, self._config, self.doorman.shut)
        self._connections[remote.id] = remote
        self._empty = trio.Event()
        self._nursery.start_soon(self._serve, remote)
        log.info("connection %s (%s) opened from %s", remote.shown, transport, peer)
        return remote

    def get(self, connection_id: str) -> RemoteConnection | None:
        """The open connection with this id (None: unknown, or closing)."""
        remote = self._connections.get(connection_id)
        return remote if remote is not None and remote.closing is None else None

    async def has_session(self, remote: RemoteConnection, session_id: str) -> bool:
        """The connection holds the session, or could load it (it is on disk): a client may
        open a session's stream before its ``session/load``, as the RFD's resume flow does."""
        router = remote.outbound.router
        if router is not None and session_id in router.sessions:
            return True
        try:
            return await trio.to_thread.run_sync(self._store.exists, session_id)
        except (SessionNotFound, OSError):  # not an id of ours, or the disk says no
            return False

    async def _serve(self, remote: RemoteConnection) -> None:
        connection = Connection(
            remote.inbound, remote.outbound, max_line_bytes=self._config.max_line_bytes
        )
        try:
            await serve_agent(self._config, self._provider, connection, close_sessions=True)
        except Exception:
            log.exception("connection %s failed", remote.shown)
        finally:
            remote.close("its agent ended")
            remote.outbound.close()
            del self._connections[remote.id]
            if not self._connections:
                self._empty.set()
            remote.done.set()
            log.info("connection %s closed", remote.shown)

    async def reap_idle(self) -> None:
        """Close connections idle for longer than ``idle_timeout``; runs until cancelled."""
        timeout = self._config.serve.idle_timeout
        while True:
            await trio.sleep(min(REAP_EVERY, timeout / 4))
            now = trio.current_time()
            for remote in list(self._connections.values()):
                if remote.idle_for(now) > timeout:
                    remote.close(f"no request and no stream open for {timeout:g} s")

    def close_all(self, reason: str) -> None:
        for remote in list(self._connections.values()):
            remote.close(reason)

    async def wait_all_closed(self) -> None:
        await self._empty.wait()
