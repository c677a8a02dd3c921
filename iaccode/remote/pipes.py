"""The byte streams a remote connection hands to ``wire.Connection``.

``Inbound`` is what the client sent: each message (a POST body or a WebSocket text frame)
becomes one line. ``Outbound`` takes the lines the connection writes and routes each: the
answer to an ``initialize`` POST goes back in that POST's response; everything else waits in
the connection's outbox (``outbox.py``) for the client's streams, on the one ``routing.py``
picks. When the outbox is full the connection's writer waits, and so, once its own queue is
full, do the agent's sends; if the client does not make room within ``send_timeout``, the
connection is closed (``on_stall``), never a message silently dropped.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import trio

from iaccode.remote.outbox import Outbox, StreamStalled
from iaccode.remote.routing import CONNECTION, Router

log = logging.getLogger(__name__)

INBOUND_BUFFER = 16
"""Client messages queued for the connection's reader before a POST (or frame) waits."""

STREAM_BUFFER = 1024
"""Agent messages queued for the client's streams (all together) before the agent's writer
waits."""


def as_line(body: bytes) -> bytes:
    """One message as one line: JSON is the same with its line breaks as spaces (a raw line
    break inside a string is invalid JSON either way)."""
    return body.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"


class Inbound(trio.abc.ReceiveStream):
    """Client messages, one line each, for ``Connection``'s line reader; EOF once closed."""

    def __init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[bytes](INBOUND_BUFFER)

    async def put(self, body: bytes) -> None:
        """Queue one message (waits while the agent's reader is behind).

        Raises trio.ClosedResourceError once the connection is closing.
        """
        try:
            await self._send.send(as_line(body))
        except trio.BrokenResourceError:
            raise trio.ClosedResourceError from None

    def close(self) -> None:
        """End of input: the connection shuts down as when an editor closes stdin."""
        self._send.close()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            return b""

    async def aclose(self) -> None:
        self._receive.close()


class Outbound(trio.abc.SendStream):
    """Lines the connection writes: the answer to an ``initialize`` POST goes back in that
    POST's response; every other message goes to the outbox, on the stream ``router`` picks
    (without one, a WebSocket's: everything on its one stream)."""

    def __init__(
        self, send_timeout: float, on_stall: Callable[[str], None], router: Router | None = None
    ) -> None:
        self.outbox = Outbox(STREAM_BUFFER, send_timeout, on_stall)
        self.router = router
        self._replies: dict[Any, tuple[trio.Event, list[bytes]]] = {}

    def expect_reply(self, request_id: Any) -> None:
        """Route the answer to ``request_id`` to ``wait_reply`` instead of the stream."""
        self._replies[_key(request_id)] = (trio.Event(), [])

    async def wait_reply(self, request_id: Any) -> bytes | None:
        """The expected answer (None if the connection closed first)."""
        event, box = self._replies[_key(request_id)]
        try:
            await event.wait()
        finally:
            self._replies.pop(_key(request_id), None)
        return box[0] if box else None

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        for line in bytes(data).split(b"\n"):
            if not line:
                continue
            message = None
            if self.router is not None or self._replies:
                with contextlib.suppress(ValueError):  # not JSON: the connection's stream
                    message = json.loads(line)
            if self._replies and self._is_reply(line, message):
                continue
            destination = CONNECTION if self.router is None else self.router.destination(message)
            try:
                await self.outbox.put(line, destination)
            except StreamStalled:
                raise trio.BrokenResourceError("the client stopped reading its stream") from None

    def _is_reply(self, line: bytes, message: Any) -> bool:
        if not isinstance(message, dict) or "method" in message:
            return False
        waiting = self._replies.get(_key(message.get("id")))
        if waiting is None:
            return False
        event, box = waiting
        box.append(line)
        event.set()
        return True

    def close(self) -> None:
        """No more messages: the streams end once the client has read what is queued."""
        for event, _ in self._replies.values():
            event.set()
        self.outbox.close()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()


def _key(request_id: Any) -> tuple[str, Any]:
    return (type(request_id).__name__, request_id)  # 1, True and "1" are different ids
