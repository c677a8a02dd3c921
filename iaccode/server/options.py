"""A session's settings as the editor sees them (model, mode, thinking) and their changes.

The same three appear twice on the wire: as ``modes`` / ``models`` (the older ACP fields) and as
``configOptions``; every answer that opens a session carries both, built here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

from iaccode import choices
from iaccode.choices import THOUGHT_LEVELS
from iaccode.protocol import messages as m
from iaccode.session.session import Session
from iaccode.wire import errors

SendUpdate = Callable[[str, m.SessionUpdate], Awaitable[None]]
"""(session id, update): one ``session/update`` notification."""
QueueUpdate = Callable[[str, m.SessionUpdate], bool]
"""The same if that needs no wait: False (nothing sent) when the caller should await the
``SendUpdate`` instead (``Connection.notify_nowait``)."""

ACP_MODES: dict[str, m.SessionMode] = {
    mode.id: m.SessionMode(mode.id, mode.name, mode.description) for mode in choices.MODES.values()
}
"""The session modes (:data:`iaccode.choices.MODES`) as ACP session modes."""


class SessionOptions:
    def __init__(self, offered: dict[str, str], send_update: SendUpdate) -> None:
        self._offered = offered
        """The configured provider's models, id -> name (``offered_models``)."""
        self._send_update = send_update

    def opened(self, session: Session) -> m.NewSessionResponse:
        """The answer to ``session/new`` and ``session/fork``."""
        return m.NewSessionResponse(
            session_id=session.id,
            modes=self._modes(session),
            models=self._models(session),
            config_options=self.config_options(session),
        )

    def state(self, session: Session) -> m.SessionStateResponse:
        """The answer to ``session/load`` and ``session/resume``."""
        return m.SessionStateResponse(
            self._modes(session), self._models(session), self.config_options(session)
        )

    def _models(self, session: Session) -> m.SessionModelState:
        return m.SessionModelState(
            current_model_id=session.model,
            available_models=[
                m.ModelInfo(model_id, name) for model_id, name in self._offered.items()
            ],
        )

    def _modes(self, session: Session) -> m.SessionModeState:
        return m.SessionModeState(session.mode, list(ACP_MODES.values()))

    def config_options(self, session: Session) -> list[m.SessionConfigOption]:
        return [
            m.SessionConfigOption(
                id="model",
                name="Model",
                category="model",
                current_value=session.model,
                options=[m.ConfigOptionValue(value, name) for value, name in self._offered.items()],
            ),
            m.SessionConfigOption(
                id="mode",
                name="Mode",
                category="mode",
                current_value=session.mode,
                options=[
                    m.ConfigOptionValue(mode.id, mode.name, mode.description)
                    for mode in ACP_MODES.values()
                ],
            ),
            m.SessionConfigOption(
                id="thought_level",
                name="Thinking",
                category="thought_level",
                current_value=session.thought_level,
                options=[
                    m.ConfigOptionValue(level.id, level.name) for level in THOUGHT_LEVELS.values()
                ],
            ),
        ]

    async def set_mode(self, session: Session, mode_id: str) -> None:
        """``session/set_mode``; the options are sent again as a ``config_option_update``."""
        await session.set_mode(mode_id)
        await self._send_update(session.id, m.ConfigOptionUpdate(self.config_options(session)))

    async def set(
        self, session: Session, config_id: str, value: str
    ) -> list[m.SessionConfigOption]:
        """Change one option; the full set as it is after the change, which is also sent as a
        ``config_option_update`` (other views of the session learn of it)."""
        valid: dict[str, Collection[str]] = {
            "model": self._offered,
            "mode": ACP_MODES,
            "thought_level": THOUGHT_LEVELS,
        }
        if config_id not in valid:
            raise errors.invalid_params(
                {
                    "params.configId": (
                        f"unknown option {config_id!r}; the options are {', '.join(valid)}"
                    )
                }
            )
        if value not in valid[config_id]:
            raise errors.invalid_params(
                {
                    "params.value": (
                        f"unknown {config_id} {value!r}; the values are "
                        f"{', '.join(valid[config_id])}"
                    )
                }
            )
        if config_id == "mode":
            await session.set_mode(value)
        else:
            session.update_meta(**{config_id: value})
        options = self.config_options(session)
        await self._send_update(session.id, m.ConfigOptionUpdate(options))
        return options
