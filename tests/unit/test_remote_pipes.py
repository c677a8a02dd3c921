"""The pipes a remote connection gives ``wire.Connection``: routing, order, back-pressure."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from iaccode.remote.pipes import STREAM_BUFFER, Inbound, Outbound


async def test_inbound_makes_each_message_one_line_and_ends() -> None:
    inbound = Inbound()
    await inbound.put(b'{\n  "jsonrpc": "2.0",\r\n  "method": "x"\n}')
    line = await inbound.receive_some()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"jsonrpc": "2.0", "method": "x"}
    inbound.close()
    assert await inbound.receive_some() == b""
    with pytest.raises(trio.ClosedResourceError):
        await inbound.put(b"{}")


async def test_outbound_routes_the_awaited_answer_and_queues_the_rest_in_order() -> None:
    outbound = Outbound(30, lambda reason: None)
    outbound.expect_reply(1)
    await outbound.send_all(
        b'{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","id":"1",'
        b'"result":{}}\n{"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n'
        b'{"jsonrpc":"2.0","method":"b"}\n'
    )
    assert json.loads(await outbound.wait_reply(1) or b"") == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"ok": True},
    }
    lane = outbound.outbox.attach(None)
    queued = [json.loads(item.line) for item in await outbound.outbox.take(lane, 10)]
    assert [m.get("method", m.get("id")) for m in queued] == ["a", "1", "b"]  # "1" is not 1


async def test_a_full_stream_waits_then_closes_with_a_reason(
    autojump_clock: trio.testing.MockClock,
) -> None:
    reasons: list[str] = []
    outbound = Outbound(5, reasons.append)
    lane = outbound.outbox.attach(None)
    await outbound.send_all(b"m\n" * STREAM_BUFFER)  # fills the queue without waiting
    async with trio.open_nursery() as nursery:

        async def read_one_later() -> None:
            await trio.sleep(4)
            items = await outbound.outbox.take(lane, 1)
            assert [item.line for item in items] == [b"m"]
            outbound.outbox.written(items)

        nursery.start_soon(read_one_later)
        await outbound.send_all(b"late\n")  # waits 4 s for room: nothing lost
    assert reasons == []
    start = trio.current_time()
    with pytest.raises(trio.BrokenResourceError):
        await outbound.send_all(b"too late\n")
    assert trio.current_time() - start == pytest.approx(5)
    assert reasons and "read none of its stream for 5 s" in reasons[0]
    with pytest.raises(trio.BrokenResourceError):
        await outbound.send_all(b"after\n")
    received = await outbound.outbox.take(lane, 2 * STREAM_BUFFER)
    assert len(received) == STREAM_BUFFER
    assert received[-1].line == b"late"  # everything queued before the close is still there
