"""Connection: JSON-RPC 2.0 both ways over an in-memory byte stream, against test handlers."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from iaccode.wire import errors
from iaccode.wire.connection import (
    BURST,
    CANCEL_REQUEST,
    FLUSH_TIMEOUT,
    MAX_BATCH,
    WRITE_BUFFER,
    Connection,
    Ready,
)
from iaccode.wire.errors import RpcError
from iaccode.wire.framing import LineReader

Route = Callable[[Any, Ready], Awaitable[Any]]

LOGGER = "iaccode.wire.connection"


class FakeHandler:
    """Dispatches requests to `routes`; records notifications and closes."""

    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        self.connection: Connection | None = None
        self.routes: dict[str, Route] = {"ping": self.ping, "echo": self.echo}
        self.routes.update(routes or {})
        self.notifications: list[tuple[str, Any]] = []
        self.on_notification: dict[str, Callable[[Any], None]] = {}
        self.closed = 0

    @property
    def conn(self) -> Connection:
        assert self.connection is not None
        return self.connection

    async def ping(self, params: Any, ready: Ready) -> Any:
        ready()
        return "pong"

    async def echo(self, params: Any, ready: Ready) -> Any:
        ready()
        return params

    async def handle_request(self, method: str, params: Any, ready: Ready) -> Any:
        route = self.routes.get(method)
        if route is None:
            raise errors.method_not_found(method)
        return await route(params, ready)

    async def handle_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))
        callback = self.on_notification.get(method)
        if callback is not None:
            callback(params)

    def connection_closed(self) -> None:
        self.closed += 1


class Peer:
    """The client's end: writes raw lines, reads what the connection writes as JSON."""

    def __init__(self, stream: trio.StapledStream[Any, Any]) -> None:
        self.stream = stream
        self.reader = LineReader(stream, 1 << 24)
        self.raw: list[bytes] = []

    async def send(self, *messages: dict[str, Any]) -> None:
        """All messages in one write, so they arrive together."""
        await self.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def request(self, request_id: Any, method: str, params: Any = None) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    async def notify(self, method: str, params: Any = None) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def answer(self, request_id: Any, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def receive(self) -> dict[str, Any]:
        line = await self.reader.receive_line()
        assert line is not None, "the connection's output ended"
        self.raw.append(line)
        message = json.loads(line)
        assert isinstance(message, dict)
        return message

    async def receive_rest(self) -> list[dict[str, Any]]:
        """Everything until the connection's output ends."""
        out = []
        while (line := await self.reader.receive_line()) is not None:
            self.raw.append(line)
            out.append(json.loads(line))
        return out

    async def close(self) -> None:
        await self.stream.send_eof()


class Harness:
    def __init__(self, peer: Peer, conn: Connection, handler: FakeHandler) -> None:
        self.peer = peer
        self.conn = conn
        self.handler = handler
        self.served = trio.Event()
        self.served_at: float | None = None
        self.peer_closed = False

    async def close_input(self) -> float:
        """End the connection's input; returns the time it happened."""
        self.peer_closed = True
        await self.peer.close()
        return trio.current_time()

    async def ping(self, request_id: Any = "ping") -> None:
        """A round trip: everything the connection queued before is read before the pong."""
        await self.peer.request(request_id, "ping")
        assert await self.peer.receive() == {"jsonrpc": "2.0", "id": request_id, "result": "pong"}


@asynccontextmanager
async def serving(
    handler: FakeHandler | None = None,
    *,
    drain_timeout: float = 10.0,
    max_line_bytes: int = 1 << 20,
    pair: Callable[[], tuple[Any, Any]] = trio.testing.memory_stream_pair,
    tap: Callable[[str, bytes, bool], None] | None = None,
) -> AsyncIterator[Harness]:
    """Serve `handler` until the block ends (then the peer closes its output, if it has not)."""
    handler = handler or FakeHandler()
    client, server = pair()
    conn = Connection(server, server, max_line_bytes=max_line_bytes, tap=tap)
    handler.connection = conn
    harness = Harness(Peer(client), conn, handler)

    async def serve() -> None:
        await conn.serve(handler, drain_timeout=drain_timeout)
        harness.served_at = trio.current_time()
        harness.served.set()
        # The process would exit here: the peer sees the end of our output.
        with trio.move_on_after(FLUSH_TIMEOUT):
            await server.send_stream.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        yield harness
        if not harness.peer_closed:
            await harness.close_input()


def error_code(message: dict[str, Any]) -> int:
    assert "result" not in message, message
    code = message["error"]["code"]
    assert isinstance(code, int)
    return code


# -- answers ----------------------------------------------------------------------------------


async def test_plain_exception_is_internal_error_naming_it_with_logged_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def boom(params: Any, ready: Ready) -> Any:
        ready()
        raise ValueError("kaboom")

    caplog.set_level(logging.ERROR, logger=LOGGER)
    with trio.fail_after(5):
        async with serving(FakeHandler({"boom": boom})) as h:
            await h.peer.request(3, "boom", {})
            answer = await h.peer.receive()
            await h.ping()
    assert answer["id"] == 3
    assert error_code(answer) == errors.INTERNAL_ERROR
    assert "ValueError" in json.dumps(answer["error"]["data"])
    assert "kaboom" in json.dumps(answer["error"]["data"])
    [record] = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.ERROR]
    assert record.exc_info is not None and record.exc_info[0] is ValueError
    assert "Traceback" in caplog.text and "kaboom" in caplog.text


async def test_plain_exception_before_ready_is_answered_and_reading_goes_on() -> None:
    async def boom(params: Any, ready: Ready) -> Any:
        raise KeyError("early")

    with trio.fail_after(5):
        async with serving(FakeHandler({"boom": boom})) as h:
            await h.peer.request(1, "boom")
            assert error_code(await h.peer.receive()) == errors.INTERNAL_ERROR
            await h.ping()


@pytest.mark.parametrize(
    "error",
    [
        RpcError(-32001, "custom failure", {"why": ["a", 1, None], "nested": {"ok": True}}),
        RpcError(errors.INVALID_PARAMS, "Invalid params", {"params.sessionId": "is required"}),
        RpcError(errors.AUTH_REQUIRED, "no data"),
    ],
)
async def test_rpc_error_is_sent_verbatim(error: RpcError) -> None:
    async def fail(params: Any, ready: Ready) -> Any:
        ready()
        raise error

    with trio.fail_after(5):
        async with serving(FakeHandler({"fail": fail})) as h:
            await h.peer.request("x", "fail")
            answer = await h.peer.receive()
    assert answer == {"jsonrpc": "2.0", "id": "x", "error": error.to_wire()}
    if error.data is None:
        assert "data" not in answer["error"]


async def test_none_result_is_sent_as_null_result() -> None:
    async def nothing(params: Any, ready: Ready) -> Any:
        ready()
        return None

    with trio.fail_after(5):
        async with serving(FakeHandler({"nothing": nothing})) as h:
            await h.peer.request(9, "nothing")
            answer = await h.peer.receive()
    assert answer == {"jsonrpc": "2.0", "id": 9, "result": None}
    assert b'"result":null' in h.peer.raw[-1]


async def test_result_that_is_not_json_becomes_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def odd(params: Any, ready: Ready) -> Any:
        ready()
        return {"a": object()}

    with trio.fail_after(5):
        async with serving(FakeHandler({"odd": odd})) as h:
            await h.peer.request(1, "odd")
            assert error_code(await h.peer.receive()) == errors.INTERNAL_ERROR
            await h.ping()
    assert "cannot encode" in caplog.text


async def test_string_and_integer_ids_are_echoed_exactly() -> None:
    with trio.fail_after(5):
        async with serving() as h:
            for request_id in [0, -1, 2**53, "", "1", "ünïcode"]:
                await h.peer.request(request_id, "echo", [request_id])
                assert await h.peer.receive() == {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": [request_id],
                }


# -- concurrency -------------------------------------------------------------------------------


async def test_requests_run_concurrently(autojump_clock: trio.testing.MockClock) -> None:
    running = 0
    most = 0

    async def slow(params: Any, ready: Ready) -> Any:
        nonlocal running, most
        ready()
        running += 1
        most = max(most, running)
        await trio.sleep(params["delay"])
        running -= 1
        return params["name"]

    with trio.fail_after(10):
        async with serving(FakeHandler({"slow": slow})) as h:
            start = trio.current_time()
            await h.peer.send(
                {"jsonrpc": "2.0", "id": 1, "method": "slow", "params": {"delay": 2, "name": "a"}},
                {"jsonrpc": "2.0", "id": 2, "method": "slow", "params": {"delay": 1, "name": "b"}},
            )
            first = await h.peer.receive()
            first_at = trio.current_time() - start
            second = await h.peer.receive()
            second_at = trio.current_time() - start
    assert (first["id"], first["result"]) == (2, "b")
    assert (second["id"], second["result"]) == (1, "a")
    assert most == 2
    assert first_at == pytest.approx(1)
    assert second_at == pytest.approx(2)  # overlapped: not 3


async def test_reader_waits_for_a_handler_that_never_calls_ready() -> None:
    """``ready`` is implied when the handler finishes; until then later lines wait."""
    order: list[str] = []

    async def unready(params: Any, ready: Ready) -> Any:
        for _ in range(10):
            await trio.lowlevel.checkpoint()
        order.append("request done")
        return "done"

    handler = FakeHandler({"unready": unready})
    handler.on_notification["note"] = lambda params: order.append("notification")
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.send(
                {"jsonrpc": "2.0", "id": 1, "method": "unready"},
                {"jsonrpc": "2.0", "method": "note"},
            )
            assert (await h.peer.receive())["result"] == "done"
            await h.ping()
    assert order == ["request done", "notification"]


async def test_ready_orders_registration_before_the_next_notification() -> None:
    """A handler that registers state and then calls ready() sees the notification after it."""
    handler = FakeHandler()
    turn: trio.Event | None = None
    missed: list[Any] = []

    async def prompt(params: Any, ready: Ready) -> Any:
        nonlocal turn
        for _ in range(10):  # give the reader every chance to run ahead
            await trio.lowlevel.checkpoint()
        turn = trio.Event()
        ready()
        await turn.wait()
        return "cancelled"

    def cancel(params: Any) -> None:
        if turn is None:
            missed.append(params)
        else:
            turn.set()

    handler.routes["prompt"] = prompt
    handler.on_notification["cancel"] = cancel
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.send(
                {"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {}},
                {"jsonrpc": "2.0", "method": "cancel", "params": {}},
            )
            assert await h.peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": "cancelled"}
    assert missed == []


# -- requests from the agent to the peer --------------------------------------------------------


async def test_agent_request_while_peer_request_in_flight() -> None:
    handler = FakeHandler()

    async def ask(params: Any, ready: Ready) -> Any:
        ready()
        answer = await handler.conn.request("fs/read_text_file", {"path": params["path"]})
        return {"got": answer}

    handler.routes["ask"] = ask
    with trio.fail_after(5):
        async with serving(handler) as h:
            # The agent numbers its own requests from 0 as well: the ids must not be confused.
            await h.peer.request(0, "ask", {"path": "/a"})
            outgoing = await h.peer.receive()
            assert outgoing["method"] == "fs/read_text_file"
            assert outgoing["params"] == {"path": "/a"}
            assert outgoing["jsonrpc"] == "2.0"
            assert isinstance(outgoing["id"], int)
            await h.peer.answer(outgoing["id"], {"content": "hello"})
            assert await h.peer.receive() == {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {"got": {"content": "hello"}},
            }


async def test_agent_requests_get_distinct_ids_and_null_results() -> None:
    handler = FakeHandler()

    async def ask_twice(params: Any, ready: Ready) -> Any:
        ready()
        async with trio.open_nursery() as nursery:
            results: dict[str, Any] = {}

            async def one(name: str) -> None:
                results[name] = await handler.conn.request("q", {"name": name})

            nursery.start_soon(one, "a")
            nursery.start_soon(one, "b")
        return results

    handler.routes["ask_twice"] = ask_twice
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.request(1, "ask_twice")
            first, second = await h.peer.receive(), await h.peer.receive()
            assert first["id"] != second["id"]
            # Answer in reverse order; each lands on its own request.
            await h.peer.answer(second["id"], None)
            await h.peer.answer(first["id"], first["params"]["name"].upper())
            answer = await h.peer.receive()
    expected = {
        first["params"]["name"]: first["params"]["name"].upper(),
        second["params"]["name"]: None,
    }
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": expected}


async def test_agent_request_error_answer_raises_rpc_error() -> None:
    handler = FakeHandler()
    raised: list[RpcError] = []

    async def ask(params: Any, ready: Ready) -> Any:
        ready()
        try:
            await handler.conn.request("fs/read_text_file", {"path": "/nope"})
        except RpcError as exc:
            raised.append(exc)
            return "failed"
        return "succeeded"

    handler.routes["ask"] = ask
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.request("r", "ask")
            outgoing = await h.peer.receive()
            await h.peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": outgoing["id"],
                    "error": {
                        "code": -32002,
                        "message": "Resource not found",
                        "data": {"path": "/nope"},
                    },
                }
            )
            assert (await h.peer.receive())["result"] == "failed"
    [exc] = raised
    assert (exc.code, exc.message, exc.data) == (-32002, "Resource not found", {"path": "/nope"})


async def test_agent_request_malformed_error_answer_still_raises() -> None:
    handler = FakeHandler()
    raised: list[RpcError] = []

    async def ask(params: Any, ready: Ready) -> Any:
        ready()
        try:
            await handler.conn.request("x", {})
        except RpcError as exc:
            raised.append(exc)
        return None

    handler.routes["ask"] = ask
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.request(1, "ask")
            outgoing = await h.peer.receive()
            await h.peer.send({"jsonrpc": "2.0", "id": outgoing["id"], "error": "bad"})
            await h.peer.receive()
    assert raised[0].code == errors.INTERNAL_ERROR


async def test_cancelled_agent_request_tells_peer_and_drops_late_answer(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = FakeHandler()

    async def impatient(params: Any, ready: Ready) -> Any:
        ready()
        with trio.move_on_after(1):
            return await handler.conn.request("slow/thing", {})
        return "gave up"

    handler.routes["impatient"] = impatient
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with trio.fail_after(10):
        async with serving(handler) as h:
            await h.peer.request(1, "impatient")
            outgoing = await h.peer.receive()
            assert outgoing["method"] == "slow/thing"
            messages = [await h.peer.receive(), await h.peer.receive()]
            assert {
                "jsonrpc": "2.0",
                "method": CANCEL_REQUEST,
                "params": {"requestId": outgoing["id"]},
            } in messages
            assert {"jsonrpc": "2.0", "id": 1, "result": "gave up"} in messages
            # The late answer is dropped with a debug line (it was expected), and the
            # connection keeps serving.
            await h.peer.answer(outgoing["id"], "too late")
            await h.ping()
            await h.peer.request(2, "impatient")
            again = await h.peer.receive()
            assert again["id"] != outgoing["id"]
            await h.peer.answer(again["id"], "in time")
            assert await h.peer.receive() == {"jsonrpc": "2.0", "id": 2, "result": "in time"}
    late = [r for r in caplog.records if "late answer" in r.getMessage()]
    assert [r.levelno for r in late] == [logging.DEBUG]
    assert "unknown request id" not in caplog.text
    assert repr(outgoing["id"]) in caplog.text


async def test_request_cancelled_from_outside_a_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(10):
        async with serving() as h:
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(h.conn.request, "q", {"n": 1})
                    outgoing = await h.peer.receive()
                    scope.cancel()
            assert await h.peer.receive() == {
                "jsonrpc": "2.0",
                "method": CANCEL_REQUEST,
                "params": {"requestId": outgoing["id"]},
            }
            await h.peer.answer(outgoing["id"], 1)
            await h.ping()


async def test_answer_to_unknown_id_is_logged_and_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with trio.fail_after(5):
        async with serving() as h:
            await h.peer.answer(12345, "stray")
            await h.peer.send({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": ""}})
            await h.ping()
    assert caplog.text.count("unknown request id") == 2


async def test_stray_responses_are_logged_with_the_client_error_once_per_kind(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A client that answers each of our notifications with an error (seen from real
    clients) gets one warning naming its error, not one per message."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with trio.fail_after(5):
        async with serving() as h:
            for stray_id in range(1, 9):
                await h.peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": stray_id,
                        "error": {"code": -32601, "message": "Method not found: session/update"},
                    }
                )
            await h.peer.send(
                {"jsonrpc": "2.0", "id": 9, "error": {"code": -32602, "message": "Invalid params"}}
            )
            await h.ping()
    warnings = [r.getMessage() for r in caplog.records if "unknown request id" in r.getMessage()]
    assert len(warnings) == 2, warnings
    assert "-32601 'Method not found: session/update'" in warnings[0]
    assert "-32602 'Invalid params'" in warnings[1]


# -- $/cancel_request from the peer -----------------------------------------------------------


async def test_peer_cancel_request_cancels_in_flight_request() -> None:
    handler = FakeHandler()
    saw_cancel: list[bool] = []

    async def wait(params: Any, ready: Ready) -> Any:
        ready()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            saw_cancel.append(True)
            raise

    handler.routes["wait"] = wait
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.request(7, "wait")
            await h.peer.request("7", "wait")  # a string id is a different request
            await trio.testing.wait_all_tasks_blocked()
            await h.peer.notify(CANCEL_REQUEST, {"requestId": 7})
            answer = await h.peer.receive()
            assert answer["id"] == 7
            assert error_code(answer) == errors.REQUEST_CANCELLED
            await h.peer.notify(CANCEL_REQUEST, {"requestId": "7"})
            answer = await h.peer.receive()
            assert answer["id"] == "7"
            assert error_code(answer) == errors.REQUEST_CANCELLED
    assert saw_cancel == [True, True]
    assert handler.notifications == []  # $/cancel_request is the connection's own


@pytest.mark.parametrize(
    "params",
    [
        {"requestId": 99},
        {"requestId": "nope"},
        {"requestId": True},
        {"requestId": None},
        {"requestId": 1.0},
        {"requestId": [1]},
        {},
        [1],
        None,
        "1",
    ],
)
async def test_peer_cancel_request_for_unknown_id_does_nothing(params: Any) -> None:
    handler = FakeHandler()
    release = trio.Event()

    async def wait(params: Any, ready: Ready) -> Any:
        ready()
        await release.wait()
        return "finished"

    handler.routes["wait"] = wait
    handler.on_notification["release"] = lambda _: release.set()
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.request(1, "wait")
            await h.peer.notify(CANCEL_REQUEST, params)
            await h.ping()  # nothing was written in between
            await h.peer.notify("release")
            assert await h.peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": "finished"}


async def test_cancel_after_the_answer_does_nothing() -> None:
    with trio.fail_after(5):
        async with serving() as h:
            await h.ping(5)
            await h.peer.notify(CANCEL_REQUEST, {"requestId": 5})
            await h.ping(6)


# -- duplicate ids --------------------------------------------------------------------------------


async def test_duplicate_id_while_in_flight_is_rejected_first_still_answers() -> None:
    handler = FakeHandler()
    release = trio.Event()
    started = 0

    async def wait(params: Any, ready: Ready) -> Any:
        nonlocal started
        started += 1
        ready()
        await release.wait()
        return params

    handler.routes["wait"] = wait
    handler.on_notification["release"] = lambda _: release.set()
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.request(5, "wait", "first")
            await h.peer.request(5, "wait", "second")
            duplicate = await h.peer.receive()
            assert duplicate["id"] == 5
            assert error_code(duplicate) == errors.INVALID_REQUEST
            await h.peer.notify("release")
            assert await h.peer.receive() == {"jsonrpc": "2.0", "id": 5, "result": "first"}
            # Once answered, the id may be used again.
            await h.peer.request(5, "echo", "third")
            assert await h.peer.receive() == {"jsonrpc": "2.0", "id": 5, "result": "third"}
    assert started == 1


# -- malformed input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "code", "echo_id"),
    [
        (b"{not json", errors.PARSE_ERROR, None),
        (b"\xff\xfe", errors.PARSE_ERROR, None),
        (b"[1, 2]", errors.INVALID_REQUEST, None),
        (b"42", errors.INVALID_REQUEST, None),
        (b'{"id": 3, "method": "ping"}', errors.INVALID_REQUEST, 3),
        (b'{"jsonrpc": "1.0", "id": "a", "method": "ping"}', errors.INVALID_REQUEST, "a"),
        (b'{"jsonrpc": "2.0", "id": 4, "method": 5}', errors.INVALID_REQUEST, 4),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', errors.INVALID_REQUEST, None),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', errors.INVALID_REQUEST, None),
        (b'{"jsonrpc": "2.0", "id": 8}', errors.INVALID_REQUEST, None),
        (b'{"jsonrpc": "2.0", "id": 9, "method": "missing"}', errors.METHOD_NOT_FOUND, 9),
    ],
)
async def test_malformed_lines_are_answered_and_reading_goes_on(
    line: bytes, code: int, echo_id: Any
) -> None:
    with trio.fail_after(5):
        async with serving() as h:
            await h.peer.send_raw(line + b"\n")
            answer = await h.peer.receive()
            assert answer["id"] == echo_id
            assert error_code(answer) == code
            await h.ping()


async def test_blank_lines_are_ignored() -> None:
    with trio.fail_after(5):
        async with serving() as h:
            await h.peer.send_raw(b"\n  \n\r\n")
            await h.ping()


async def test_over_long_line_is_invalid_request_and_reading_goes_on() -> None:
    with trio.fail_after(5):
        async with serving(max_line_bytes=100) as h:
            await h.peer.request(1, "echo", "x" * 200)
            answer = await h.peer.receive()
            assert answer["id"] is None
            assert error_code(answer) == errors.INVALID_REQUEST
            await h.ping()


# -- end of input ---------------------------------------------------------------------------------


async def test_end_of_input_closes_drains_and_flushes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler = FakeHandler()
    asked: list[str] = []
    cancelled_at: list[float] = []

    async def ask(params: Any, ready: Ready) -> Any:
        ready()
        try:
            await handler.conn.request("never/answered", {})
        except RpcError as exc:
            asked.append(exc.message)
            return {"failed": exc.code}
        return "answered?"

    async def slow(params: Any, ready: Ready) -> Any:
        ready()
        await trio.sleep(3)
        await handler.conn.notify("note", {"from": "slow"})
        return "slow done"

    async def forever(params: Any, ready: Ready) -> Any:
        ready()
        try:
            await trio.sleep_forever()
        finally:
            cancelled_at.append(trio.current_time())

    handler.routes.update({"ask": ask, "slow": slow, "forever": forever})
    echoes = [{"jsonrpc": "2.0", "id": 100 + i, "method": "echo", "params": i} for i in range(50)]
    with trio.fail_after(20):
        async with serving(handler, drain_timeout=5) as h:
            await h.peer.request("ask", "ask")
            assert (await h.peer.receive())["method"] == "never/answered"
            await h.peer.request("slow", "slow")
            await h.peer.request("forever", "forever")
            await h.peer.send(*echoes)
            await trio.testing.wait_all_tasks_blocked()
            assert handler.closed == 0
            closed_at = await h.close_input()
            await trio.testing.wait_all_tasks_blocked()
            assert handler.closed == 1
            rest = await h.peer.receive_rest()
            await h.served.wait()
    assert handler.closed == 1
    assert asked == ["connection closed"]
    assert cancelled_at == [pytest.approx(closed_at + 5)]
    assert h.served_at == pytest.approx(closed_at + 5)
    answers = {m["id"]: m for m in rest if "id" in m}
    assert answers["ask"]["result"] == {"failed": errors.INTERNAL_ERROR}
    assert answers["slow"]["result"] == "slow done"
    assert {"jsonrpc": "2.0", "method": "note", "params": {"from": "slow"}} in rest
    for echo in echoes:
        assert answers[echo["id"]]["result"] == echo["params"]


async def test_request_after_close_fails_at_once(autojump_clock: trio.testing.MockClock) -> None:
    handler = FakeHandler()
    outcomes: list[Any] = []

    async def late(params: Any, ready: Ready) -> Any:
        ready()
        await trio.sleep(1)  # the input closes meanwhile
        try:
            await handler.conn.request("q", {})
        except RpcError as exc:
            outcomes.append(exc.code)
        return "ok"

    handler.routes["late"] = late
    with trio.fail_after(10):
        async with serving(handler, drain_timeout=5) as h:
            await h.peer.request(1, "late")
            await trio.testing.wait_all_tasks_blocked()
            closed_at = await h.close_input()
            assert (await h.peer.receive())["result"] == "ok"
            await h.served.wait()
    assert outcomes == [errors.INTERNAL_ERROR]
    assert h.served_at == pytest.approx(closed_at + 1)


async def test_notification_after_close_is_dropped_not_raised() -> None:
    """A session task with something to say after shutdown (an MCP server that connected
    late announcing its prompts) must not crash the server: there is no one to hear it."""
    handler = FakeHandler()
    with trio.fail_after(10):
        async with serving(handler, drain_timeout=1) as h:
            await h.close_input()
            await h.served.wait()
            assert handler.conn.notify_nowait("session/update", {"late": True}) is False
            await handler.conn.notify("session/update", {"late": True})


async def test_stop_reading_behaves_like_end_of_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler = FakeHandler()

    async def slow(params: Any, ready: Ready) -> Any:
        ready()
        await trio.sleep(2)
        return "finished"

    handler.routes["slow"] = slow
    with trio.fail_after(10):
        async with serving(handler, drain_timeout=5) as h:
            await h.peer.request(1, "slow")
            await trio.testing.wait_all_tasks_blocked()
            stopped_at = trio.current_time()
            h.conn.stop_reading()
            await h.served.wait()
            assert handler.closed == 1
            assert h.served_at == pytest.approx(stopped_at + 2)
            assert await h.peer.receive_rest() == [
                {"jsonrpc": "2.0", "id": 1, "result": "finished"}
            ]


@pytest.mark.parametrize("how", ["end of input", "stop_reading"])
async def test_handler_cancelled_at_drain_timeout_still_answers(
    autojump_clock: trio.testing.MockClock,
    how: str,
) -> None:
    """The peer must not wait forever for a request the drain cancelled.

    Bug in Connection._run_request: ``scope.cancelled_caught`` is only true when the
    request's own scope was cancelled ($/cancel_request); the drain deadline cancels the
    enclosing nursery, so Cancelled propagates past the ``_respond`` and no answer is sent.
    """
    handler = FakeHandler()

    async def forever(params: Any, ready: Ready) -> Any:
        ready()
        await trio.sleep_forever()

    handler.routes["forever"] = forever
    with trio.fail_after(20):
        async with serving(handler, drain_timeout=5) as h:
            await h.peer.request(1, "forever")
            await trio.testing.wait_all_tasks_blocked()
            if how == "stop_reading":
                h.conn.stop_reading()
            else:
                await h.close_input()
            rest = await h.peer.receive_rest()
    assert [m["id"] for m in rest] == [1]
    assert error_code(rest[0]) == errors.REQUEST_CANCELLED


# -- output ----------------------------------------------------------------------------------------


async def test_concurrent_large_notifications_are_never_torn() -> None:
    """Many concurrent senders, some cancelled while they wait, behind a slow reader."""
    # More than the outbox plus one batch hold, so some senders wait and get cancelled there.
    count = WRITE_BUFFER + MAX_BATCH + 300
    payload = {i: chr(0x41 + i % 26) * (1000 + (i * 7919) % 30_000) + "é" for i in range(count)}
    doomed = {i: trio.CancelScope() for i in range(0, count, 3)}
    received: list[dict[str, Any]] = []

    async def send(i: int) -> None:
        with doomed.get(i) or contextlib.nullcontext():
            await h.conn.notify("big", {"i": i, "data": payload[i]})

    async def read_until_end() -> None:
        while (message := await h.peer.receive()).get("id") != "end":
            received.append(message)

    with trio.fail_after(30):
        async with (
            serving(pair=trio.testing.lockstep_stream_pair) as h,
            trio.open_nursery() as outer,
        ):
            async with trio.open_nursery() as senders:
                for i in range(count):
                    senders.start_soon(send, i)
                await trio.testing.wait_all_tasks_blocked()
                for scope in doomed.values():
                    scope.cancel()
                outer.start_soon(read_until_end)
            await h.peer.request("end", "ping")
    seen = [m["params"]["i"] for m in received]
    assert len(seen) == len(set(seen))
    assert {i for i in range(count) if i % 3} <= set(seen)
    assert len(seen) < count  # some senders really were cancelled while waiting
    for message in received:
        assert message["method"] == "big"
        assert message["params"]["data"] == payload[message["params"]["i"]]


async def test_notify_is_always_a_checkpoint() -> None:
    """Trio's rule 2: with room in the outbox too, notify is a cancel point and a schedule
    point; a cancelled caller gets Cancelled before anything is queued."""
    with trio.fail_after(5):
        async with serving() as h:
            for i in range(3):  # the outbox has room for all
                with trio.testing.assert_checkpoints():
                    await h.conn.notify("note", i)
            with trio.CancelScope() as scope:
                scope.cancel()
                await h.conn.notify("note", "never sent")
            assert scope.cancelled_caught
            received = [await h.peer.receive() for _ in range(3)]
            await h.ping()  # nothing else came before the pong
    assert [message["params"] for message in received] == [0, 1, 2]


async def test_notify_nowait_queues_a_burst_without_checkpoints() -> None:
    """A streaming loop queues with notify_nowait and awaits notify when it says False: after
    BURST in a row (so other tasks run), or when the outbox is full. Nothing refused is queued
    or recorded; the wire has them in the order queued."""
    tapped: list[bytes] = []

    def tap(way: str, line: bytes, is_json: bool) -> None:
        if way == "out":
            tapped.append(line)

    with trio.fail_after(5):
        async with serving(tap=tap) as h:
            sent = 0
            for _ in range(3):
                start = sent
                with trio.testing.assert_no_checkpoints():
                    while h.conn.notify_nowait("chunk", sent):
                        sent += 1
                    assert not h.conn.notify_nowait("chunk", "refused")
                assert sent - start == BURST
                assert len(tapped) == sent
                await h.conn.notify("chunk", sent)  # a checkpoint; the next burst may start
                sent += 1
            chunks = [(await h.peer.receive())["params"] for _ in range(sent)]
            await h.ping()
    assert chunks == list(range(sent)) and sent == 3 * (BURST + 1)
    assert b"refused" not in b"".join(tapped)


async def test_notify_nowait_refuses_when_the_outbox_is_full(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with serving(pair=trio.testing.lockstep_stream_pair) as h:
            sent = 0
            while True:  # the peer reads nothing
                if h.conn.notify_nowait("chunk", sent):
                    sent += 1
                    continue
                with trio.move_on_after(1) as waiting:
                    await h.conn.notify("chunk", sent)
                if waiting.cancelled_caught:
                    break  # full: notify waits for the peer
                sent += 1
            assert sent >= WRITE_BUFFER
            assert not h.conn.notify_nowait("chunk", "refused")  # no burst pending: full
            chunks = [(await h.peer.receive())["params"] for _ in range(sent)]
            await h.ping()
    assert chunks == list(range(sent))


async def test_peer_that_stops_reading_does_not_block_shutdown(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(30):
        async with serving(pair=trio.testing.lockstep_stream_pair, drain_timeout=5) as h:
            await h.peer.send(
                *[
                    {"jsonrpc": "2.0", "id": i, "method": "echo", "params": "x" * 1000}
                    for i in range(10)
                ]
            )
            await trio.testing.wait_all_tasks_blocked()
            closed_at = await h.close_input()  # and never read anything
            await h.served.wait()
    assert h.served_at is not None
    # The output was stuck (nobody reads), so the flush bound is what ended serve.
    assert h.served_at - closed_at == pytest.approx(FLUSH_TIMEOUT)
    assert "output closed" not in caplog.text


async def test_peer_that_stops_reading_with_full_outbox_does_not_block_shutdown(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler = FakeHandler()

    async def chatty(params: Any, ready: Ready) -> Any:
        ready()
        while True:  # blocks once the outbox is full
            await handler.conn.notify("chatter", "y" * 100)

    handler.routes["chatty"] = chatty
    count = WRITE_BUFFER + 50
    with trio.fail_after(60):
        async with serving(handler, pair=trio.testing.lockstep_stream_pair, drain_timeout=5) as h:
            await h.peer.request("c", "chatty")
            await h.peer.send(
                *[{"jsonrpc": "2.0", "id": i, "method": "echo", "params": i} for i in range(count)]
            )
            await trio.testing.wait_all_tasks_blocked()
            closed_at = await h.close_input()
            await h.served.wait()
    assert h.served_at is not None
    # The chatty handler is cancelled at the drain timeout, then the flush bound applies.
    assert h.served_at - closed_at <= 5 + 2 * FLUSH_TIMEOUT + 1e-6


async def test_answers_wait_for_a_slow_peer_while_serving(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A peer that pauses reading (the outbox full) still gets every answer once it reads.

    Bug in Connection._run_request: the answer is sent under ``move_on_after(FLUSH_TIMEOUT)``
    at all times, not only at shutdown, so an answer that waits more than FLUSH_TIMEOUT for
    room in the outbox is silently dropped and the peer waits for it forever.
    """
    handler = FakeHandler()
    flood_size = WRITE_BUFFER + MAX_BATCH + 10

    async def flood(params: Any, ready: Ready) -> Any:
        ready()
        for i in range(flood_size):
            await handler.conn.notify("chunk", i)
        return "flooded"

    handler.routes["flood"] = flood
    with trio.fail_after(60):
        async with serving(handler, pair=trio.testing.lockstep_stream_pair) as h:
            await h.peer.request("flood", "flood")
            await trio.testing.wait_all_tasks_blocked()
            await h.peer.request("echo", "echo", "hello")
            await trio.sleep(FLUSH_TIMEOUT * 3)  # the editor is busy for a moment
            answers: dict[str, Any] = {}
            chunks = 0
            while len(answers) < 2:
                message = await h.peer.receive()
                if "id" in message:
                    answers[message["id"]] = message.get("result")
                else:
                    chunks += 1
    assert answers == {"flood": "flooded", "echo": "hello"}
    assert chunks == flood_size


async def test_peer_that_closes_its_input_does_not_stop_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Our output breaks; we keep reading (and draining) until end of input."""
    handler = FakeHandler()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with trio.fail_after(5):
        async with serving(handler) as h:
            await h.peer.stream.receive_stream.aclose()
            for i in range(WRITE_BUFFER + 10):
                await h.peer.request(i, "echo", i)
            await h.peer.notify("still-reading")
            await trio.testing.wait_all_tasks_blocked()
            assert handler.notifications == [("still-reading", None)]
    assert h.served.is_set()
    assert "output closed by the peer" in caplog.text
