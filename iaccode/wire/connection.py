"""A bidirectional JSON-RPC 2.0 connection on trio.

One reader task classifies every incoming line (request, notification, response) in one
place; every incoming request runs as its own task; every outgoing message goes through one
writer task, so a cancelled sender can never tear a line. The peer may send requests while
ours are pending, and vice versa.

Ordering: a request handler is started with ``nursery.start`` and the reader waits until the
handler calls ``ready()`` (or finishes). Handlers that must register state before later
messages are read (a prompt registering its turn before a ``session/cancel`` is processed) call
``ready()`` after registering; the rest get it called for them right away.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeGuard

import trio

from iaccode.wire import errors
from iaccode.wire.encode import dumps_line
from iaccode.wire.errors import RpcError
from iaccode.wire.framing import LineReader, LineTooLong

log = logging.getLogger(__name__)

RequestId = int | str
Ready = Callable[[], None]

WRITE_BUFFER = 1024
"""Messages queued for the writer before senders wait: bounds memory if the peer reads slowly."""

MAX_BATCH = 256
"""At most this many queued messages are joined into one write."""

BURST = 64
"""``notify_nowait`` queues at most this many in a row, then says False (the caller awaits
``notify``): a task streaming updates lets the writer and the reader run that often."""

FLUSH_TIMEOUT = 1.0
"""How long queued output may take to reach a peer that stopped reading, at shutdown."""

CANCEL_REQUEST = "$/cancel_request"
CANCELLED_KEPT = 1024
"""How many of the requests we cancelled are remembered, for their late answers."""


class Handler(Protocol):
    """What the connection dispatches to (the ACP server implements it)."""

    async def handle_request(self, method: str, params: Any, ready: Ready) -> Any:
        """Answer one request; raise RpcError for an error response."""

    async def handle_notification(self, method: str, params: Any) -> None:
        """React to one notification; must not block for long (it runs in the reader)."""

    def connection_closed(self) -> None:
        """The peer closed its input: cancel whatever waits for it. Must not block."""


def _is_request_id(value: Any) -> TypeGuard[RequestId]:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class ThenNotify:
    """A handler's result plus what to send once the answer is queued (e.g. notifications
    about an object the peer only knows from the answer)."""

    def __init__(self, result: Any, then: Callable[[], Awaitable[None]]) -> None:
        self.result = result
        self.then = then


class _Pending:
    """A request we sent and whose answer we wait for."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: Any = None
        self.error: RpcError | None = None


class Connection:
    """Serve a handler over a pair of byte streams until the peer closes its side."""

    def __init__(
        self,
        receive: trio.abc.ReceiveStream,
        send: trio.abc.SendStream,
        *,
        max_line_bytes: int,
        tap: Callable[[str, bytes, bool], None] | None = None,
    ) -> None:
        self._reader = LineReader(receive, max_line_bytes)
        self._stream = send
        self._outbox_send, self._outbox = trio.open_memory_channel[bytes](WRITE_BUFFER)
        self._pending: dict[RequestId, _Pending] = {}
        self._in_flight: dict[RequestId, trio.CancelScope] = {}
        self._next_id = 0
        self._closed = False
        self._outbox_closed = False
        """Set as the outbox closes: later notifications are dropped, not raised."""
        self._reading = trio.CancelScope()
        self._burst = 0
        """Notifications ``notify_nowait`` queued since the last ``notify``."""
        self._tap = tap
        """Sees every line: ("in" | "out", the line without its newline, whether it is JSON)."""
        self._stray_kinds: set[tuple[Any, ...]] = set()
        """The kinds of responses to unknown ids logged already (each is logged once)."""
        self._gave_up: dict[RequestId, None] = {}
        """Our requests we told the peer we cancelled (``$/cancel_request``), oldest first: a
        late answer to one is expected (debug log), not a stray (at most CANCELLED_KEPT)."""

    # -- outgoing ---------------------------------------------------------------------------

    def _encode(self, message: dict[str, Any]) -> bytes:
        line = dumps_line(message)  # first: a message that cannot be encoded is not recorded
        if self._tap is not None:
            self._tap("out", line[:-1], True)
        return line

    async def notify(self, method: str, params: Any) -> None:
        """Queue a notification, waiting while the outbox is full (the peer reads slowly).

        Always a checkpoint (trio's rule 2): if the caller is cancelled, Cancelled is raised
        before anything is queued, and other tasks run before it returns. Cancellation never
        tears a message. A loop that sends many notifications with nothing else to wait for
        (streaming deltas, replaying a history) queues them with ``notify_nowait`` and awaits
        this only when that says False.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        self._burst = 0
        if self._outbox_closed:
            # The connection has shut down (end of input, SIGTERM) while a session task still
            # had something to say (an MCP server connecting late): no one is left to hear it.
            log.debug("connection closed: %s not sent", method)
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        line = self._encode({"jsonrpc": "2.0", "method": method, "params": params})
        await self._outbox_send.send(line)

    def notify_nowait(self, method: str, params: Any) -> bool:
        """Queue a notification if that needs no wait. Never a checkpoint.

        False, with nothing queued (or recorded), when the outbox is full or ``BURST`` were
        queued since the last ``notify``: the caller then awaits ``notify`` for it, which waits
        for room and lets the writer run. So a task that streams hands the writer batches
        rather than one line per write, and other tasks run at least once per burst.
        """
        if self._burst >= BURST or self._outbox_closed:
            return False  # closed: notify drops it
        line = dumps_line({"jsonrpc": "2.0", "method": method, "params": params})
        try:
            self._outbox_send.send_nowait(line)
        except trio.WouldBlock:
            return False
        self._burst += 1
        if self._tap is not None:  # after queueing, and before any other task can queue
            self._tap("out", line[:-1], True)
        return True

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and wait for its answer. Always a checkpoint (it waits for the
        answer), except when it raises RpcError at once because the connection is closed.

        Raises RpcError if the peer answers with an error. If the caller is cancelled, the
        request is forgotten (a late answer is logged and dropped) and the peer is told with
        ``$/cancel_request``.
        """
        if self._closed:
            raise RpcError(errors.INTERNAL_ERROR, "connection closed")
        request_id = self._next_id
        self._next_id += 1
        pending = _Pending()
        self._pending[request_id] = pending
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        try:
            await self._outbox_send.send(self._encode(message))
            await pending.done.wait()
        except trio.Cancelled:
            if not pending.done.is_set():
                self._tell_peer_cancelled(request_id)
            raise
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _tell_peer_cancelled(self, request_id: RequestId) -> None:
        self._gave_up[request_id] = None
        if len(self._gave_up) > CANCELLED_KEPT:
            del self._gave_up[next(iter(self._gave_up))]
        line = self._encode(
            {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": request_id}}
        )
        try:
            self._outbox_send.send_nowait(line)
        except (trio.WouldBlock, trio.ClosedResourceError):
            log.debug("could not queue %s for request %r", CANCEL_REQUEST, request_id)

    async def _respond(
        self, request_id: RequestId | None, result: Any = None, error: RpcError | None = None
    ) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error.to_wire()
        else:
            message["result"] = result
        try:
            line = self._encode(message)
        except (TypeError, ValueError) as exc:  # a handler returned something not JSON-able
            log.exception("cannot encode the answer to request %r", request_id)
            line = self._encode(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": errors.internal_error(str(exc)).to_wire(),
                }
            )
        await self._outbox_send.send(line)

    async def _serve_writer(self) -> None:
        """Drain the outbox into the stream, joining what is already queued into one write."""
        broken = False
        async with self._outbox:
            async for first in self._outbox:
                batch = [first]
                while len(batch) < MAX_BATCH:
                    try:
                        batch.append(self._outbox.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                if broken:
                    continue  # keep draining so senders never block on a dead peer
                try:
                    await self._stream.send_all(b"".join(batch))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    log.warning("output closed by the peer; dropping further messages")
                    broken = True

    # -- incoming ---------------------------------------------------------------------------

    async def serve(self, handler: Handler, *, drain_timeout: float) -> None:
        """Read and dispatch until end of input, then finish in-flight work and flush.

        At end of input, requests we are still waiting on fail, the handler is told
        (``connection_closed``), and handler tasks get ``drain_timeout`` seconds to answer
        before they are cancelled; queued output is then written (bounded by FLUSH_TIMEOUT).
        ``stop_reading`` does the same as end of input.
        """
        async with trio.open_nursery() as outer:
            outer.start_soon(self._serve_writer)
            async with trio.open_nursery() as handlers:
                try:
                    with trio.CancelScope() as self._reading:
                        await self._read_loop(handler, handlers)
                finally:
                    self._closed = True
                    for pending in self._pending.values():
                        pending.error = RpcError(errors.INTERNAL_ERROR, "connection closed")
                        pending.done.set()
                    handler.connection_closed()
                    handlers.cancel_scope.deadline = trio.current_time() + drain_timeout
            self._outbox_closed = True
            await self._outbox_send.aclose()
            outer.cancel_scope.deadline = trio.current_time() + FLUSH_TIMEOUT

    def stop_reading(self) -> None:
        """Behave as if the peer closed its input (used for SIGTERM / SIGINT)."""
        self._reading.cancel()

    async def _read_loop(self, handler: Handler, handlers: trio.Nursery) -> None:
        while True:
            try:
                line = await self._reader.receive_line()
            except LineTooLong as exc:
                await self._respond(None, error=errors.invalid_request(str(exc)))
                continue
            if line is None:
                return
            if not line.strip():
                continue
            await self._dispatch_line(line, handler, handlers)

    async def _dispatch_line(self, line: bytes, handler: Handler, handlers: trio.Nursery) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            if self._tap is not None:
                self._tap("in", line, False)
            await self._respond(None, error=errors.parse_error(str(exc)[:200]))
            return
        if self._tap is not None:
            self._tap("in", line, True)
        if not isinstance(message, dict):
            kind = "a batch (array)" if isinstance(message, list) else type(message).__name__
            await self._respond(
                None, error=errors.invalid_request(f"expected an object, got {kind}")
            )
            return
        message_id = message.get("id")
        # Errors echo the id of what looks like a request, so the peer can fail it; for
        # anything else the id could be one of the peer's own pending requests, so it is null.
        id_ok = _is_request_id(message_id) and "method" in message
        if message.get("jsonrpc") != "2.0":
            await self._respond(
                message_id if id_ok else None,
                error=errors.invalid_request('"jsonrpc" must be "2.0"'),
            )
            return
        method = message.get("method")
        if "method" in message:
            if not isinstance(method, str):
                await self._respond(
                    message_id if id_ok else None,
                    error=errors.invalid_request('"method" must be a string'),
                )
            elif "id" not in message:
                await self._notification(handler, method, message.get("params"))
            elif not id_ok:
                await self._respond(
                    None, error=errors.invalid_request('"id" must be a string or an integer')
                )
            elif message_id in self._in_flight:
                await self._respond(
                    message_id,
                    error=errors.invalid_request(f"request id {message_id!r} is already in flight"),
                )
            else:
                await handlers.start(
                    self._run_request, handler, message_id, method, message.get("params")
                )
        elif "result" in message or "error" in message:
            self._response(message)
        else:
            await self._respond(
                None, error=errors.invalid_request("neither a request nor a response")
            )

    async def _notification(self, handler: Handler, method: str, params: Any) -> None:
        if method == CANCEL_REQUEST:
            request_id = params.get("requestId") if isinstance(params, dict) else None
            scope = self._in_flight.get(request_id) if _is_request_id(request_id) else None
            if scope is not None:
                scope.cancel()
            return
        try:
            await handler.handle_notification(method, params)
        except RpcError as exc:  # notifications are never answered
            log.warning("notification %s rejected: %s %s", method, exc.message, exc.data)
        except Exception:
            log.exception("notification %s failed", method)

    def _response(self, message: dict[str, Any]) -> None:
        message_id = message.get("id")
        pending = self._pending.get(message_id) if _is_request_id(message_id) else None
        if pending is None and _is_request_id(message_id) and message_id in self._gave_up:
            del self._gave_up[message_id]
            log.debug("dropping the late answer to request %r, which we cancelled", message_id)
            return
        if pending is None or pending.done.is_set():
            self._stray_response(message_id, message)
            return
        if "error" in message:
            pending.error = RpcError.from_wire(message["error"])
        else:
            pending.result = message.get("result")
        pending.done.set()

    def _stray_response(self, message_id: Any, message: dict[str, Any]) -> None:
        """A response to no request of ours (a client answering a notification, or a request
        that gave up): logged with what the client said, once per kind (a result, or each
        error code and message); repeats go to the debug log."""
        if "error" in message:
            error = RpcError.from_wire(message["error"])
            kind: tuple[Any, ...] = ("error", error.code, error.message)
            said = f"an error {error.code} {error.message!r}" + (
                f" ({_short(error.data)})" if error.data is not None else ""
            )
        else:
            kind, said = ("result",), "a result"
        first = kind not in self._stray_kinds
        self._stray_kinds.add(kind)
        log.log(
            logging.WARNING if first else logging.DEBUG,
            "dropping a response to unknown request id %r: the client sent %s%s",
            message_id,
            said,
            "; further ones like it are logged at debug level" if first else "",
        )

    async def _run_request(
        self,
        handler: Handler,
        request_id: RequestId,
        method: str,
        params: Any,
        task_status: trio.TaskStatus[None],
    ) -> None:
        started = False

        def ready() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        result: Any = None
        then: Callable[[], Awaitable[None]] | None = None
        error: RpcError | None = None
        completed = False
        try:
            with trio.CancelScope() as scope:
                self._in_flight[request_id] = scope
                try:
                    result = await handler.handle_request(method, params, ready)
                    if isinstance(result, ThenNotify):
                        result, then = result.result, result.then
                except RpcError as exc:
                    error = exc
                except Exception as exc:
                    log.exception("request %r (%s) failed", request_id, method)
                    error = errors.internal_error(f"{type(exc).__name__}: {exc}")
                finally:
                    del self._in_flight[request_id]
                    ready()
            completed = True
        finally:
            if not completed:  # cancelled from outside: the drain deadline or stop_reading
                with trio.CancelScope(shield=True), trio.move_on_after(FLUSH_TIMEOUT):
                    await self._respond(request_id, error=errors.request_cancelled())
        if scope.cancelled_caught:
            error = errors.request_cancelled()
        try:
            await self._respond(request_id, result, error)  # waits while the peer reads slowly
        except trio.Cancelled:
            # Shutting down: one last bounded try, for a peer that stopped reading.
            with trio.CancelScope(shield=True), trio.move_on_after(FLUSH_TIMEOUT):
                await self._respond(request_id, result, error)
            raise
        if then is not None and error is None:
            try:
                await then()
            except Exception:
                log.exception("after answering request %r (%s)", request_id, method)


def _short(data: Any, limit: int = 200) -> str:
    text = json.dumps(data, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"
