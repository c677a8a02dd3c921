"""Hypercorn's HTTP protocols on our own accept loop: each TCP connection in a guard of its own.

Hypercorn's ``serve`` runs every connection in the listener's nursery, so an exception out of
its protocol code (an h11 state error after a refused WebSocket upgrade, a frame for an HTTP/2
stream already answered) ended the whole server. Here each connection runs hypercorn's own
``TCPServer`` inside a handler that logs such a failure and closes that connection only.

The ``Doorman`` keeps one record per TCP connection, keyed by the peer address the app sees
in ``scope["client"]``: the app marks a connection trusted once a request on it passed the
token check. At most ``MAX_UNTRUSTED`` connections that have not are held at once: a new one
past that closes the oldest (a client with the token sends it in its first request, within
milliseconds, so it is never the oldest for long). Hypercorn's ``keep_alive_timeout`` bounds
how long a connection may take to send its first request's headers. The doorman can also
close a connection's socket from outside, for a client that stopped reading: a write to it
waits in hypercorn's shielded ``send_all`` that no cancellation ends.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.config import Sockets

log = logging.getLogger(__name__)

MAX_UNTRUSTED = 128
"""TCP connections held at once that have not yet sent a request with the right token."""

EVICTION_PAUSE = 0.005
"""Seconds the accept loop waits after closing a connection to make room: a flood of them
then costs a bounded share of the server's time, and a client with the token that came in
the middle gets its headers read."""

Peer = tuple[str, int]


class _Door:
    """One TCP connection: its socket, and whether it has shown the token."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.trusted = False
        self.shut_down = False

    def shut(self) -> None:
        """Close the socket now: a task blocked writing to it gets ClosedResourceError."""
        self.shut_down = True
        self.stream.socket.close()


class Doorman:
    """The TCP connections being served, by peer address; the cap on untrusted ones."""

    def __init__(self, max_untrusted: int = MAX_UNTRUSTED) -> None:
        self._max_untrusted = max_untrusted
        self._doors: dict[Peer, _Door] = {}
        """In the order they came (dicts keep it): the first untrusted one is the oldest."""
        self._empty = trio.Event()
        self.evicted = 0

    def enter(self, peer: Peer, stream: trio.SocketStream) -> bool:
        """Note a new connection; True when the oldest untrusted one was closed for it."""
        self._doors[peer] = _Door(stream)
        untrusted = [door for door in self._doors.values() if not (door.trusted or door.shut_down)]
        if len(untrusted) > self._max_untrusted:
            self.evicted += 1
            if self.evicted == 1 or self.evicted % 1000 == 0:
                log.warning(
                    "more than %d connections without the token at once; closing the "
                    "oldest (%d closed so far)",
                    self._max_untrusted,
                    self.evicted,
                )
            untrusted[0].shut()
            return True
        return False

    def leave(self, peer: Peer) -> None:
        self._doors.pop(peer, None)
        if not self._doors:
            self._empty.set()
            self._empty = trio.Event()

    async def wait_empty(self) -> None:
        if self._doors:
            await self._empty.wait()

    def shut_all(self) -> None:
        for door in list(self._doors.values()):
            door.shut()

    def trust(self, peer: Peer | None) -> None:
        """A request on this connection passed the token check."""
        door = self._doors.get(peer) if peer is not None else None
        if door is not None:
            door.trusted = True

    def shut(self, peer: Peer | None) -> None:
        """Close the socket of this connection (nothing if it is gone)."""
        door = self._doors.get(peer) if peer is not None else None
        if door is not None:
            door.shut()


def bind_sockets(settings: HypercornConfig) -> Sockets:
    """The listening sockets (OSError: the port is taken, the address is not ours)."""
    sockets = settings.create_sockets()
    for sock in sockets.insecure_sockets:
        sock.listen(settings.backlog)
    return sockets


def _address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if sock.family == socket.AF_INET6 else f"http://{host}:{port}"


async def serve_guarded(
    app: Callable[..., Awaitable[None]],
    settings: HypercornConfig,
    sockets: Sockets,
    doorman: Doorman,
    shutdown_trigger: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``sockets`` until ``shutdown_trigger`` returns, then give open
    connections ``graceful_timeout`` to finish."""
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import wrap_app

    wrapped = wrap_app(app, settings.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)

    async def handle(stream: trio.SocketStream, peer: Peer) -> None:
        try:
            # (hypercorn's annotation says SSLStream; it serves plain sockets the same way)
            server = TCPServer(wrapped, settings, context, ConnectionState({}), stream)  # type: ignore[arg-type]
            await server.run()
        except Exception as exc:  # hypercorn's protocol code failed for this connection only
            log.info(
                "connection from %s:%d ended by an error in the HTTP layer: %s",
                peer[0],
                peer[1],
                _described(exc),
            )
            log.debug("the HTTP layer's error", exc_info=True)
        finally:
            doorman.leave(peer)
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(stream)

    listeners = [
        trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        for sock in sockets.insecure_sockets
    ]
    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            for listener in listeners:
                accepting.start_soon(_accept, listener, doorman, handle, connections)
            task_status.started([_address(sock) for sock in sockets.insecure_sockets])
            await shutdown_trigger()
            accepting.cancel_scope.cancel()
        await context.terminated.set()  # idle keep-alive connections close, HTTP/2 ones refuse
        with trio.move_on_after(settings.graceful_timeout):
            await doorman.wait_empty()
        doorman.shut_all()  # a write to a client that reads nothing fails now
        connections.cancel_scope.cancel()


ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
"""accept(2) errors that say the process or the machine is out of room for now."""


async def _accept(
    listener: trio.SocketListener,
    doorman: Doorman,
    handle: Callable[[trio.SocketStream, Peer], Awaitable[None]],
    connections: trio.Nursery,
) -> None:
    """Accept until cancelled. Each connection enters the doorman as soon as it is accepted
    (not when its task first runs), so a burst of them cannot hold more than the cap."""
    out_of_room = 0
    async with listener:
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                    raise
                out_of_room += 1
                if out_of_room == 1 or out_of_room % 100 == 0:
                    log.warning(
                        "cannot accept a connection: %s (%d times so far)",
                        os.strerror(exc.errno),
                        out_of_room,
                    )
                await trio.sleep(0.1)
                continue
            try:
                peer: Peer = tuple(stream.socket.getpeername()[:2])
            except OSError:  # gone before we looked
                await trio.aclose_forcefully(stream)
                continue
            crowded = doorman.enter(peer, stream)
            connections.start_soon(handle, stream, peer)
            if crowded:
                await trio.sleep(EVICTION_PAUSE)


def _described(exc: BaseException) -> str:
    """``Type: message`` of the first error inside nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
