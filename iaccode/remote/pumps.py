"""Bytes in and out of the ASGI server: a request's body (bounded in size and time), the
outbox's lanes as SSE events or WebSocket frames, WebSocket frames to the agent."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import trio

from iaccode.remote.access import Refusal
from iaccode.remote.outbox import Lane, Outbox

if TYPE_CHECKING:
    from iaccode.remote.connections import RemoteConnection

log = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

KEEPALIVE_EVERY = 15.0
"""Seconds of silence after which an SSE stream gets a comment line (proxies close idle
responses; a dead client shows up as a failed write)."""

SSE_BATCH = 256
"""At most this many queued messages go out in one write of an SSE stream."""


class Body:
    """A request's body as it comes, all of it within ``timeout`` seconds of the first read."""

    def __init__(self, receive: Receive, timeout: float) -> None:
        self._receive = receive
        self._timeout = timeout
        self._deadline: float | None = None
        self.done = False
        self.gone = False

    async def _chunk(self) -> bytes:
        if self._deadline is None:
            self._deadline = trio.current_time() + self._timeout
        with trio.move_on_at(self._deadline):
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.done = self.gone = True
                return b""
            self.done = not message.get("more_body", False)
            return bytes(message.get("body", b""))
        self.done = True  # what is still coming is not read: the answer closes the connection
        raise Refusal(408, f"the body did not arrive within {self._timeout:g} s")

    async def read(self, limit: int) -> bytes:
        """The whole body; 413 past ``limit`` bytes (read on to its end and dropped as it
        comes, so the client gets the answer instead of a reset)."""
        chunks: list[bytes] = []
        size = 0
        while not self.done:
            chunk = await self._chunk()
            size += len(chunk)
            if size <= limit:
                chunks.append(chunk)
            else:
                chunks.clear()
        if self.gone:
            raise Refusal(400, "the client went away while sending")
        if size > limit:
            raise Refusal(413, f"the body is over the limit of {limit} bytes")
        return b"".join(chunks)

    async def drain_some(self, most: int, seconds: float) -> None:
        """Read and drop at most about ``most`` more bytes within ``seconds``."""
        read = 0
        with trio.move_on_after(seconds):
            while not self.done and read <= most:
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    self.done = self.gone = True
                    return
                self.done = not message.get("more_body", False)
                read += len(message.get("body", b""))

    async def drain(self) -> None:
        """Read what is left and drop it (within the time left)."""
        try:
            while not self.done:
                await self._chunk()
        except Refusal:
            pass  # out of time: the refusal being answered stands


async def respond(
    send: Send,
    status: int,
    body: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = (),
    more_body: bool = False,
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body, "more_body": more_body})


async def pump_sse(outbox: Outbox, lane: Lane, send: Send) -> None:
    """``lane``'s messages as SSE events until the outbox closes (or the client goes away)."""
    while True:
        with trio.move_on_after(KEEPALIVE_EVERY) as quiet:
            batch = await outbox.take(lane, SSE_BATCH)
        if quiet.cancelled_caught:
            await send(
                {"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True}
            )
            continue
        if not batch:
            break
        try:
            await send(
                {
                    "type": "http.response.body",
                    "more_body": True,
                    "body": b"".join(b"data: " + item.line + b"\n\n" for item in batch),
                }
            )
        finally:
            outbox.written(batch)  # or lost with a stream that went away while writing
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def pump_websocket(
    remote: RemoteConnection, lane: Lane, send: Send, done: trio.CancelScope
) -> None:
    outbox = remote.outbound.outbox
    while batch := await outbox.take(lane, SSE_BATCH):
        try:
            for item in batch:
                await send({"type": "websocket.send", "text": item.line.decode("utf-8")})
        finally:
            outbox.written(batch)
    await send({"type": "websocket.close", "code": 1000, "reason": remote.closing or ""})
    done.cancel()


async def read_websocket(remote: RemoteConnection, receive: Receive) -> None:
    """Client frames to the agent until the socket closes. Binary frames are ignored (RFD)."""
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if text is None:
            log.debug("connection %s: binary frame ignored", remote.shown)
            continue
        remote.touch()
        try:
            await remote.inbound.put(text.encode("utf-8", "surrogatepass"))
        except trio.ClosedResourceError:
            return
