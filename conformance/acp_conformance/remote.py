"""Talk to a remote ACP agent (any server of the ACP remote-transport RFD)
as if it were a spawned process: ``stdin`` takes JSON-RPC lines, ``stdout`` gives them back.

So the line-based driver (:class:`acp_conformance.driver.AgentConnection`) runs unchanged
over HTTP and WebSocket. Per transport:

- ``http1`` / ``http2`` (httpx; HTTP/2 with prior knowledge over ``http://``): each line is one
  POST (with ``Acp-Connection-Id``, and ``Acp-Session-Id`` when the message names a session);
  the answer to ``initialize`` comes in its POST's response, after which the connection-scoped
  SSE stream (httpx-sse) is read; a JSON-RPC error body of a refused POST is read as a message
  too. As the RFD of 2026-05-04 has it, each session then gets a session-scoped stream
  (``Acp-Connection-Id`` + ``Acp-Session-Id``), opened when the answer that gives the session
  to this connection arrives (session/new, fork, load, resume) and before that answer is
  passed on, so what the session sends after it comes on its own stream. (Opened after
  load's answer, not before: the replay then comes on the connection's stream, ahead of the
  answer, in one order; the RFD puts no order between two streams.) Every message read is
  kept in ``arrivals`` with the stream it came on. Closing stdin sends DELETE; stdout ends
  when the connection's stream closes.
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
from dataclasses import dataclass
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


ATTACHING = frozenset({"session/load", "session/resume"})
"""Requests whose answer gives the connection the session their params name."""


def _session_of(message: Any) -> str | None:
    params = message.get("params") if isinstance(message, dict) else None
    session = params.get("sessionId") if isinstance(params, dict) else None
    return session if isinstance(session, str) else None


def _key(request_id: Any) -> tuple[str, Any]:
    return (type(request_id).__name__, request_id)


@dataclass(frozen=True)
class Arrival:
    """One message as read from a stream (what tests of the streams check, no more)."""

    stream: str | None
    """The session of the session-scoped stream it came on; None: the connection's."""
    method: str | None
    id: Any
    session: str | None
    """The session its params name."""

    @classmethod
    def of(cls, stream: str | None, message: Any) -> Arrival:
        if not isinstance(message, dict):
            return cls(stream, None, None, None)
        method = message.get("method")
        return cls(
            stream,
            method if isinstance(method, str) else None,
            message.get("id"),
            _session_of(message),
        )


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

    def __init__(
        self,
        url: str,
        token: str | None,
        transport: str,
        nursery: trio.Nursery,
        client: httpx.AsyncClient | None,
        session_streams: bool = True,
    ) -> None:
        assert transport in TRANSPORTS, transport
        self.url = url
        self.token = token
        self.transport = transport
        self.connection_id: str | None = None
        self.posts: list[tuple[Any, int]] = []
        """(the message, or None when not JSON; the HTTP status) of every POST."""
        self.session_streams = session_streams and transport != "websocket"
        """Open a session-scoped stream for each session (the RFD's HTTP clients do)."""
        self.streams: dict[str, int] = {}
        """Session id -> the status its session-scoped stream's GET was answered with."""
        self.arrivals: list[Arrival] = []
        """What came on which stream, message by message (HTTP only)."""
        self._open_streams: set[str] = set()
        self._attaching: dict[Any, str] = {}
        """The id of a session/load or session/resume sent -> its session."""
        self.returncode: int | None = None
        self._nursery = nursery
        self._client = client
        self._socket: WebSocketConnection | None = None
        self._to_stdout, receive = trio.open_memory_channel[bytes](math.inf)
        self.stdin = _Stdin(self)
        self.stdout = _Stdout(receive)
        self._ended = trio.Event()
        self._clean_end = False

    def headers(self, message: Any = None, session: str | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if self.connection_id is not None:
            headers[CONNECTION_HEADER] = self.connection_id
        session = session or _session_of(message)
        if session is not None:
            headers[SESSION_HEADER] = session
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
        session = _session_of(message)
        if session is not None and message.get("method") in ATTACHING:
            self._attaching[_key(message.get("id"))] = session
        response = await self._client.post(self.url, content=line, headers=headers)
        self.posts.append((message, response.status_code))
        if response.headers.get("content-type", "").startswith("application/json"):
            body = response.content
            if b'"jsonrpc"' in body:  # an answer (initialize) or a refusal of this message
                self._to_stdout.send_nowait(body.strip() + b"\n")
        connection_id = response.headers.get(CONNECTION_HEADER)
        if response.status_code == 200 and connection_id and self.connection_id is None:
            self.connection_id = connection_id
            await self._nursery.start(self._read_sse, None)

    async def _read_sse(
        self, session: str | None, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Read one stream (the connection's, or ``session``'s) into stdout; started once its
        GET is answered. The end of the connection's stream ends stdout; a session's stream
        may end alone."""
        assert self._client is not None
        headers = {"Accept": "text/event-stream", **self.headers(session=session)}
        started = False
        try:
            async with aconnect_sse(
                self._client, "GET", self.url, headers=headers, timeout=httpx.Timeout(30, read=None)
            ) as source:
                status = source.response.status_code
                if session is not None:
                    self.streams[session] = status
                    if status == 200:
                        self._open_streams.add(session)
                task_status.started()
                started = True
                if status != 200:
                    return
                async for event in source.aiter_sse():
                    await self._arrived(session, event.data.encode())
        except (httpx.HTTPError, trio.BrokenResourceError):
            pass
        finally:
            if not started:
                task_status.started()
            if session is None:
                self._to_stdout.close()
                self._ended.set()
            else:
                self._open_streams.discard(session)

    async def _arrived(self, stream: str | None, data: bytes) -> None:
        try:
            message: Any = json.loads(data)
        except ValueError:
            message = None
        self.arrivals.append(Arrival.of(stream, message))
        opened = self._session_given(message)
        if opened is not None and opened not in self._open_streams and self.session_streams:
            await self.open_session_stream(opened)
        self._to_stdout.send_nowait(data + b"\n")

    def _session_given(self, message: Any) -> str | None:
        """The session an answer gives this connection (new, fork: its result; load,
        resume: the one they named), else None."""
        if not isinstance(message, dict) or "method" in message:
            return None
        attached = self._attaching.pop(_key(message.get("id")), None)
        result = message.get("result")
        if not isinstance(result, dict):
            return None  # an error: nothing given
        if isinstance(result.get("sessionId"), str):
            return str(result["sessionId"])
        return attached

    async def open_session_stream(self, session: str) -> int:
        """Open ``session``'s session-scoped stream (read into stdout like the connection's);
        the status the server answered its GET with."""
        await self._nursery.start(self._read_sse, session)
        return self.streams.get(session, 0)

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
        url = "ws" + self.url[len("http") :]
        headers = [(b"authorization", f"Bearer {self.token}".encode())] if self.token else []
        self._socket = await connect_websocket_url(
            self._nursery, url, extra_headers=headers, max_message_size=MAX_MESSAGE
        )
        self.connection_id = (
            dict(self._socket.handshake_headers)
            .get(CONNECTION_HEADER.lower().encode(), b"")
            .decode()
            or None
        )
        self._nursery.start_soon(self._read_websocket)


def http_client(transport: str) -> httpx.AsyncClient:
    """The client for ``http1`` or ``http2`` (prior knowledge: h2c on ``http://``)."""
    if transport == "http2":
        return httpx.AsyncClient(http1=False, http2=True, timeout=30)
    return httpx.AsyncClient(timeout=30)


@contextlib.asynccontextmanager
async def connect(
    url: str, token: str | None, transport: str = "http2", session_streams: bool = True
) -> AsyncIterator[RemoteAgent]:
    """A remote connection (opened lazily over HTTP, by ``initialize``; at once over WebSocket);
    ended and cleaned up on exit. ``session_streams=False``: a client of before the RFD's
    revision of 2026-05-04, which reads everything on the connection's stream."""
    async with contextlib.AsyncExitStack() as stack:
        nursery = await stack.enter_async_context(trio.open_nursery())
        client = None
        if transport != "websocket":
            client = await stack.enter_async_context(http_client(transport))
        remote = RemoteAgent(url, token, transport, nursery, client, session_streams)
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
