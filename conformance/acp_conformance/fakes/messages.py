"""A fake Anthropic Messages API: a real HTTP server on 127.0.0.1 that plays a model script.

The script format and its builders: :mod:`acp_conformance.script`. Each
``POST /v1/messages`` takes the next scripted exchange, in order; when none is left the
answer is a 500 whose message says ``fake model server: no scripted exchange left``
(with ``x-should-retry: false`` so that SDK retries do not hide the failure).

    with FakeModelServer() as server:
        server.enqueue(reply(["Hel", "lo"]), error_status(429, retry_after=0.1))
        client = anthropic.AsyncAnthropic(api_key="test", base_url=server.base_url)
        ...
        assert server.requests[0].body["stream"] is True

With ``prompt_cache=True`` the usage of each streamed answer is not the script's but what the
API would bill for the request received: input, cache read and cache write tokens computed
from its bytes and its ``cache_control`` breakpoints (:mod:`acp_conformance.fakes.prompt_cache`);
each request's figures are kept in :attr:`FakeModelServer.cache_usage`.

The server runs in daemon threads (stdlib ``ThreadingHTTPServer``, HTTP/1.1, keep-alive),
so it works from sync tests, trio or asyncio tests, and other processes alike.
:meth:`FakeModelServer.wait_for_requests` blocks; from async code run it in a thread
(``trio.to_thread.run_sync``) or poll :attr:`FakeModelServer.requests`.

Streaming answers are chunked (``Transfer-Encoding: chunked``), one chunk per event,
written as soon as it is due, so clients see deltas as they are produced. ``cut_after``
ends the connection without the final chunk (clients see an incomplete body);
``reset`` closes the connection with a TCP reset before any header. A request with
``"stream"`` not true gets the events folded into one JSON message (an ``error`` event
becomes the matching error status).

The serving (threads, connections, chunked SSE, hangs, resets, cuts) is shared with the fake
Chat Completions API (:mod:`acp_conformance.fakes.chat`), which overrides the few methods that
speak the API (``path``, ``refuse``, ``error_body``, ``stream_frames``, ``stream_tail``,
``fold``).

As a program, it serves a script file until SIGTERM or SIGINT (then exits 0), after
printing ``READY <base_url>`` on stdout:

    python -m acp_conformance.fakes.messages --script FILE [--port N] [--loop]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import itertools
import json
import select
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from acp_conformance.fakes.prompt_cache import PromptCache
from acp_conformance.script import (
    ERROR_TYPES,
    Exchange,
    ScriptError,
    error_body,
    exchange_kind,
    load_script,
    read_exchange,
)

__all__ = ["NO_EXCHANGE_LEFT", "FakeModelServer", "RecordedRequest", "Responder", "main"]

NO_EXCHANGE_LEFT = "fake model server: no scripted exchange left"
MESSAGES_PATH = "/v1/messages"

_STATUS_FOR_ERROR_TYPE = {kind: status for status, kind in ERROR_TYPES.items()}
"""Error type of an SSE ``error`` event -> status of a non-streamed answer."""


Responder = Callable[[dict[str, Any]], Mapping[str, Any]]
"""Computes the answer to one request from its JSON body (instead of the queue)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lowercased."""
    body: Any
    """The parsed JSON body, or None when there was no body or it was not JSON."""
    raw_body: bytes

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The body's messages without their prompt-cache marks (``cache_control``): what the
        model reads, for tests about content rather than caching."""
        return [
            {
                **message,
                "content": [
                    {k: v for k, v in block.items() if k != "cache_control"}
                    if isinstance(block, dict)
                    else block
                    for block in message["content"]
                ],
            }
            if isinstance(message.get("content"), list)
            else message
            for message in (self.body or {}).get("messages", [])
        ]


class FakeModelServer:
    """A scripted Anthropic Messages API on ``127.0.0.1`` (ephemeral port by default).

    It starts serving on construction; :meth:`close` (or leaving the ``with`` block)
    stops it promptly, even with hung or slow answers in flight. With ``loop=True`` a
    used exchange goes back to the end of the queue, so the script repeats forever.

    With a ``responder``, each answer is ``responder(request body)`` instead, for answers
    that depend on the request (concurrent sessions, each needing its own); a responder that
    raises gets the request a 500 (not retried) and the error into :attr:`problems`.
    """

    def __init__(
        self,
        exchanges: Iterable[Mapping[str, Any]] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        loop: bool = False,
        prompt_cache: bool = False,
        min_cache_tokens: int | None = None,
        responder: Responder | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.responder = responder
        self.cache = (
            PromptCache(*([min_cache_tokens] if min_cache_tokens is not None else []))
            if prompt_cache
            else None
        )
        self._cache_usage: list[dict[str, int]] = []
        self._changed = threading.Condition(self._lock)
        self._queue: deque[Exchange] = deque()
        self._requests: list[RecordedRequest] = []
        self._problems: list[str] = []
        self._connections: set[socket.socket] = set()
        self._handler_threads: set[threading.Thread] = set()
        self._request_ids = itertools.count(1)
        self._loop = loop
        self._closed = False
        self.stopping = threading.Event()
        self.enqueue(*exchanges)
        self._httpd = _HTTPServer((host, port), _Handler, self)
        self.host = host
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-model-server:{self.port}",
            daemon=True,
        )
        self._thread.start()

    # -- public API -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, for ``base_url=`` or ``ANTHROPIC_BASE_URL``."""
        return f"http://{self.host}:{self.port}"

    def enqueue(self, *exchanges: Mapping[str, Any]) -> None:
        """Add exchanges to the end of the queue (checked; raises ScriptError)."""
        checked = [read_exchange(dict(ex), index) for index, ex in enumerate(exchanges)]
        with self._lock:
            self._queue.extend(checked)

    def play(self, *exchanges: Mapping[str, Any]) -> int:
        """Replace the queue with ``exchanges`` (so what one case left unused cannot answer
        the next); returns how many requests came so far (a bookmark into :attr:`requests`)."""
        checked = [read_exchange(dict(ex), index) for index, ex in enumerate(exchanges)]
        with self._lock:
            self._queue.clear()
            self._queue.extend(checked)
            return len(self._requests)

    @property
    def remaining(self) -> int:
        """How many exchanges are still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def wait_for_no_connections(self, timeout: float = 5.0) -> None:
        """Block until the clients have closed every connection (a cancelled stream's too);
        raise TimeoutError after ``timeout``."""
        with self._changed:
            if not self._changed.wait_for(lambda: not self._connections, timeout):
                raise TimeoutError(
                    f"fake model server: {len(self._connections)} connection(s) "
                    f"still open after {timeout}s"
                )

    @property
    def cache_usage(self) -> list[dict[str, int]]:
        """With ``prompt_cache``: each request's computed usage, in arrival order (a copy)."""
        with self._lock:
            return list(self._cache_usage)

    def _account(self, body: dict[str, Any], exchange: Exchange) -> None:
        """Put the computed cache usage into the exchange's usage fields."""
        assert self.cache is not None
        usage = self.cache.account(body)
        with self._lock:
            self._cache_usage.append(usage)
        for event in exchange.get("events", []):
            if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
                event["message"]["usage"] = {**event["message"].get("usage", {}), **usage}
            elif event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
                event["usage"] = {**event["usage"], **usage}

    @property
    def problems(self) -> list[str]:
        """Requests the fake itself refused (no exchange left, unknown path, bad body)."""
        with self._lock:
            return list(self._problems)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``n`` requests arrived; raise TimeoutError after ``timeout``."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(
                    f"fake model server: {len(self._requests)} request(s) after {timeout}s, "
                    f"wanted {n}"
                )
            return list(self._requests)

    def close(self) -> None:
        """Stop serving and drop every connection; returns within about a second."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
            threads = list(self._handler_threads)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + 1.0
        self._thread.join(max(0.0, deadline - time.monotonic()))
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- what a fake of another API changes (acp_conformance/fakes/chat.py) ----------------

    path = MESSAGES_PATH
    """The one route answered (``POST``)."""

    def refuse(self, body: dict[str, Any]) -> str | None:
        """Why the API would refuse this request with a 400 (None: it would not). The Messages
        fake takes any JSON object."""
        return None

    def error_body(self, status: int, message: str) -> Any:
        """The body of an error answer the fake itself makes."""
        return error_body(status, message)

    def stream_frames(self, events: list[dict[str, Any]], body: dict[str, Any]) -> list[bytes]:
        """The SSE bytes sent for each scripted event (one item per event; b"" sends nothing),
        for the request ``body``."""
        return [
            f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
        ]

    def stream_tail(self, body: dict[str, Any]) -> bytes:
        """SSE bytes after the last event of a complete stream."""
        return b""

    def fold(self, events: list[dict[str, Any]]) -> tuple[int, Any]:
        """The events as one non-streamed answer: (status, JSON body)."""
        return _fold_events(events)

    # -- used by the handler ----------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()

    def _problem(self, text: str) -> None:
        with self._lock:
            self._problems.append(text)

    def _next_exchange(self, body: dict[str, Any]) -> Exchange | None:
        if self.responder is not None:
            try:
                return read_exchange(dict(self.responder(body)))
            except Exception as exc:  # a bug in the test's responder: make it visible
                self._problem(f"responder failed: {exc!r}")
                return {
                    "status": 500,
                    "headers": {"x-should-retry": "false"},
                    "body": self.error_body(500, f"responder failed: {exc!r}"),
                }
        with self._lock:
            if not self._queue:
                return None
            exchange = self._queue.popleft()
            if self._loop:
                self._queue.append(exchange)
            return copy.deepcopy(exchange)

    def _next_request_id(self) -> str:
        with self._lock:
            return f"req_fake_{next(self._request_ids):06d}"

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
            self._handler_threads.add(threading.current_thread())

    def _untrack(self, conn: socket.socket) -> None:
        with self._changed:
            self._connections.discard(conn)
            self._handler_threads.discard(threading.current_thread())
            self._changed.notify_all()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        fake: FakeModelServer,
    ) -> None:
        self.fake = fake
        self.abortive: set[socket.socket] = set()
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name (getfqdn), which can be slow.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def shutdown_request(self, request: Any) -> None:
        if request in self.abortive:
            # SO_LINGER 0 is set: closing without a FIN first sends a TCP reset.
            self.abortive.discard(request)
            self.close_request(request)
        else:
            super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            self.fake._problem(f"handler error: {exc!r}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    # -- plumbing ---------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        self.fake = self.server.fake
        self.fake._track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.fake._untrack(self.connection)

    def handle(self) -> None:
        try:
            self.close_connection = True
            if not self.fake.stopping.is_set():
                self.handle_one_request()
            while not self.close_connection and not self.fake.stopping.is_set():
                self.handle_one_request()
        except OSError:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- requests ---------------------------------------------------------------------

    def do_GET(self) -> None:
        self._other()

    def do_PUT(self) -> None:
        self._other()

    def do_DELETE(self) -> None:
        self._other()

    def do_POST(self) -> None:
        raw = self._read_body()
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw else None
            bad_json = False
        except ValueError:
            body, bad_json = None, True
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.fake._record(RecordedRequest("POST", self.path, headers, body, raw))

        fake = self.fake
        if path != fake.path:
            fake._problem(f"POST {self.path}: unknown path")
            self._send_json(404, fake.error_body(404, f"fake model server: no route POST {path}"))
            return
        if bad_json or not isinstance(body, dict):
            fake._problem(f"POST {self.path}: body is not a JSON object")
            self._send_json(
                400, fake.error_body(400, "fake model server: body is not a JSON object")
            )
            return
        refused = fake.refuse(body)
        if refused is not None:
            fake._problem(f"POST {self.path}: {refused}")
            self._send_json(400, fake.error_body(400, refused))
            return
        exchange = fake._next_exchange(body)
        if exchange is None:
            number = len(fake.requests)
            fake._problem(f"request #{number}: {NO_EXCHANGE_LEFT}")
            message = f"{NO_EXCHANGE_LEFT} (request #{number}, POST {self.path})"
            self._send_json(500, fake.error_body(500, message), {"x-should-retry": "false"})
            return

        kind = exchange_kind(exchange)
        if self.fake.cache is not None and kind == "events":
            self.fake._account(body, exchange)
        if kind == "hang":
            self._hang()
        elif kind == "reset":
            self._reset()
        elif kind == "status":
            self._send_json(exchange["status"], exchange["body"], exchange["headers"])
        elif kind == "model_error":
            self._send_json(
                500, fake.error_body(500, exchange["model_error"]), {"x-should-retry": "false"}
            )
        elif body.get("stream") is True:
            self._stream(exchange, body)
        else:
            self._non_stream(exchange)

    def _other(self) -> None:
        raw = self._read_body()
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.fake._record(RecordedRequest(self.command, self.path, headers, None, raw))
        self.fake._problem(f"{self.command} {self.path}: unknown path")
        message = f"fake model server: no route {self.command} {self.path.split('?', 1)[0]}"
        self._send_json(404, self.fake.error_body(404, message))

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # -- answers ----------------------------------------------------------------------

    def _send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        given = {name.lower() for name in (headers or {})}
        self.send_response(status)
        if "content-type" not in given:
            self.send_header("Content-Type", "application/json")
        if "request-id" not in given:
            self.send_header("request-id", self.fake._next_request_id())
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _stream(self, exchange: Exchange, body: dict[str, Any]) -> None:
        events: list[dict[str, Any]] = exchange["events"]
        frames = self.fake.stream_frames(events, body)
        delay: float = exchange["delay"]
        cut_after: int | None = exchange["cut_after"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", self.fake._next_request_id())
        self.send_header("Transfer-Encoding", "chunked")
        try:
            self.end_headers()
            for number, data in enumerate(frames):
                if cut_after is not None and number >= cut_after:
                    break
                if delay > 0 and self.fake.stopping.wait(delay):
                    self.close_connection = True
                    return
                if data:
                    self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
            if exchange.get("then_hang"):
                self._hang()
                return
            if cut_after is not None:
                # Drop the connection without the last chunk: the body is incomplete.
                self.close_connection = True
                return
            tail = self.fake.stream_tail(body)
            if tail:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(tail), tail))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _non_stream(self, exchange: Exchange) -> None:
        events: list[dict[str, Any]] = exchange["events"]
        if exchange["delay"] > 0 and self.fake.stopping.wait(exchange["delay"] * len(events)):
            self.close_connection = True
            return
        if exchange["cut_after"] is not None:
            self.close_connection = True
            return
        status, body = self.fake.fold(events)
        self._send_json(status, body)

    def _hang(self) -> None:
        """Answer nothing until the client goes away or the server stops."""
        self.close_connection = True
        conn = self.connection
        while not self.fake.stopping.is_set():
            try:
                readable, _, _ = select.select([conn], [], [], 0.05)
                if readable and not conn.recv(1, socket.MSG_PEEK):
                    return  # the client closed the connection
            except (OSError, ValueError):
                return
            if readable:
                self.fake.stopping.wait(0.05)  # unexpected data: keep hanging, slowly

    def _reset(self) -> None:
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            return
        self.server.abortive.add(self.connection)


def _fold_events(events: list[dict[str, Any]]) -> tuple[int, Any]:
    """Turn streaming events into one non-streamed answer: (status, JSON body)."""
    message: dict[str, Any] | None = None
    json_parts: dict[int, list[str]] = {}
    for event in events:
        kind = event["type"]
        if kind == "error":
            error = event.get("error") or {}
            return _STATUS_FOR_ERROR_TYPE.get(str(error.get("type")), 500), event
        if kind == "message_start":
            message = copy.deepcopy(event["message"])
            continue
        if message is None:
            continue
        content: list[dict[str, Any]] = message.setdefault("content", [])
        if kind == "content_block_start":
            content.append(copy.deepcopy(event["content_block"]))
        elif kind == "content_block_delta":
            block, delta = content[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                json_parts.setdefault(event["index"], []).append(delta["partial_json"])
        elif kind == "content_block_stop":
            parts = json_parts.pop(event["index"], None)
            if parts is not None:
                content[event["index"]]["input"] = json.loads("".join(parts) or "{}")
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            message.setdefault("usage", {}).update(event.get("usage") or {})
    if message is None:
        return 500, error_body(500, "fake model server: scripted events have no message_start")
    return 200, message


def main(argv: list[str] | None = None, server_class: type[FakeModelServer] | None = None) -> int:
    """Serve a script until SIGTERM/SIGINT; ``server_class`` serves another API (the fake
    Chat Completions API's ``main`` passes its own)."""
    server_class = server_class or FakeModelServer
    parser = argparse.ArgumentParser(
        prog=f"python -m {server_class.__module__}",
        description=f"Serve a model script as a fake model API ({server_class.__name__}).",
    )
    parser.add_argument("--script", required=True, help="script file (JSON)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="default: an ephemeral port")
    parser.add_argument(
        "--loop", action="store_true", help="replay the script from the start when it runs out"
    )
    args = parser.parse_args(argv)
    try:
        exchanges = load_script(args.script)
    except (OSError, ScriptError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    stop_signals = {signal.SIGINT, signal.SIGTERM}
    # Block the signals before any thread starts, so that only sigwait() sees them.
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    with server_class(exchanges, host=args.host, port=args.port, loop=args.loop) as server:
        print(f"READY {server.base_url}", flush=True)
        signal.sigwait(stop_signals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
