"""The ASGI app: one endpoint, ``/acp``, as the ACP remote-transport RFD routes it.

    POST   initialize, no Acp-Connection-Id   -> a new connection; 200, the answer, the header
    POST   anything else                       -> 202 at once; the answer comes on a stream
    GET    Accept: text/event-stream           -> the connection-scoped SSE stream
    GET    ... and Acp-Session-Id              -> that session's SSE stream
    GET    Upgrade: websocket                  -> a new connection over a WebSocket
    DELETE                                     -> 202; the connection ends, its streams close

Every request first passes the checks of ``access.py`` on its headers alone (421 a host name
we do not answer to, 403 a browser page of another site, 401 the token, 404 another path),
answered before any of its body is read (over HTTP/1.1 the connection is then closed; over
HTTP/2 at most UNTRUSTED_DRAIN_BYTES more of it are read, so the connection may live on).
A request that passed them has its body read within ``body_timeout`` (408 past it). Then:
404 an unknown connection, or a session stream for a session the connection neither holds
nor could load; 405 another method; 400 a missing
Acp-Connection-Id (or a session-scoped message without its Acp-Session-Id, or with another
session's) or a body that is not JSON; 406 a GET that does not accept ``text/event-stream``;
415 a POST that is not ``application/json``; 413 a body over ``max_body_bytes``; 501 a JSON-RPC
batch; 409 a second stream of the same scope. Refusals of a JSON-RPC message carry a JSON-RPC
error body (with the request's id), so a client can fail that request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from iaccode.config import ServeSettings
from iaccode.remote.access import (
    Access,
    Refusal,
    Scope,
    headers_of,
    peer_of,
    printable,
    shown_peer,
)
from iaccode.remote.connections import SHOWN_ID, ConnectionRegistry, RemoteConnection
from iaccode.remote.outbox import StreamBusy
from iaccode.remote.pumps import Body, pump_sse, pump_websocket, read_websocket, respond
from iaccode.remote.routing import SESSION_SCOPED_METHODS, request_id_of, session_of
from iaccode.wire import errors

log = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"

INITIALIZE_TIMEOUT = 30.0
"""Seconds an ``initialize`` POST waits for the agent's answer."""

UNTRUSTED_DRAIN_BYTES = 64 * 1024
UNTRUSTED_DRAIN_SECONDS = 1.0
"""What more of a refused body is read after the answer over HTTP/2, where data for a stream
already closed ends the whole connection (past it, it does: that client sent more than a
request without the token needs). HTTP/1.1 closes the connection after the answer instead."""


class AcpApp:
    """Route ``/acp`` requests to the connections of ``registry``."""

    def __init__(self, registry: ConnectionRegistry, settings: ServeSettings, token: str) -> None:
        self._registry = registry
        self._settings = settings
        self.access = Access(token, settings.allowed_origins, settings.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)

    def _check_access(self, scope: Scope, headers: dict[str, str]) -> None:
        self.access.check(scope, headers)
        self._registry.doorman.trust(peer_of(scope))

    def _connection(self, headers: dict[str, str], request_id: Any = None) -> RemoteConnection:
        connection_id = headers.get(CONNECTION_HEADER)
        if not connection_id:
            raise Refusal(
                400,
                "missing the Acp-Connection-Id header (POST initialize first)",
                rpc_code=errors.INVALID_REQUEST,
                request_id=request_id,
            )
        remote = self._registry.get(connection_id.strip())
        if remote is None:
            raise Refusal(
                404,
                f"unknown or closed connection "  # a prefix: see connections.py
                f"{printable(connection_id.strip()[:SHOWN_ID])!r}...",
                rpc_code=errors.INVALID_REQUEST,
                request_id=request_id,
            )
        return remote

    # -- HTTP --------------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = headers_of(scope)
        body = Body(receive, self._settings.body_timeout)
        trusted = False
        try:
            self._check_access(scope, headers)
            trusted = True
            method = scope["method"]
            if method == "POST":
                await self._post(scope, headers, body, send)
            elif method == "GET":
                await body.drain()
                await self._stream(scope, headers, receive, send)
            elif method == "DELETE":
                await body.drain()
                remote = self._connection(headers)
                remote.close("the client sent DELETE")
                await respond(send, 202)
            else:
                raise Refusal(
                    405,
                    f"method {printable(method)} is not served here",
                    headers=[(b"allow", b"GET, POST, DELETE")],
                )
        except Refusal as refusal:
            log.info(
                "%s %s from %s: %d %s",
                printable(scope["method"]),
                printable(scope.get("path", "")),
                shown_peer(scope),
                refusal.status,
                refusal.text,
            )
            content_type, text = refusal.body()
            answer_headers = [(b"content-type", content_type), *refusal.headers]
            if trusted:  # a client of ours gets its answer, not a reset (HTTP/2 fails on
                await body.drain()  # data for a stream already answered)
            elif scope.get("http_version") == "2":
                # Answered now; the stream stays open for a little more of the body, so that
                # a client that sent a small one keeps its connection (its other streams).
                await respond(send, refusal.status, text, answer_headers, more_body=True)
                await body.drain_some(UNTRUSTED_DRAIN_BYTES, UNTRUSTED_DRAIN_SECONDS)
                await send({"type": "http.response.body", "body": b""})
                return
            await respond(send, refusal.status, text, answer_headers)

    async def _post(self, scope: Scope, headers: dict[str, str], body: Body, send: Send) -> None:
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise Refusal(415, "the body must be application/json")
        data = await body.read(self._settings.max_body_bytes)
        try:
            message = json.loads(data)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise Refusal(
                400, f"Parse error: {str(exc)[:200]}", rpc_code=errors.PARSE_ERROR
            ) from None
        if isinstance(message, list):
            raise Refusal(
                501, "JSON-RPC batches are not supported", rpc_code=errors.INVALID_REQUEST
            )
        request_id = request_id_of(message)
        if (
            CONNECTION_HEADER not in headers
            and isinstance(message, dict)
            and message.get("method") == "initialize"
            and request_id is not None
        ):
            await self._initialize(scope, data, request_id, send)
            return
        remote = self._connection(headers, request_id)
        _check_session_header(message, headers, request_id)
        remote.busy += 1
        try:
            remote.touch()
            if remote.outbound.router is not None:
                remote.outbound.router.client_sent(message)
            await remote.inbound.put(data)
        except trio.ClosedResourceError:
            raise Refusal(
                404,
                f"connection {remote.shown} is closing",
                rpc_code=errors.INVALID_REQUEST,
                request_id=request_id,
            ) from None
        finally:
            remote.busy -= 1
            remote.touch()
        await respond(send, 202)

    async def _initialize(self, scope: Scope, body: bytes, request_id: Any, send: Send) -> None:
        remote = self._registry.open("http", shown_peer(scope))
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
            raise Refusal(
                503,
                "the agent did not answer initialize",
                rpc_code=errors.INTERNAL_ERROR,
                request_id=request_id,
            )
        extra = [(CONNECTION_HEADER.encode(), remote.id.encode())]
        if b'"error"' in answer and "error" in json.loads(answer):
            remote.close("initialize was answered with an error")
            extra = []
        await respond(send, 200, answer, [(b"content-type", b"application/json"), *extra])

    async def _stream(
        self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        accepted = [
            part.split(";")[0].strip().lower() for part in headers.get("accept", "").split(",")
        ]
        if "text/event-stream" not in accepted:
            raise Refusal(406, "GET /acp is the event stream: Accept text/event-stream")
        remote = self._connection(headers)
        session = headers.get(SESSION_HEADER, "").strip() or None
        if session is not None and not await self._registry.has_session(remote, session):
            raise Refusal(404, f"connection {remote.shown} has no session {printable(session)!r}")
        outbox = remote.outbound.outbox
        try:
            lane = outbox.attach(session)
        except StreamBusy:
            scope_name = "connection" if session is None else f"session {printable(session)!r}"
            raise Refusal(
                409, f"the {scope_name} stream of connection {remote.shown} is already open"
            ) from None
        peer = peer_of(scope)
        remote.stream_peers.append(peer)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-store"),
                        (b"x-accel-buffering", b"no"),
                        (CONNECTION_HEADER.encode(), remote.id.encode()),
                    ],
                }
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope)
                await pump_sse(outbox, lane, send)
                nursery.cancel_scope.cancel()
        finally:
            outbox.detach(lane)
            remote.stream_peers.remove(peer)
            remote.touch()

    # -- WebSocket ---------------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        try:
            self._check_access(scope, headers_of(scope))
        except Refusal as refusal:
            log.info(
                "WebSocket %s from %s: %d %s",
                printable(scope.get("path", "")),
                shown_peer(scope),
                refusal.status,
                refusal.text,
            )
            content_type, body = refusal.body()
            try:
                await send(
                    {
                        "type": "websocket.http.response.start",
                        "status": refusal.status,
                        "headers": [(b"content-type", content_type), *refusal.headers],
                    }
                )
                await send({"type": "websocket.http.response.body", "body": body})
            except Exception as exc:  # the HTTP layer gave up on this client
                # (hypercorn answered a frame sent before the upgrade's answer with a 400 of
                # its own, and refuses ours): nothing more to tell this client.
                log.info(
                    "WebSocket from %s: the refusal could not be sent: %s",
                    shown_peer(scope),
                    type(exc).__name__,
                )
            return
        remote = self._registry.open("websocket", shown_peer(scope))
        remote.stream_peers.append(peer_of(scope))
        lane = remote.outbound.outbox.attach(None)
        await send(
            {
                "type": "websocket.accept",
                "headers": [(CONNECTION_HEADER.encode(), remote.id.encode())],
            }
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump_websocket, remote, lane, send, nursery.cancel_scope)
                await read_websocket(remote, receive)
                nursery.cancel_scope.cancel()
        finally:
            remote.close("its WebSocket closed")
            remote.outbound.close()  # nobody reads any more: the agent's sends fail at once
            remote.outbound.outbox.detach(lane)


def _check_session_header(message: Any, headers: dict[str, str], request_id: Any) -> None:
    """A session-scoped message names its session in Acp-Session-Id; any message that sends
    the header names the session of its params there."""
    session_id = session_of(message)
    given = headers.get(SESSION_HEADER)
    if given is None:
        method = message.get("method") if isinstance(message, dict) else None
        if session_id is not None and method in SESSION_SCOPED_METHODS:
            raise Refusal(
                400,
                "a message about a session needs the Acp-Session-Id header",
                rpc_code=errors.INVALID_REQUEST,
                request_id=request_id,
            )
        return
    if session_id is not None and given.strip() != session_id:
        raise Refusal(
            400,
            f"Acp-Session-Id {printable(given)!r} is not the message's "
            f"sessionId {printable(session_id)!r}",
            rpc_code=errors.INVALID_REQUEST,
            request_id=request_id,
        )


async def _cancel_on_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
