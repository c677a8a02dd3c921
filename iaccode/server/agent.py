"""The ACP agent: handlers for every method, named after the wire method.

Handlers take decoded params (attrs) and return attrs results; they raise RpcError for error
answers. The method table and the decoding live in ``routes.py``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path

import trio

import iaccode
from iaccode.config import MODELS, Config
from iaccode.llm.base import MissingCredentials, Provider
from iaccode.protocol import messages as m
from iaccode.protocol.convert import to_wire
from iaccode.session.session import Session
from iaccode.turn.permissions import MODES
from iaccode.wire import errors
from iaccode.wire.connection import Connection

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1

AUTH_METHOD = m.AuthMethod(
    id="anthropic-api-key",
    name="Anthropic API key",
    description="Set ANTHROPIC_API_KEY in the environment the editor starts `iaccode acp` with.",
)



class Agent:
    def __init__(self, *, config: Config, provider: Provider, connection: Connection,
                 session_nursery: trio.Nursery,
                 on_initialized: Callable[[], None] = lambda: None) -> None:
        self.config = config
        self.provider = provider
        self.connection = connection
        self.initialized = False
        self.client_capabilities = m.ClientCapabilities()
        self.sessions: dict[str, Session] = {}
        self._session_nursery = session_nursery
        """Where each session's own nursery lives (``Session.serve``)."""
        self._on_initialized = on_initialized

    # -- handshake --------------------------------------------------------------------------

    async def initialize(self, params: m.InitializeRequest) -> m.InitializeResponse:
        self.client_capabilities = params.client_capabilities
        first = not self.initialized
        self.initialized = True
        if first:
            self._on_initialized()
        return m.InitializeResponse(
            # We speak version 1 only: echo it, and answer 1 to anything else (the client
            # decides whether it can go on).
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=m.AgentCapabilities(
                load_session=False,
                prompt_capabilities=m.PromptCapabilities(
                    image=False, audio=False, embedded_context=True),
                session_capabilities=m.SessionCapabilities(close={}),
            ),
            agent_info=m.Implementation(name="iaccode", title="iac-code",
                                        version=iaccode.__version__),
            auth_methods=[] if self._has_credentials() else [AUTH_METHOD],
        )

    async def authenticate(self, params: m.AuthenticateRequest) -> m.Empty:
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

    async def new_session(self, params: m.NewSessionRequest) -> m.NewSessionResponse:
        cwd = Path(params.cwd)
        if not cwd.is_absolute() or not await trio.Path(cwd).is_dir():
            raise errors.invalid_params({"params.cwd": (
                f"must be an absolute path to an existing directory: {params.cwd!r}")})
        self._require_credentials()
        session_id = f"sess_{uuid.uuid4().hex}"
        session = Session(
            session_id=session_id, cwd=cwd, config=self.config, provider=self.provider,
            model=self.config.model, mcp_servers=params.mcp_servers,
            send_update=lambda update: self._send_update(session_id, update),
            request=self.connection.request, client=self.client_capabilities,
        )
        await self._session_nursery.start(session.serve)
        self.sessions[session_id] = session
        log.info("session %s opened in %s", session_id, cwd)
        return m.NewSessionResponse(
            session_id=session_id,
            modes=self._modes(session),
            models=self._models(session),
            config_options=self._config_options(session),
        )

    def _modes(self, session: Session) -> m.SessionModeState:
        return m.SessionModeState(session.mode, list(MODES.values()))

    def _models(self, session: Session) -> m.SessionModelState:
        return m.SessionModelState(
            current_model_id=session.model,
            available_models=[m.ModelInfo(model_id, name)
                              for model_id, name in self._offered_models().items()],
        )

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
        ]

    async def set_mode(self, params: m.SetModeRequest) -> m.Empty:
        await self._session(params.session_id).set_mode(params.mode_id)
        return m.Empty()

    async def set_config_option(self, params: m.SetConfigOptionRequest
                                ) -> m.SetConfigOptionResponse:
        """Answers the full set of options, as they are after the change."""
        session = self._session(params.session_id)
        if params.config_id == "model":
            if params.value not in self._offered_models():
                raise errors.invalid_params({"params.value": (
                    f"unknown model {params.value!r}; offered: "
                    f"{', '.join(self._offered_models())}")})
            session.model = params.value
        elif params.config_id == "mode":
            if params.value not in MODES:
                raise errors.invalid_params({"params.value": (
                    f"unknown mode {params.value!r}; the modes are {', '.join(MODES)}")})
            await session.set_mode(params.value)
        else:
            raise errors.invalid_params({"params.configId": (
                f"unknown option {params.config_id!r}; the options are model, mode")})
        return m.SetConfigOptionResponse(self._config_options(session))

    def _offered_models(self) -> dict[str, str]:
        # A model named in IAC_CODE_MODEL is offered even if we do not list it.
        return {**MODELS, self.config.model: MODELS.get(self.config.model, self.config.model)}

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise errors.invalid_params({"params.sessionId": f"session not found: {session_id}"})
        return session

    async def _send_update(self, session_id: str, update: m.SessionUpdate) -> None:
        await self.connection.notify(
            "session/update", to_wire(m.SessionNotification(session_id, update)))

    async def prompt(self, params: m.PromptRequest, ready: Callable[[], None]) -> m.PromptResponse:
        self._require_credentials()
        return await self._session(params.session_id).prompt(params.prompt, ready)

    def cancel(self, params: m.SessionRequest) -> None:
        session = self.sessions.get(params.session_id)
        if session is None:
            log.warning("session/cancel for unknown session %s", params.session_id)
            return
        session.cancel()

    async def close_session(self, params: m.SessionRequest) -> m.Empty:
        session = self._session(params.session_id)
        del self.sessions[params.session_id]
        await session.close()
        log.info("session %s closed", params.session_id)
        return m.Empty()

    def shutdown(self) -> None:
        """The client is gone: cancel every running turn."""
        for session in self.sessions.values():
            session.cancel()
