"""Serve one client on a connection with an Agent of its own: what ``iaccode acp`` does on
stdin/stdout (:mod:`iaccode.server.stdio`), ``iaccode serve`` for each remote connection
(:mod:`iaccode.remote.connections`), and the in-process tests over memory streams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.server.agent import Agent
from iaccode.server.routes import Dispatcher
from iaccode.wire.connection import Connection

if TYPE_CHECKING:
    from iaccode.transcript.recorder import Recorder


async def serve_agent(
    config: Config,
    provider: Provider,
    connection: Connection,
    *,
    recorder: Recorder | None = None,
    close_sessions: bool = False,
) -> None:
    """Serve one client on ``connection`` with an Agent of its own until the client goes away.

    The agent's sessions live in a nursery of their own, cancelled when this returns. At end of
    input every running turn is cancelled and answered (see ``Connection.serve``); with
    ``close_sessions`` (a remote connection: the process lives on) each session is then
    released on disk, so another connection can load it. Either way every session's file is
    closed once its tasks have ended.
    """
    async with trio.open_nursery() as sessions:
        agent = Agent(
            config=config,
            provider=provider,
            connection=connection,
            session_nursery=sessions,
            recorder=recorder,
        )
        await connection.serve(Dispatcher(agent), drain_timeout=config.drain_timeout)
        agent.save_all()
        if close_sessions:
            for session in list(agent.sessions.values()):
                await session.close()
        sessions.cancel_scope.cancel()
    for session in agent.sessions.values():
        session.release()
