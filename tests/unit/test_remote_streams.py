"""A remote connection's two kinds of stream (the RFD of 2026-05-04): which messages go to
which, what moves when a session's stream opens and closes, and the order of one session's
messages across both. In-process, on the real Outbound a connection writes to."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from iaccode.remote.outbox import Lane, Outbox, StreamBusy
from iaccode.remote.pipes import Outbound
from iaccode.remote.routing import Router


def line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def update(session: str, text: str) -> bytes:
    return line(
        {
            "method": "session/update",
            "params": {
                "sessionId": session,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                },
            },
        }
    )


def answer(request_id: int, result: dict[str, Any]) -> bytes:
    return line({"id": request_id, "result": result})


def http_outbound() -> Outbound:
    return Outbound(30, lambda reason: None, Router())


def asked(outbound: Outbound, request_id: int, method: str, **params: Any) -> None:
    assert outbound.router is not None
    outbound.router.client_sent(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    )


def shown(item_line: bytes) -> str:
    """A message as a short label: the text of an update, else ``answer <id>``."""
    message = json.loads(item_line)
    if message.get("method") == "session/update":
        return str(message["params"]["update"]["content"]["text"])
    if message.get("method"):
        return str(message["method"])
    return f"answer {message['id']}"


async def drain(outbox: Outbox, lane: Lane) -> list[str]:
    """What a reader of ``lane`` gets now (without waiting), marked written."""
    with trio.move_on_after(0.01):
        items = await outbox.take(lane, 100)
        outbox.written(items)
        return [shown(item.line) for item in items]
    return []


async def test_without_a_session_stream_everything_is_on_the_connection_stream() -> None:
    outbound = http_outbound()
    connection = outbound.outbox.attach(None)
    asked(outbound, 1, "session/new", cwd="/p", mcpServers=[])
    await outbound.send_all(answer(1, {"sessionId": "sess_a"}))
    asked(outbound, 2, "session/prompt", sessionId="sess_a", prompt=[])
    await outbound.send_all(update("sess_a", "one") + answer(2, {"stopReason": "end_turn"}))
    assert await drain(outbound.outbox, connection) == ["answer 1", "one", "answer 2"]


async def test_a_session_stream_takes_its_session_and_leaves_the_rest() -> None:
    outbound = http_outbound()
    outbox = outbound.outbox
    connection = outbox.attach(None)
    asked(outbound, 1, "session/new", cwd="/p", mcpServers=[])
    await outbound.send_all(answer(1, {"sessionId": "sess_a"}))
    assert outbound.router is not None and outbound.router.sessions == {"sess_a"}
    await outbound.send_all(update("sess_a", "early"))  # before the client opened its stream
    session = outbox.attach("sess_a")
    asked(outbound, 2, "session/prompt", sessionId="sess_a", prompt=[])
    permission = line(
        {
            "id": 7,
            "method": "session/request_permission",
            "params": {"sessionId": "sess_a", "options": [], "toolCall": {}},
        }
    )
    await outbound.send_all(
        update("sess_a", "one")
        + permission
        + line({"method": "x/connection-wide", "params": {}})
        + answer(2, {"stopReason": "end_turn"})
    )
    asked(outbound, 3, "session/list")
    await outbound.send_all(answer(3, {"sessions": []}))
    assert await drain(outbox, connection) == ["answer 1", "x/connection-wide", "answer 3"]
    # "early" was waiting in the connection's lane: it moved to the session's, first.
    assert await drain(outbox, session) == [
        "early",
        "one",
        "session/request_permission",
        "answer 2",
    ]
    with pytest.raises(StreamBusy):  # 409: one stream of each scope
        outbox.attach("sess_a")
    with pytest.raises(StreamBusy):
        outbox.attach(None)


async def test_the_load_answer_waits_for_the_history_it_replays() -> None:
    """session/load: the replay is the session's (its stream), the answer the connection's;
    the answer goes out only once the replay was written."""
    outbound = http_outbound()
    outbox = outbound.outbox
    connection = outbox.attach(None)
    session = outbox.attach("sess_a")  # opened before the load, as the RFD's resume flow does
    asked(outbound, 1, "session/load", sessionId="sess_a", cwd="/p", mcpServers=[])
    await outbound.send_all(
        update("sess_a", "old 1")
        + update("sess_a", "old 2")
        + answer(1, {})
        + update("sess_a", "after")
    )
    assert await drain(outbox, connection) == []  # held: the replay is not written yet
    with trio.move_on_after(0.01):
        first = await outbox.take(session, 1)
    assert [shown(item.line) for item in first] == ["old 1"]
    outbox.written(first)
    assert await drain(outbox, connection) == []
    # "after" waits for the answer in turn: one session's messages keep their order.
    assert await drain(outbox, session) == ["old 2"]
    assert await drain(outbox, connection) == ["answer 1"]
    assert await drain(outbox, session) == ["after"]
    assert outbound.router is not None and "sess_a" in outbound.router.sessions


async def test_a_closed_session_stream_gives_back_what_it_had_not_written() -> None:
    outbound = http_outbound()
    outbox = outbound.outbox
    connection = outbox.attach(None)
    session = outbox.attach("sess_a")
    await outbound.send_all(
        update("sess_a", "one") + update("sess_b", "other") + update("sess_a", "two")
    )
    outbox.detach(session)  # the client's GET went away
    await outbound.send_all(update("sess_a", "three"))
    assert await drain(outbox, connection) == ["one", "other", "two", "three"]
    again = outbox.attach("sess_a")  # it may open it again
    await outbound.send_all(update("sess_a", "four"))
    assert await drain(outbox, again) == ["four"]


async def test_a_closed_session_is_no_longer_held() -> None:
    outbound = http_outbound()
    outbox = outbound.outbox
    outbox.attach(None)
    router = outbound.router
    assert router is not None
    for request_id, method, result in (
        (1, "session/new", {"sessionId": "sess_a"}),
        (2, "session/fork", {"sessionId": "sess_b"}),
    ):
        asked(outbound, request_id, method, sessionId="sess_x", cwd="/p")
        await outbound.send_all(answer(request_id, result))
    asked(outbound, 3, "session/resume", sessionId="sess_c", cwd="/p")
    await outbound.send_all(answer(3, {}))
    asked(outbound, 4, "session/load", sessionId="sess_d", cwd="/p")
    await outbound.send_all(line({"id": 4, "error": {"code": -32002, "message": "no"}}))
    assert router.sessions == {"sess_a", "sess_b", "sess_c"}
    asked(outbound, 5, "session/close", sessionId="sess_a")
    asked(outbound, 6, "session/delete", sessionId="sess_b")
    await outbound.send_all(answer(5, {}) + answer(6, {}))
    assert router.sessions == {"sess_c"}


async def test_room_is_the_connections_across_its_streams(
    autojump_clock: trio.testing.MockClock,
) -> None:
    reasons: list[str] = []
    outbox = Outbox(4, 5, reasons.append)
    outbound = Outbound(5, reasons.append, Router())
    outbound.outbox = outbox
    session = outbox.attach("sess_a")
    outbox.attach(None)
    await outbound.send_all(
        update("sess_a", "1") + update("sess_a", "2") + line({"method": "x", "params": {}}) * 2
    )  # full: 4 waiting
    async with trio.open_nursery() as nursery:

        async def read_later() -> None:
            await trio.sleep(3)
            outbox.written(await outbox.take(session, 1))

        nursery.start_soon(read_later)
        await outbound.send_all(update("sess_a", "3"))  # waited 3 s for the session's reader
    assert reasons == []
    with pytest.raises(trio.BrokenResourceError):
        await outbound.send_all(update("sess_a", "4"))
    assert reasons and "read none of its stream for 5 s" in reasons[0]


async def test_a_websocket_has_one_stream_and_nothing_is_parsed() -> None:
    outbound = Outbound(30, lambda reason: None)  # no router: WebSocket
    lane = outbound.outbox.attach(None)
    await outbound.send_all(update("sess_a", "one") + b"not json\n")
    assert [item.line for item in await outbound.outbox.take(lane, 10)][1] == b"not json"
