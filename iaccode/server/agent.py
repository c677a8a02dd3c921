"""The ACP agent: one method per wire method, named after it; the router calls them.

Handlers take decoded params (attrs) and return attrs results; they raise RpcError for error
answers. The method table and the decoding live in ``routes.py``. The work is elsewhere:
opening and releasing sessions in ``lifecycle.py``, listing in ``listing.py``, a session's
model / mode / thinking options in ``options.py``, the key check in ``credentials.py``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.llm.providers import offered_models, terminal_auth
from iaccode.protocol import messages as m
from iaccode.protocol.convert import converter, to_wire
from iaccode.server.credentials import Credentials
from iaccode.server.handshake import PROTOCOL_VERSION, initialize_result
from iaccode.server.lifecycle import SessionLifecycle
from iaccode.server.listing import list_sessions
from iaccode.server.options import SessionOptions
from iaccode.session.history_updates import history_updates
from iaccode.session.session import Session
from iaccode.wire import errors
from iaccode.wire.connection import Connection, ThenNotify

if TYPE_CHECKING:
    from iaccode.transcript.recorder import Recorder

log = logging.getLogger(__name__)


class Agent:
    def __init__(
        self,
        *,
        config: Config,
        provider: Provider,
        connection: Connection,
        session_nursery: trio.Nursery,
        recorder: Recorder | None = None,
    ) -> None:
        self.connection = connection
        self.initialized = False
        self.credentials = Credentials(config, provider)
        offered = offered_models(config)  # no network: the preset's list or config's
        self.options = SessionOptions(offered, self._send_update)
        self.lifecycle = SessionLifecycle(
            config=config,
            provider=provider,
            connection=connection,
            session_nursery=session_nursery,
            credentials=self.credentials,
            offered=offered,
            send_update=self._send_update,
            queue_update=self._queue_update,
            recorder=recorder,
        )

    @property
    def sessions(self) -> dict[str, Session]:
        """The live sessions by id."""
        return self.lifecycle.live

    # -- handshake --------------------------------------------------------------------------

    async def initialize(self, params: m.InitializeRequest) -> m.InitializeResponse:
        self.lifecycle.client_capabilities = params.client_capabilities
        self.initialized = True
        asked = params.protocol_version
        if type(asked) is not int or asked != PROTOCOL_VERSION:
            # The spec's rule: a version we do not support, or cannot read, is answered with
            # our latest; the client decides whether it can go on.
            log.warning(
                "the client asked for protocol version %s; we speak %d and answer that",
                json.dumps(asked),
                PROTOCOL_VERSION,
            )
        terminal = terminal_auth(to_wire(params.client_capabilities))
        result = initialize_result(self.credentials.methods(terminal=terminal))
        answer: m.InitializeResponse = converter.structure(result, m.InitializeResponse)
        return answer

    async def authenticate(self, params: m.AuthenticateRequest) -> m.Empty:
        """Check the key again (the environment's, or the one ``iaccode login`` saved since):
        -32000 saying what to do while there is none."""
        if not self.credentials.known(params.method_id):
            ours = [str(method["id"]) for method in self.credentials.methods(terminal=True)]
            raise errors.invalid_params(
                {
                    "params.methodId": (
                        f"unknown auth method {params.method_id!r}; ours are {', '.join(ours)}"
                    )
                }
            )
        self.credentials.require()
        return m.Empty()

    async def logout(self, params: m.Empty) -> m.Empty:
        """Forget the key ``iaccode login`` saved; sessions then need a key again (one in the
        environment still counts)."""
        await self.credentials.forget()
        return m.Empty()

    # -- sessions ---------------------------------------------------------------------------

    async def new_session(self, params: m.NewSessionRequest) -> ThenNotify:
        session = await self.lifecycle.new(params)
        return ThenNotify(self.options.opened(session), session.announce)

    async def load_session(self, params: m.LoadSessionRequest) -> ThenNotify:
        """Restore from disk, replay the whole history as updates, then answer."""
        session = await self.lifecycle.restore(params, reattach=False)
        for update in history_updates(session.records):
            notification = {"sessionId": session.id, "update": update}
            if not self.connection.notify_nowait("session/update", notification):
                await self.connection.notify("session/update", notification)  # wait for room
        return ThenNotify(self.options.state(session), session.announce)

    async def resume_session(self, params: m.LoadSessionRequest) -> ThenNotify:
        """Restore without replay; a session already live here is simply reattached."""
        session = await self.lifecycle.restore(params, reattach=True)
        return ThenNotify(self.options.state(session), session.announce)

    async def fork_session(self, params: m.LoadSessionRequest) -> ThenNotify:
        session = await self.lifecycle.fork(params)
        return ThenNotify(self.options.opened(session), session.announce)

    async def list_sessions(self, params: m.ListSessionsRequest) -> m.ListSessionsResponse:
        return await list_sessions(self.lifecycle.store, params)

    async def close_session(self, params: m.SessionRequest) -> m.Empty:
        await self.lifecycle.close(params.session_id)
        return m.Empty()

    async def delete_session(self, params: m.SessionRequest) -> m.Empty:
        await self.lifecycle.delete(params.session_id)
        return m.Empty()

    # -- a session's options ----------------------------------------------------------------

    async def set_mode(self, params: m.SetModeRequest) -> m.Empty:
        await self.options.set_mode(self.lifecycle.get(params.session_id), params.mode_id)
        return m.Empty()

    async def set_config_option(
        self, params: m.SetConfigOptionRequest
    ) -> m.SetConfigOptionResponse:
        session = self.lifecycle.get(params.session_id)
        return m.SetConfigOptionResponse(
            await self.options.set(session, params.config_id, params.value)
        )

    # -- turns ------------------------------------------------------------------------------

    async def prompt(self, params: m.PromptRequest, ready: Callable[[], None]) -> m.PromptResponse:
        self.credentials.require()
        return await self.lifecycle.get(params.session_id).prompt(params.prompt, ready)

    async def steer(self, params: m.SteeringRequest) -> m.SteeringResponse:
        """``_session/steering``: a message for the session's running turn, or a new turn."""
        self.credentials.require()
        return await self.lifecycle.get(params.session_id).steer(
            params.prompt, params.idle_behavior
        )

    def cancel(self, params: m.SessionRequest) -> None:
        session = self.sessions.get(params.session_id)
        if session is None:
            log.warning("session/cancel for unknown session %s", params.session_id)
            return
        session.cancel()

    # -- the connection's end ---------------------------------------------------------------

    def shutdown(self) -> None:
        """The client is gone: cancel every running turn (each saves what it had)."""
        for session in self.sessions.values():
            session.cancel()

    def save_all(self) -> None:
        """At exit, after the turns have answered: one last try to write the history a full
        disk held back (``Transcript.flush``), so room made meanwhile is not wasted."""
        for session in self.sessions.values():
            session.transcript.flush()

    async def _send_update(self, session_id: str, update: m.SessionUpdate) -> None:
        """A ``session/update``; always a checkpoint (it waits while the output is full)."""
        # to_wire(m.SessionNotification(session_id, update)), without building one per update.
        await self.connection.notify(
            "session/update", {"sessionId": session_id, "update": to_wire(update)}
        )

    def _queue_update(self, session_id: str, update: m.SessionUpdate) -> bool:
        """A ``session/update`` if that needs no wait (never a checkpoint); False, with nothing
        sent, when the caller should await ``_send_update`` (``Connection.notify_nowait``)."""
        return self.connection.notify_nowait(
            "session/update", {"sessionId": session_id, "update": to_wire(update)}
        )
