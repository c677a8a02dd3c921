"""The agent's messages waiting for a connection's streams: one lane for the connection-scoped
stream, one for each session-scoped stream a client has open.

A message about a session goes to that session's lane while its stream is open, else to the
connection's (so a client that never opens a session stream gets everything there, as before
session streams existed). When a session stream opens, that session's messages still waiting
in the connection's lane move to it; when it closes, what is left in its lane moves back, in
the order the agent sent it.

Each session's messages reach the client in the order the agent sent them, whichever stream
they take: a message waits until the session's earlier messages have been written. That
keeps a prompt's first chunks (sent before the client's session stream opened) ahead of the
rest, and the answer to ``session/load`` (on the connection's stream) behind the history it
replays (on the session's). Across HTTP/2 streams this is the order they are handed to the
HTTP layer; the RFD defines no order between streams.

Back-pressure is the connection's, not a lane's: at most ``limit`` messages wait in all its
lanes together. Past that the agent's writer waits; if no room is made within
``send_timeout``, ``on_stall`` closes the connection, never a message silently dropped.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Callable

import trio
from attrs import define, field, frozen

from iaccode.remote.routing import CONNECTION, Destination


@frozen
class Item:
    seq: int
    """Its place among all the connection's messages."""
    line: bytes
    destination: Destination
    order: int
    """Its place among its session's messages (-1: not about a session)."""


@define(eq=False)
class Lane:
    """The messages waiting for one stream."""

    session: str | None
    items: deque[Item] = field(factory=deque)
    attached: bool = False
    """A client is reading this lane's stream."""


class StreamBusy(Exception):
    """That stream is already open (409)."""


class StreamStalled(Exception):
    """The client made no room for ``send_timeout`` seconds; the connection is closing."""


class Outbox:
    """The lanes of one connection, and the order and room rules between them."""

    def __init__(self, limit: int, send_timeout: float, on_stall: Callable[[str], None]) -> None:
        self._limit = limit
        self._send_timeout = send_timeout
        self._on_stall = on_stall
        self.connection = Lane(None)
        self._sessions: dict[str, Lane] = {}
        self._seq = 0
        self._routed: defaultdict[str, int] = defaultdict(int)
        self._written: defaultdict[str, int] = defaultdict(int)
        """Per session: how many of its messages have been written (or lost with a stream
        that went away while writing them)."""
        self._waiting = 0
        self._stalled = False
        self.closed = False
        self._changed = trio.Event()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    @property
    def streams_open(self) -> int:
        return int(self.connection.attached) + len(self._sessions)

    # -- the agent's side --------------------------------------------------------------------

    async def put(self, line: bytes, destination: Destination = CONNECTION) -> None:
        """Queue one message, waiting for room. trio.BrokenResourceError once closed;
        StreamStalled when the client made no room in time (and for good after that)."""
        if self._stalled:
            raise StreamStalled
        if self._waiting >= self._limit and not self.closed:
            with trio.move_on_after(self._send_timeout):
                while self._waiting >= self._limit and not self.closed:
                    await self._changed.wait()
            if self._waiting >= self._limit and not self.closed:
                self._stalled = True
                self._on_stall(
                    f"the client read none of its stream for "
                    f"{self._send_timeout:g} s with {self._limit} messages waiting"
                )
                raise StreamStalled
        if self.closed:
            raise trio.BrokenResourceError("the connection's streams are closed")
        order = -1
        if destination.session is not None:
            order = self._routed[destination.session]
            self._routed[destination.session] += 1
        self._seq += 1
        lane = self.connection
        if destination.on_session_stream and destination.session is not None:
            lane = self._sessions.get(destination.session, self.connection)
        lane.items.append(Item(self._seq, bytes(line), destination, order))
        self._waiting += 1
        self._wake()

    def close(self) -> None:
        """No more messages: each stream ends once what waits in its lane is written."""
        self.closed = True
        self._wake()

    # -- the streams' side -------------------------------------------------------------------

    def attach(self, session: str | None) -> Lane:
        """The lane of a stream a client opens (StreamBusy when it is already open)."""
        if session is None:
            if self.connection.attached:
                raise StreamBusy
            self.connection.attached = True
            self._wake()
            return self.connection
        if session in self._sessions:
            raise StreamBusy
        lane = Lane(session, attached=True)
        mine = deque(
            item
            for item in self.connection.items
            if item.destination.on_session_stream and item.destination.session == session
        )
        if mine:
            self.connection.items = deque(
                item
                for item in self.connection.items
                if item.destination.session != session or not item.destination.on_session_stream
            )
            lane.items = mine
        self._sessions[session] = lane
        self._wake()
        return lane

    def detach(self, lane: Lane) -> None:
        """The client's stream for ``lane`` ended; a session's unwritten messages go back to
        the connection's lane, in the agent's order."""
        lane.attached = False
        if lane.session is not None and self._sessions.get(lane.session) is lane:
            del self._sessions[lane.session]
            if lane.items:
                self.connection.items = deque(
                    heapq.merge(self.connection.items, lane.items, key=lambda item: item.seq)
                )
                lane.items = deque()
        self._wake()

    async def take(self, lane: Lane, most: int) -> list[Item]:
        """The next messages for ``lane``'s stream (up to ``most``), waiting until one may go;
        [] once the outbox is closed and the lane is empty. Give them back to ``written``."""
        while True:
            batch = self._ready(lane, most)
            if batch:
                for _ in batch:
                    lane.items.popleft()
                return batch
            if self.closed and not lane.items:
                return []
            await self._changed.wait()

    def _ready(self, lane: Lane, most: int) -> list[Item]:
        batch: list[Item] = []
        next_of: dict[str, int] = {}
        for item in lane.items:
            session = item.destination.session
            if len(batch) >= most:
                break
            if session is not None and not self.closed:  # once closed, order is no longer kept
                if item.order != next_of.get(session, self._written[session]):
                    break  # an earlier message of its session is still on its way elsewhere
                next_of[session] = item.order + 1
            batch.append(item)
        return batch

    def written(self, items: list[Item]) -> None:
        """These messages were written (or lost with their stream): room for others."""
        for item in items:
            session = item.destination.session
            if session is not None:
                self._written[session] = max(self._written[session], item.order + 1)
        self._waiting -= len(items)
        self._wake()
