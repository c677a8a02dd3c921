"""Talk to a remote ACP agent (``iaccode serve``, or any server of the ACP remote-transport RFD)
as if it were a spawned process: ``stdin`` takes JSON-RPC lines, ``stdout`` gives them back.

So the line-based driver (:class:`acp_conformance.driver.AgentConnection`) runs unchanged
over HTTP and WebSocket. Per transport:

- ``http1`` / ``http2`` (httpx; HTTP/2 with prior knowledge over ``http://``): each line is one
  POST (with ``Acp-Connection-Id``, and ``Acp-Session-Id`` when the message names a session);
  the answer to ``initialize`` comes in its POST's response, after which the connection's SSE
  stream (httpx-sse) is read; a JSON-RPC error body of a refused POST is read as a message too.
  Closing stdin sends DELETE; stdout ends when the stream closes.
- ``websocket`` (trio-websocket): each line is one text frame, each frame one line. Closing stdin
  closes the socket.

``wait()`` stands for a process exit: 0 when the connection ended cleanly (DELETE answered 202
and the stream closed, or the WebSocket closed with 1000), 1 otherwise.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncIterator
from typing import Any

import httpx
import trio
from httpx_sse import aconnect_sse
from trio_websocket import ConnectionClosed, WebSocketConnection, connect_websocket_url

TRANSPORTS = ("http1", "http2", "websocket")
CONNECTION_HEADER = "Acp-Connection-Id"
SESSION_HEADER = "Acp-Session-Id"
MAX_MESSAGE = 256 * 1024 * 1024
"""Largest message the client accepts (the server enforces its own limit)."""


class _Stdin:
    def __init__(self, remote: RemoteAgent) -> None:
        self._remote = remote
        self._partial = b""

    async def send_all(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + bytes(data)).split(b"\n")
        for line in lines:
            if line.strip():
                await self._remote.send_message(line)

    async def aclose(self) -> None:
        if self._partial.strip():  # a last line without its newline is still sent
            await self._remote.send_message(self._partial)
        self._partial = b""
        await self._remote.end()


class _Stdout:
    def __init__(self, receive: trio.MemoryReceiveChannel[bytes]) -> None:
        self._receive = receive

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        try:
            return await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    async def aclose(self) -> None:
        self._receive.close()


class RemoteAgent:
    """One remote connection, shaped like ``trio.Process`` (``stdin``, ``stdout``, ``wait``)."""

    pid = None

    def __init__(self, url: str, token: str | None, transport: str, nursery: trio.Nursery,
                 client: httpx.AsyncClient | None) -> None:
        assert transport in TRANSPORTS, transport
        self.url = url
        self.token = token
        self.transport = transport
        self.connection_id: str | None = None
        self.posts: list[tuple[Any, int]] = []
        """(the message, or None when not JSON; the HTTP status) of every POST."""
        self.returncode: int | None = None
        self._nursery = nursery
        self._client = client
        self._socket: WebSocketConnection | None = None
        self._to_stdout, receive = trio.open_memory_channel[bytes](math.inf)
        self.stdin = _Stdin(self)
        self.stdout = _Stdout(receive)
        self._ended = trio.Event()
        self._clean_end = False

    def headers(self, message: Any = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if self.connection_id is not None:
            headers[CONNECTION_HEADER] = self.connection_id
        params = message.get("params") if isinstance(message, dict) else None
        if isinstance(params, dict) and isinstance(params.get("sessionId"), str):
            headers[SESSION_HEADER] = params["sessionId"]
        return headers

    async def send_message(self, line: bytes) -> None:
        if self._socket is not None:
            with contextlib.suppress(ConnectionClosed):
                await self._socket.send_message(line.decode("utf-8", "replace"))
            return
        assert self._client is not None
        try:
            message: Any = json.loads(line)
        except ValueError:
            message = None
        headers = {"Content-Type": "application/json", **self.headers(message)}
        response = await self._client.post(self.url, content=line, headers=headers)
        self.posts.append((message, response.status_code))
        if response.headers.get("content-type", "").startswith("application/json"):
            body = response.content
            if b'"jsonrpc"' in body:  # an answer (initialize) or a refusal of this message
                self._to_stdout.send_nowait(body.strip() + b"\n")
        connection_id = response.headers.get(CONNECTION_HEADER)
        if response.status_code == 200 and connection_id and self.connection_id is None:
            self.connection_id = connection_id
            await self._nursery.start(self._read_sse)

    async def _read_sse(self, task_status: trio.TaskStatus[None]) -> None:
        assert self._client is not None
        headers = {"Accept": "text/event-stream", **self.headers()}
        try:
            async with aconnect_sse(self._client, "GET", self.url, headers=headers,
                                    timeout=httpx.Timeout(30, read=None)) as source:
                source.response.raise_for_status()
                task_status.started()
                async for event in source.aiter_sse():
                    self._to_stdout.send_nowait(event.data.encode() + b"\n")
        except (httpx.HTTPError, trio.BrokenResourceError):
            pass
        finally:
            self._to_stdout.close()
            self._ended.set()

    async def _read_websocket(self) -> None:
        assert self._socket is not None
        try:
            while True:
                frame = await self._socket.get_message()
                data = frame.encode() if isinstance(frame, str) else frame
                self._to_stdout.send_nowait(data + b"\n")
        except ConnectionClosed as closed:
            self._clean_end = closed.reason is not None and closed.reason.code == 1000
        finally:
            self._to_stdout.close()
            self._ended.set()

    async def end(self) -> None:
        """End the connection as a client does (DELETE, or closing the socket)."""
        if self._socket is not None:
            await self._socket.aclose()
            return
        if self.connection_id is None:  # never initialized: nothing to end
            self._clean_end = True
            self._to_stdout.close()
            self._ended.set()
            return
        assert self._client is not None
        response = await self._client.delete(self.url, headers=self.headers())
        self._clean_end = response.status_code == 202

    async def vanish(self) -> None:
        """Go away as a crashed client does: no DELETE, no close frame; the TCP connections
        close when ``connect`` ends."""
        self._ended.set()
        self._clean_end = False
        if self._socket is not None:  # under the WebSocket: its TCP stream (trio-websocket's)
            await self._socket._stream.aclose()

    async def wait(self) -> int:
        await self._ended.wait()
        self.returncode = 0 if self._clean_end else 1
        return self.returncode

    async def _open_websocket(self) -> None:
        url = "ws" + self.url[len("http"):]
        headers = [(b"authorization", f"Bearer {self.token}".encode())] if self.token else []
        self._socket = await connect_websocket_url(self._nursery, url, extra_headers=headers,
                                                   max_message_size=MAX_MESSAGE)
        self.connection_id = dict(self._socket.handshake_headers).get(
            CONNECTION_HEADER.lower().encode(), b"").decode() or None
        self._nursery.start_soon(self._read_websocket)


def http_client(transport: str) -> httpx.AsyncClient:
    """The client for ``http1`` or ``http2`` (prior knowledge: h2c on ``http://``)."""
    if transport == "http2":
        return httpx.AsyncClient(http1=False, http2=True, timeout=30)
    return httpx.AsyncClient(timeout=30)


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None, transport: str = "http2"
                  ) -> AsyncIterator[RemoteAgent]:
    """A remote connection (opened lazily over HTTP, by ``initialize``; at once over WebSocket);
    ended and cleaned up on exit."""
    async with contextlib.AsyncExitStack() as stack:
        nursery = await stack.enter_async_context(trio.open_nursery())
        client = None
        if transport != "websocket":
            client = await stack.enter_async_context(http_client(transport))
        remote = RemoteAgent(url, token, transport, nursery, client)
        if transport == "websocket":
            await remote._open_websocket()
        try:
            yield remote
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                if not remote._ended.is_set():
                    with contextlib.suppress(httpx.HTTPError, ConnectionClosed, OSError):
                        await remote.end()
                # The stream ends by itself after DELETE; cancelling a read instead races with
                # httpcore closing its HTTP/2 connection.
                await remote._ended.wait()
                if remote._socket is not None:
                    with contextlib.suppress(trio.BrokenResourceError, OSError):
                        await remote._socket.aclose()
                        # trio-websocket leaves its TCP stream open when the server closed
                        # the connection without a close frame.
                        await remote._socket._stream.aclose()
            nursery.cancel_scope.cancel()
