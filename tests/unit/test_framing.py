"""LineReader: newline framing over a trio byte stream, with a bounded line length."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import trio
import trio.testing
from hypothesis import example, given, settings
from hypothesis import strategies as st

from iaccode.wire.framing import LineReader, LineTooLong

TOO_LONG = "<too long>"
"""Stands for a LineTooLong in the sequence of what a reader produced."""

Outcome = bytes | str | None


async def read_all(reader: LineReader) -> list[Outcome]:
    """Everything the reader produces until end of stream (inclusive)."""
    out: list[Outcome] = []
    while True:
        try:
            line = await reader.receive_line()
        except LineTooLong:
            out.append(TOO_LONG)
            continue
        out.append(line)
        if line is None:
            return out


async def feed(
    chunks: Sequence[bytes],
    limit: int,
    *,
    max_buffer: list[int] | None = None,
) -> list[Outcome]:
    """Send `chunks` one at a time (the reader sees every chunk boundary) and read everything.

    After each chunk is consumed, the reader's internal buffer length is recorded in
    `max_buffer` (if given).
    """
    send, receive = trio.testing.memory_stream_one_way_pair()
    reader = LineReader(receive, limit)
    result: list[Outcome] = []

    async def reader_task() -> None:
        result.extend(await read_all(reader))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader_task)
        for chunk in chunks:
            await send.send_all(chunk)
            # The reader takes the chunk on its own before the next one is sent, so every
            # chunk boundary is a receive_some boundary.
            await trio.testing.wait_all_tasks_blocked()
            if max_buffer is not None:
                max_buffer.append(len(reader._buffer))
        await send.aclose()
    return result


def split(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = [0, *sorted(set(cuts)), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


def expected(lines: Sequence[bytes], terminated: bool, limit: int) -> list[Outcome]:
    if not terminated and lines and not lines[-1]:
        lines = lines[:-1]  # an empty unterminated "line" is just the end of the stream
    return [line if len(line) <= limit else TOO_LONG for line in lines] + [None]


line_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x"))


@st.composite
def framed_streams(draw: st.DrawFn) -> tuple[list[bytes], bool, list[bytes]]:
    lines = draw(st.lists(line_bytes, max_size=12))
    terminated = draw(st.booleans())
    data = b"\n".join(lines) + (b"\n" if terminated and lines else b"")
    cuts = draw(st.lists(st.integers(0, max(len(data), 0)), max_size=len(data) + 1))
    return lines, terminated and bool(lines), split(data, cuts)


@settings(deadline=None, max_examples=200)
@given(stream=framed_streams())
async def test_any_chunking_parses_the_same(
    stream: tuple[list[bytes], bool, list[bytes]],
) -> None:
    lines, terminated, chunks = stream
    with trio.fail_after(10):
        assert await feed(chunks, 1000) == expected(lines, terminated, 1000)


@settings(deadline=None, max_examples=200)
@given(stream=framed_streams(), limit=st.integers(0, 45))
# Regression: an over-long unterminated last line whose tail sits in a chunk of its own used
# to come back as a line of its own after the LineTooLong.
@example(stream=([b"aaaa"], False, [b"aaa", b"a"]), limit=1)
async def test_any_chunking_with_over_long_lines(
    stream: tuple[list[bytes], bool, list[bytes]], limit: int
) -> None:
    """Over-long lines become exactly one LineTooLong each, wherever the chunks are cut."""
    lines, terminated, chunks = stream
    with trio.fail_after(10):
        assert await feed(chunks, limit) == expected(lines, terminated, limit)


@settings(deadline=None, max_examples=100)
@given(stream=framed_streams())
async def test_byte_at_a_time(stream: tuple[list[bytes], bool, list[bytes]]) -> None:
    lines, terminated, chunks = stream
    data = b"".join(chunks)
    with trio.fail_after(10):
        one_by_one = [data[i : i + 1] for i in range(len(data))]
        assert await feed(one_by_one, 20) == expected(lines, terminated, 20)


async def test_final_line_without_newline_is_returned() -> None:
    with trio.fail_after(5):
        assert await feed([b"first\nlast"], 100) == [b"first", b"last", None]
        assert await feed([b"only"], 100) == [b"only", None]


async def test_eof_returns_none_and_keeps_returning_none() -> None:
    with trio.fail_after(5):
        send, receive = trio.testing.memory_stream_one_way_pair()
        await send.aclose()
        reader = LineReader(receive, 10)
        assert await reader.receive_line() is None
        assert await reader.receive_line() is None


async def test_empty_lines_are_returned_as_empty() -> None:
    with trio.fail_after(5):
        assert await feed([b"\n\na\n"], 10) == [b"", b"", b"a", None]


async def test_line_exactly_at_the_limit_is_accepted() -> None:
    with trio.fail_after(5):
        assert await feed([b"x" * 10 + b"\n" + b"y" * 10], 10) == [b"x" * 10, b"y" * 10, None]
        assert await feed([b"x" * 11 + b"\n" + b"y" * 11], 10) == [TOO_LONG, TOO_LONG, None]


@pytest.mark.parametrize("terminated", [True, False])
async def test_long_line_in_one_chunk_raises_once_then_next_line_reads(terminated: bool) -> None:
    tail = b"next\n" if terminated else b"next"
    with trio.fail_after(5):
        assert await feed([b"a" * 500 + b"\n" + tail], 100) == [TOO_LONG, b"next", None]


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 99, 100, 101, 333])
async def test_long_line_over_many_chunks_raises_once_then_next_line_reads(
    chunk_size: int,
) -> None:
    data = b"short\n" + b"a" * 1000 + b"\nnext\n"
    chunks = [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)]
    with trio.fail_after(5):
        assert await feed(chunks, 100) == [b"short", TOO_LONG, b"next", None]


@pytest.mark.parametrize(
    "chunks",
    [
        [b"ok\n"] + [b"z" * 50] * 20,
        [b"ok\n", b"z" * 150, b"z"],
        [b"ok\n" + b"z" * 101],
    ],
    ids=["many-chunks", "tail-chunk", "one-chunk"],
)
async def test_long_line_at_end_of_stream_raises_once(chunks: list[bytes]) -> None:
    """An unterminated over-long last line: one LineTooLong, then end of stream.

    Regression: at EOF while discarding, the buffer was not cleared, so the next call returned
    the line's tail (the bytes received since the last clear) as a line.
    """
    with trio.fail_after(5):
        assert await feed(chunks, 100) == [b"ok", TOO_LONG, None]


async def test_line_too_long_carries_the_limit() -> None:
    with trio.fail_after(5):
        send, receive = trio.testing.memory_stream_one_way_pair()
        await send.send_all(b"x" * 20 + b"\n")
        await send.aclose()
        reader = LineReader(receive, 7)
        with pytest.raises(LineTooLong) as info:
            await reader.receive_line()
        assert info.value.limit == 7
        assert "7" in str(info.value)
        assert await reader.receive_line() is None


@pytest.mark.parametrize("chunk_size", [1, 10, 99, 100, 101, 1000, 4096])
async def test_memory_stays_bounded_while_discarding(chunk_size: int) -> None:
    """The buffer never holds more than the limit plus one received chunk."""
    limit = 100
    huge = b"h" * max(20 * limit, 50 * chunk_size)
    data = b"before\n" + huge + b"\nafter\n"
    chunks = [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)]
    sizes: list[int] = []
    with trio.fail_after(20):
        result = await feed(chunks, limit, max_buffer=sizes)
    assert result == [b"before", TOO_LONG, b"after", None]
    assert max(sizes) <= limit + chunk_size
