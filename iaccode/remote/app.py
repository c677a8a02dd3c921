"""The ASGI app: one endpoint, ``/acp``, as the ACP remote-transport RFD routes it.

    POST   initialize, no Acp-Connection-Id   -> a new connection; 200, the answer, the header
    POST   anything else                       -> 202 at once; the answer comes on the stream
    GET    Accept: text/event-stream           -> the connection's SSE stream (one at a time)
    GET    Upgrade: websocket                  -> a new connection over a WebSocket
    DELETE                                     -> 202; the connection ends, its stream closes

Every request first passes the origin check (403: a browser page of another site) and the
bearer token (401). Then: 404 another path or an unknown connection, 405 another method, 400 a
missing Acp-Connection-Id (or a session-scoped message without its Acp-Session-Id) or a body
that is not JSON, 406 a GET that does not accept ``text/event-stream``, 415 a POST that is not
``application/json``, 413 a body over ``max_body_bytes``, 501 a JSON-RPC batch, 409 a second
stream for one connection. Refusals of a JSON-RPC message carry a JSON-RPC error body (with
the request's id), so a client can fail that request.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import trio

from iaccode.config import ServeSettings
from iaccode.remote.connections import ConnectionRegistry, RemoteConnection
from iaccode.wire import errors

log = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

ENDPOINT = "/acp"
CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"

INITIALIZE_TIMEOUT = 30.0
"""Seconds an ``initialize`` POST waits for the agent's answer."""

KEEPALIVE_EVERY = 15.0
"""Seconds of silence after which the SSE stream gets a comment line (proxies close idle
responses; a dead client shows up as a failed write)."""

SSE_BATCH = 256
"""At most this many queued messages go out in one write of the SSE stream."""

# Every request's body is read to its end before the answer, an over-long one dropped as it
# comes: a client still sending gets its answer instead of a reset, and Hypercorn 0.18's HTTP/2
# stream fails on data for a stream that was already answered (a KeyError that ends the server).


class Refusal(Exception):
    """An HTTP error answer: status, text, and for JSON-RPC refusals the error body's fields."""

    def __init__(self, status: int, text: str, *, rpc_code: int | None = None,
                 request_id: Any = None, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.rpc_code = rpc_code
        self.request_id = request_id
        self.headers = list(headers)

    def body(self) -> tuple[bytes, bytes]:
        """(content type, body)."""
        if self.rpc_code is None:
            return b"text/plain; charset=utf-8", self.text.encode() + b"\n"
        message = {"jsonrpc": "2.0", "id": self.request_id,
                   "error": {"code": self.rpc_code, "message": self.text}}
        return b"application/json", json.dumps(message).encode()


def _headers(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        found[key] = f"{found[key]}, {text}" if key in found else text
    return found


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"


def _request_id(message: Any) -> Any:
    """The id of a request (for an error body), else None."""
    if isinstance(message, dict) and "method" in message:
        request_id = message.get("id")
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            return request_id
    return None


class AcpApp:
    """Route ``/acp`` requests to the connections of ``registry``."""

    def __init__(self, registry: ConnectionRegistry, settings: ServeSettings, token: str) -> None:
        self._registry = registry
        self._settings = settings
        self._token = token.encode()
        self._origins: set[str] = set(settings.allowed_origins)

    def allow_own_origins(self, urls: Iterable[str]) -> None:
        """Pages served from our own address may call us (``http://127.0.0.1:8765``, ...)."""
        for url in urls:
            scheme, _, address = url.partition("://")
            self._origins.add(f"{scheme}://{address}".lower())
            host, _, port = address.rpartition(":")
            if host in ("127.0.0.1", "[::1]"):
                self._origins.add(f"{scheme}://localhost:{port}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "lifespan":
            await _lifespan(receive, send)

    # -- checks every request passes ---------------------------------------------------------

    def _check_access(self, scope: Scope, headers: dict[str, str]) -> None:
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self._origins:
            raise Refusal(403, f"origin {origin!r} may not use this server")
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode("utf-8", "replace"), self._token):
            raise Refusal(401, "missing or wrong bearer token",
                          headers=[(b"www-authenticate", b'Bearer realm="iaccode"')])
        if scope.get("path") != ENDPOINT:
            raise Refusal(404, f"no such endpoint; ACP is served on {ENDPOINT}")

    def _connection(self, headers: dict[str, str], request_id: Any = None) -> RemoteConnection:
        connection_id = headers.get(CONNECTION_HEADER)
        if not connection_id:
            raise Refusal(400, "missing the Acp-Connection-Id header (POST initialize first)",
                          rpc_code=errors.INVALID_REQUEST, request_id=request_id)
        remote = self._registry.get(connection_id.strip())
        if remote is None:
            raise Refusal(404, f"unknown or closed connection {connection_id!r}",
                          rpc_code=errors.INVALID_REQUEST, request_id=request_id)
        return remote

    # -- HTTP --------------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        body = _Body(receive)
        try:
            self._check_access(scope, headers)
            method = scope["method"]
            if method == "POST":
                await self._post(scope, headers, body, send)
            elif method == "GET":
                await body.drain()
                await self._stream(headers, receive, send)
            elif method == "DELETE":
                await body.drain()
                remote = self._connection(headers)
                remote.close("the client sent DELETE")
                await _respond(send, 202)
            else:
                raise Refusal(405, f"method {method} is not served here",
                              headers=[(b"allow", b"GET, POST, DELETE")])
        except Refusal as refusal:
            log.info("%s %s from %s: %d %s", scope["method"], scope.get("path"), _peer(scope),
                     refusal.status, refusal.text)
            await body.drain()
            content_type, text = refusal.body()
            await _respond(send, refusal.status, text,
                           [(b"content-type", content_type), *refusal.headers])

    async def _read_body(self, receive: _Body) -> bytes:
        limit = self._settings.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        while not receive.done:
            chunk = await receive.chunk()
            size += len(chunk)
            if size <= limit:
                chunks.append(chunk)
            else:
                chunks.clear()  # over the limit: drop it as it comes, read on to the end
        if receive.gone:
            raise Refusal(400, "the client went away while sending")
        if size > limit:
            raise Refusal(413, f"the body is over the limit of {limit} bytes")
        return b"".join(chunks)

    async def _post(self, scope: Scope, headers: dict[str, str], receive: _Body,
                    send: Send) -> None:
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise Refusal(415, "the body must be application/json")
        body = await self._read_body(receive)
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise Refusal(400, f"Parse error: {str(exc)[:200]}",
                          rpc_code=errors.PARSE_ERROR) from None
        if isinstance(message, list):
            raise Refusal(501, "JSON-RPC batches are not supported",
                          rpc_code=errors.INVALID_REQUEST)
        request_id = _request_id(message)
        if CONNECTION_HEADER not in headers and isinstance(message, dict) \
                and message.get("method") == "initialize" and request_id is not None:
            await self._initialize(scope, body, request_id, send)
            return
        remote = self._connection(headers, request_id)
        self._check_session_header(message, headers, request_id)
        remote.busy += 1
        try:
            remote.touch()
            await remote.inbound.put(body)
        except trio.ClosedResourceError:
            raise Refusal(404, f"connection {remote.id} is closing",
                          rpc_code=errors.INVALID_REQUEST, request_id=request_id) from None
        finally:
            remote.busy -= 1
            remote.touch()
        await _respond(send, 202)

    @staticmethod
    def _check_session_header(message: Any, headers: dict[str, str], request_id: Any) -> None:
        """A message about a session (``params.sessionId``) names it in Acp-Session-Id too."""
        params = message.get("params") if isinstance(message, dict) else None
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            return
        given = headers.get(SESSION_HEADER)
        if given is None:
            raise Refusal(400, "a message about a session needs the Acp-Session-Id header",
                          rpc_code=errors.INVALID_REQUEST, request_id=request_id)
        if given.strip() != session_id:
            raise Refusal(400, f"Acp-Session-Id {given!r} is not the message's sessionId "
                          f"{session_id!r}", rpc_code=errors.INVALID_REQUEST,
                          request_id=request_id)

    async def _initialize(self, scope: Scope, body: bytes, request_id: Any, send: Send) -> None:
        remote = self._registry.open("http", _peer(scope))
        remote.busy += 1
        try:
            remote.outbound.expect_reply(request_id)
            await remote.inbound.put(body)
            with trio.move_on_after(INITIALIZE_TIMEOUT):
                answer = await remote.outbound.wait_reply(request_id)
        finally:
            remote.busy -= 1
            remote.touch()
        if answer is None:
            remote.close("initialize was not answered")
            raise Refusal(503, "the agent did not answer initialize",
                          rpc_code=errors.INTERNAL_ERROR, request_id=request_id)
        extra = [(CONNECTION_HEADER.encode(), remote.id.encode())]
        if b'"error"' in answer and "error" in json.loads(answer):
            remote.close("initialize was answered with an error")
            extra = []
        await _respond(send, 200, answer, [(b"content-type", b"application/json"), *extra])

    async def _stream(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        accepted = [part.split(";")[0].strip().lower()
                    for part in headers.get("accept", "").split(",")]
        if "text/event-stream" not in accepted:
            raise Refusal(406, "GET /acp is the event stream: Accept text/event-stream")
        remote = self._connection(headers)
        if remote.streaming:
            raise Refusal(409, f"connection {remote.id} already has its stream open")
        remote.streaming = True
        try:
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"text/event-stream"), (b"cache-control", b"no-store"),
                (b"x-accel-buffering", b"no"), (CONNECTION_HEADER.encode(), remote.id.encode())]})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope)
                await _pump_sse(remote, send)
                nursery.cancel_scope.cancel()
        finally:
            remote.streaming = False
            remote.touch()

    # -- WebSocket ---------------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        try:
            self._check_access(scope, _headers(scope))
        except Refusal as refusal:
            log.info("WebSocket from %s: %d %s", _peer(scope), refusal.status, refusal.text)
            content_type, body = refusal.body()
            await send({"type": "websocket.http.response.start", "status": refusal.status,
                        "headers": [(b"content-type", content_type), *refusal.headers]})
            await send({"type": "websocket.http.response.body", "body": body})
            return
        remote = self._registry.open("websocket", _peer(scope))
        remote.streaming = True
        await send({"type": "websocket.accept",
                    "headers": [(CONNECTION_HEADER.encode(), remote.id.encode())]})
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump_websocket, remote, send, nursery.cancel_scope)
                await _read_websocket(remote, receive)
                nursery.cancel_scope.cancel()
        finally:
            remote.streaming = False
            remote.close("its WebSocket closed")
            remote.outbound.close()  # nobody reads any more: the agent's sends fail at once


class _Body:
    """A request's body as it comes (read to its end: see the note above ``Refusal``)."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.done = False
        self.gone = False

    async def chunk(self) -> bytes:
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.done = self.gone = True
            return b""
        self.done = not message.get("more_body", False)
        return bytes(message.get("body", b""))

    async def drain(self) -> None:
        while not self.done:
            await self.chunk()


async def _read_websocket(remote: RemoteConnection, receive: Receive) -> None:
    """Client frames to the agent until the socket closes. Binary frames are ignored (RFD)."""
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if text is None:
            log.debug("connection %s: binary frame ignored", remote.id)
            continue
        remote.touch()
        try:
            await remote.inbound.put(text.encode("utf-8", "surrogatepass"))
        except trio.ClosedResourceError:
            return


async def _pump_websocket(remote: RemoteConnection, send: Send, done: trio.CancelScope) -> None:
    async for line in remote.outbound.stream:
        await send({"type": "websocket.send", "text": line.decode("utf-8")})
    await send({"type": "websocket.close", "code": 1000, "reason": remote.closing or ""})
    done.cancel()


async def _pump_sse(remote: RemoteConnection, send: Send) -> None:
    """Agent messages as SSE events until the connection ends (or the client goes away)."""
    stream = remote.outbound.stream
    while True:
        with trio.move_on_after(KEEPALIVE_EVERY) as quiet:
            try:
                batch = [await stream.receive()]
            except trio.EndOfChannel:
                break
        if quiet.cancelled_caught:
            await send({"type": "http.response.body", "body": b": keep-alive\n\n",
                        "more_body": True})
            continue
        while len(batch) < SSE_BATCH:
            try:
                batch.append(stream.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        body = b"".join(b"data: " + line + b"\n\n" for line in batch)
        await send({"type": "http.response.body", "body": body, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _cancel_on_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _respond(send: Send, status: int, body: bytes = b"",
                   headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
