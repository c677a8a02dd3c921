"""Newline-delimited framing: bytes from a trio stream in, one line at a time out."""

from __future__ import annotations

import trio

RECEIVE_CHUNK = 1 << 20


class LineTooLong(Exception):
    """A line exceeded the limit; it was discarded up to its terminating newline."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"line longer than {limit} bytes")
        self.limit = limit


class LineReader:
    """Splits a byte stream at ``\\n``.

    Memory stays bounded by ``max_line_bytes``: an over-long line is dropped as it arrives, and
    :meth:`receive_line` raises :class:`LineTooLong` once its end is seen, so the caller can
    answer an error and keep reading.
    """

    def __init__(self, stream: trio.abc.ReceiveStream, max_line_bytes: int) -> None:
        self._stream = stream
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer already known to hold no newline
        self._discarding = False
        self._eof = False

    async def receive_line(self) -> bytes | None:
        """The next line without its newline, or None at end of stream.

        A final line without a newline is still returned.
        """
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._scanned = 0
                if self._discarding or len(line) > self._max:
                    self._discarding = False
                    raise LineTooLong(self._max)
                return line
            self._scanned = len(self._buffer)
            if self._scanned > self._max:
                self._discarding = True
                self._buffer.clear()
                self._scanned = 0
            if self._eof:
                if self._discarding:
                    self._discarding = False
                    self._buffer.clear()
                    raise LineTooLong(self._max)
                if not self._buffer:
                    return None
                if len(self._buffer) > self._max:
                    self._buffer.clear()
                    raise LineTooLong(self._max)
                line = bytes(self._buffer)
                self._buffer.clear()
                self._scanned = 0
                return line
            chunk = await self._stream.receive_some(RECEIVE_CHUNK)
            if not chunk:
                self._eof = True
            else:
                self._buffer += chunk
