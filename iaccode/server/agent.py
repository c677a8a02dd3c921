"""The ACP agent: handlers for every method, named after the wire method.

Handlers take decoded params (attrs) and return attrs results; they raise RpcError for error
answers. The method table and the decoding live in ``routes.py``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import trio
from attrs import evolve

import iaccode
from iaccode.choices import THOUGHT_LEVELS
from iaccode.config import Config
from iaccode.llm.base import MissingCredentials, Provider
from iaccode.llm.providers import auth_method_text, offered_models
from iaccode.mcp.config import ServerConfigError, ServerSpec, from_acp, merge
from iaccode.protocol import messages as m
from iaccode.protocol.convert import to_wire
from iaccode.session.replay import replay_updates
from iaccode.session.session import Session
from iaccode.store.listing import decode_cursor
from iaccode.store.meta import SessionMeta, utc_now
from iaccode.store.store import (
    FormatTooNew,
    SessionFile,
    SessionLocked,
    SessionNotFound,
    SessionStore,
    StoreError,
    new_session_id,
)
from iaccode.tools import tool_output
from iaccode.transcript.playback import recorded_tool_results
from iaccode.turn.permissions import MODES
from iaccode.turn.stored_images import restore
from iaccode.wire import errors
from iaccode.wire.connection import Connection, ThenNotify

if TYPE_CHECKING:
    from iaccode.transcript.recorder import Recorder

T = TypeVar("T")

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1


def auth_method(config: Config) -> m.AuthMethod:
    """The configured provider's auth method: which variable to set."""
    return m.AuthMethod(*auth_method_text(config))



class Agent:
    def __init__(self, *, config: Config, provider: Provider, connection: Connection,
                 session_nursery: trio.Nursery,
                 on_initialized: Callable[[], None] = lambda: None,
                 recorder: Recorder | None = None) -> None:
        self.config = config
        self.provider = provider
        self.connection = connection
        self.initialized = False
        self.client_capabilities = m.ClientCapabilities()
        self.sessions: dict[str, Session] = {}
        self.store = SessionStore(config.home / "sessions")
        self._session_nursery = session_nursery
        """Where each session's own nursery lives (``Session.serve``)."""
        self._on_initialized = on_initialized
        self._recorder = recorder
        self._recorded_tools = (recorded_tool_results(config.recorded_tools)
                                if config.recorded_tools is not None else {})
        self._auth_method = auth_method(config)
        """Where the configured provider's key goes (offered while it is missing)."""
        self._offered = offered_models(config)
        """The configured provider's models (no network: the preset's list or config's)."""

    # -- handshake --------------------------------------------------------------------------

    async def initialize(self, params: m.InitializeRequest) -> m.InitializeResponse:
        self.client_capabilities = params.client_capabilities
        first = not self.initialized
        self.initialized = True
        if first:
            self._on_initialized()
        asked = params.protocol_version
        if type(asked) is not int or asked != PROTOCOL_VERSION:
            # The spec's rule: a version we do not support, or cannot read, is answered with
            # our latest; the client decides whether it can go on.
            log.warning("the client asked for protocol version %s; we speak %d and answer "
                        "that", json.dumps(asked), PROTOCOL_VERSION)
        return m.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=m.AgentCapabilities(
                load_session=True,
                prompt_capabilities=m.PromptCapabilities(
                    image=True, audio=False, embedded_context=True),
                session_capabilities=m.SessionCapabilities(
                    list={}, close={}, resume={}, fork={}, delete={}),
                mcp_capabilities=m.McpCapabilities(http=True, sse=True),
            ),
            agent_info=m.Implementation(name="iaccode", title="iac-code",
                                        version=iaccode.__version__),
            auth_methods=[] if self._has_credentials() else [self._auth_method],
            meta={"steering": {"supported": True}},  # _session/steering (see ``steer``)
        )

    async def authenticate(self, params: m.AuthenticateRequest) -> m.Empty:
        if params.method_id != self._auth_method.id:
            raise errors.invalid_params({"params.methodId": (
                f"unknown auth method {params.method_id!r}; ours is {self._auth_method.id!r}")})
        self._require_credentials()
        return m.Empty()

    def _has_credentials(self) -> bool:
        try:
            self.provider.check_credentials()
        except MissingCredentials:
            return False
        return True

    def _require_credentials(self) -> None:
        try:
            self.provider.check_credentials()
        except MissingCredentials as exc:
            raise errors.auth_required(str(exc)) from exc

    # -- sessions ---------------------------------------------------------------------------

    def _open_session(self, meta: SessionMeta, file: SessionFile | None,
                      records: list[dict[str, Any]], mcp_servers: list[ServerSpec],
                      unsaved: str | None = None) -> Session:
        session_id = meta.session_id
        return Session(
            meta=meta, file=file, records=records, config=self.config, provider=self.provider,
            send_update=lambda update: self._send_update(session_id, update),
            request=self.connection.request, client=self.client_capabilities,
            mcp_servers=mcp_servers,
            tool_tap=self._recorder.tool if self._recorder is not None else None,
            recorded_tools=self._recorded_tools, unsaved=unsaved)

    def _mcp_servers(self, raw: list[Any]) -> list[ServerSpec]:
        """The editor's ``mcpServers`` over config.toml's; a bad one is -32602 naming it."""
        try:
            return merge(self.config.mcp_servers, from_acp(raw))
        except ServerConfigError as exc:
            raise errors.invalid_params({f"params.{exc.where}": exc.problem}) from exc

    async def _start(self, session: Session) -> None:
        await self._session_nursery.start(session.serve)
        self.sessions[session.id] = session

    async def new_session(self, params: m.NewSessionRequest) -> ThenNotify:
        cwd = await _checked_cwd(params.cwd)
        self._require_credentials()
        servers = self._mcp_servers(params.mcp_servers)
        self._snapshot(cwd)
        stamp = utc_now()
        meta = SessionMeta(session_id=new_session_id(), cwd=str(cwd), created_at=stamp,
                           updated_at=stamp, model=self.config.model,
                           mode=self.config.default_mode,
                           thought_level=self.config.thought_level)
        file = await self._store_call(self.store.create, meta)
        session = self._open_session(meta, file, [], servers)
        await self._start(session)
        log.info("session %s opened in %s", session.id, cwd)
        return ThenNotify(m.NewSessionResponse(
            session_id=session.id, modes=self._modes(session), models=self._models(session),
            config_options=self._config_options(session)), session.announce)

    async def load_session(self, params: m.LoadSessionRequest) -> ThenNotify:
        """Restore from disk, replay the whole history as updates, then answer."""
        session = await self._restore(params, reattach=False)
        for update in replay_updates(session.records):
            await self.connection.notify("session/update",
                                         {"sessionId": session.id, "update": update})
        return ThenNotify(self._state(session), session.announce)

    async def resume_session(self, params: m.LoadSessionRequest) -> ThenNotify:
        """Restore without replay; a session already live here is simply reattached."""
        session = await self._restore(params, reattach=True)
        return ThenNotify(self._state(session), session.announce)

    async def _restore(self, params: m.LoadSessionRequest, *, reattach: bool) -> Session:
        cwd = await _checked_cwd(params.cwd)
        self._require_credentials()
        servers = self._mcp_servers(params.mcp_servers)
        self._snapshot(cwd)
        live = self.sessions.get(params.session_id)
        if live is not None:
            if reattach:
                return live
            if live.busy:
                raise errors.invalid_params({"params.sessionId": (
                    "a prompt is running in this session; cancel it or use session/resume")})
            del self.sessions[live.id]
            await live.close()
        file, meta, records, unsaved = await self._store_call(self._open_stored,
                                                              params.session_id)
        if str(cwd) != meta.cwd:
            meta = evolve(meta, cwd=str(cwd))
        meta = self._served(meta)
        session = self._open_session(meta, file, records, servers, unsaved)
        await self._start(session)
        log.info("session %s restored (%d records)", session.id, len(records))
        return session

    async def fork_session(self, params: m.LoadSessionRequest) -> ThenNotify:
        """A new session with a copy of the history as it stands after the last finished
        message; a turn running in the source goes on undisturbed."""
        cwd = await _checked_cwd(params.cwd)
        self._require_credentials()
        servers = self._mcp_servers(params.mcp_servers)
        source, _ = await self._store_call(self.store.read, params.session_id)
        stamp = utc_now()
        meta = evolve(source, session_id=new_session_id(), cwd=str(cwd), created_at=stamp,
                      updated_at=stamp,
                      title=f"{source.title} (fork)" if source.title else None)
        meta = self._served(meta)
        file, records = await self._store_call(self._fork_stored, params.session_id, meta)
        session = self._open_session(meta, file, records, servers)
        session.update_meta()
        await self._start(session)
        return ThenNotify(m.NewSessionResponse(
            session_id=session.id, modes=self._modes(session), models=self._models(session),
            config_options=self._config_options(session)), session.announce)

    async def list_sessions(self, params: m.ListSessionsRequest) -> m.ListSessionsResponse:
        if params.cursor is not None:
            try:
                decode_cursor(params.cursor)  # a cursor we did not make is bad params
            except StoreError as exc:
                raise errors.invalid_params({"params.cursor": str(exc)}) from exc
        metas, cursor = await self._store_call(
            lambda: self.store.list(cwd=params.cwd, cursor=params.cursor))
        return m.ListSessionsResponse(
            [m.SessionInfo(meta.session_id, meta.cwd, meta.title, meta.updated_at)
             for meta in metas], cursor)

    async def delete_session(self, params: m.SessionRequest) -> m.Empty:
        live = self.sessions.pop(params.session_id, None)
        if live is not None:
            await live.close()
        await self._store_call(self.store.delete, params.session_id)
        await trio.to_thread.run_sync(tool_output.remove, self.config.home, params.session_id)
        return m.Empty()

    def _served(self, meta: SessionMeta) -> SessionMeta:
        """A stored session's meta with a model this provider offers: one written under
        another provider (or model list) goes on with the configured model."""
        if meta.model in self._offered:
            return meta
        log.info("session %s: model %s is not offered by provider %s; using %s",
                 meta.session_id, meta.model, self.config.provider, self.config.model)
        return evolve(meta, model=self.config.model)

    def _open_stored(self, session_id: str
                     ) -> tuple[SessionFile | None, SessionMeta, list[dict[str, Any]], str | None]:
        """Open a stored session for writing or, when it can be read but not written (a
        read-only data dir), for reading only: then the file is None and the last item says
        why. A session locked by another process is not opened."""
        try:
            file, meta, records = self.store.open(session_id)
        except (SessionNotFound, SessionLocked, FormatTooNew):
            raise
        except StoreError as exc:
            meta, records = self.store.read(session_id)
            log.warning("session %s opened read-only: %s", session_id, exc)
            return None, meta, records, str(exc)
        return file, meta, [restore(record, file.load_image) for record in records], None

    def _fork_stored(self, source_id: str, meta: SessionMeta
                     ) -> tuple[SessionFile, list[dict[str, Any]]]:
        file, records = self.store.fork(source_id, meta)
        return file, [restore(record, file.load_image) for record in records]

    async def _store_call(self, function: Callable[..., T], *args: Any) -> T:
        """Run a store operation in a thread; its errors become answers the user can read."""
        try:
            return await trio.to_thread.run_sync(function, *args)
        except SessionNotFound as exc:
            raise errors.invalid_params({"params.sessionId": str(exc)}) from exc
        except SessionLocked as exc:
            raise errors.invalid_params({"params.sessionId": str(exc)}) from exc
        except StoreError as exc:
            # The message is what an editor shows: it says what failed and why ("No space
            # left on device", "Read-only file system").
            raise errors.RpcError(errors.INTERNAL_ERROR, f"Session store error: {exc}",
                                  {"detail": str(exc)}) from exc

    def _snapshot(self, cwd: Path) -> None:
        """A recording keeps the workspace as the first session found it, for replays."""
        if self._recorder is not None:
            self._recorder.workspace(cwd)

    def _state(self, session: Session) -> m.SessionStateResponse:
        return m.SessionStateResponse(self._modes(session), self._models(session),
                                      self._config_options(session))

    def _models(self, session: Session) -> m.SessionModelState:
        return m.SessionModelState(
            current_model_id=session.model,
            available_models=[m.ModelInfo(model_id, name)
                              for model_id, name in self._offered_models().items()],
        )

    def _modes(self, session: Session) -> m.SessionModeState:
        return m.SessionModeState(session.mode, list(MODES.values()))

    def _config_options(self, session: Session) -> list[m.SessionConfigOption]:
        return [
            m.SessionConfigOption(
                id="model", name="Model", category="model", current_value=session.model,
                options=[m.ConfigOptionValue(value, name)
                         for value, name in self._offered_models().items()]),
            m.SessionConfigOption(
                id="mode", name="Mode", category="mode", current_value=session.mode,
                options=[m.ConfigOptionValue(mode.id, mode.name, mode.description)
                         for mode in MODES.values()]),
            m.SessionConfigOption(
                id="thought_level", name="Thinking", category="thought_level",
                current_value=session.thought_level,
                options=[m.ConfigOptionValue(level.id, level.name)
                         for level in THOUGHT_LEVELS.values()]),
        ]

    async def set_mode(self, params: m.SetModeRequest) -> m.Empty:
        session = self._session(params.session_id)
        await session.set_mode(params.mode_id)
        await self._send_update(session.id, m.ConfigOptionUpdate(self._config_options(session)))
        return m.Empty()

    async def set_config_option(self, params: m.SetConfigOptionRequest
                                ) -> m.SetConfigOptionResponse:
        """Answers the full set of options as they are after the change, and sends it as a
        ``config_option_update`` too (other views of the session learn of it)."""
        session = self._session(params.session_id)
        valid: dict[str, Collection[str]] = {
            "model": self._offered_models(), "mode": MODES, "thought_level": THOUGHT_LEVELS}
        if params.config_id not in valid:
            raise errors.invalid_params({"params.configId": (
                f"unknown option {params.config_id!r}; the options are {', '.join(valid)}")})
        if params.value not in valid[params.config_id]:
            raise errors.invalid_params({"params.value": (
                f"unknown {params.config_id} {params.value!r}; the values are "
                f"{', '.join(valid[params.config_id])}")})
        if params.config_id == "mode":
            await session.set_mode(params.value)
        else:
            session.update_meta(**{params.config_id: params.value})
        options = self._config_options(session)
        await self._send_update(session.id, m.ConfigOptionUpdate(options))
        return m.SetConfigOptionResponse(options)

    def _offered_models(self) -> dict[str, str]:
        return self._offered

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise errors.invalid_params({"params.sessionId": f"session not found: {session_id}"})
        return session

    async def _send_update(self, session_id: str, update: m.SessionUpdate) -> None:
        # to_wire(m.SessionNotification(session_id, update)), without building one per update.
        await self.connection.notify(
            "session/update", {"sessionId": session_id, "update": to_wire(update)})

    async def prompt(self, params: m.PromptRequest, ready: Callable[[], None]) -> m.PromptResponse:
        self._require_credentials()
        return await self._session(params.session_id).prompt(params.prompt, ready)

    async def steer(self, params: m.SteeringRequest) -> m.SteeringResponse:
        """``_session/steering``: a message for the session's running turn, or a new turn."""
        self._require_credentials()
        return await self._session(params.session_id).steer(params.prompt, params.idle_behavior)

    def cancel(self, params: m.SessionRequest) -> None:
        session = self.sessions.get(params.session_id)
        if session is None:
            log.warning("session/cancel for unknown session %s", params.session_id)
            return
        session.cancel()

    async def close_session(self, params: m.SessionRequest) -> m.Empty:
        """Cancel a running turn, release the session; its history stays on disk."""
        session = self._session(params.session_id)
        del self.sessions[params.session_id]
        await session.close()
        log.info("session %s closed", params.session_id)
        return m.Empty()

    def shutdown(self) -> None:
        """The client is gone: cancel every running turn (each saves what it had)."""
        for session in self.sessions.values():
            session.cancel()

    def save_all(self) -> None:
        """At exit, after the turns have answered: one last try to write the history a full
        disk held back (``Transcript.flush``), so room made meanwhile is not wasted."""
        for session in self.sessions.values():
            session.transcript.flush()


async def _checked_cwd(raw: str) -> Path:
    cwd = Path(raw)
    if not cwd.is_absolute() or not await trio.Path(cwd).is_dir():
        raise errors.invalid_params({"params.cwd": (
            f"must be an absolute path to an existing directory: {raw!r}")})
    return cwd
