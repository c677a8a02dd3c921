"""An in-process editor for the turn's unit tests: the facade's interface (``EditorAccess``),
answering permission questions from a list and keeping every update it is sent.

It is the seam the session's real facade (``iaccode.session.editor.Editor``) fills in a live
session, not a stand-in for the code under test: the loop, the tool runner, the permissions
and the tools all run for real, on the local disk, against the scripted model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from iaccode.config import Config
from iaccode.host.local_files import LocalFiles
from iaccode.llm.base import Provider
from iaccode.protocol.elicitation import Elicitation, ElicitationAnswer
from iaccode.protocol.messages import NoticeSeverity, SessionUpdate
from iaccode.protocol.tool_calls import (
    PermissionOption,
    ToolCallFields,
    ToolCallProgress,
    ToolCallStart,
)
from iaccode.session.editor import advisory
from iaccode.tools.base import ClientTerminal, FileAccess, Tool
from iaccode.tools.registry import builtin_tools
from iaccode.turn.env import ModelSide, PermissionChoice, SessionState, ToolEnv, TurnEnv

HANG = "hang"
"""An answer that never comes (the user looks away): the question waits until cancelled."""


class FakeEditor:
    def __init__(
        self,
        answers: list[PermissionChoice | str] | None = None,
        *,
        elicitations: list[ElicitationAnswer | str | None] | None = None,
        elicitation_modes: frozenset[str] = frozenset(),
    ) -> None:
        self.updates: list[SessionUpdate] = []
        self.questions: list[tuple[ToolCallFields, list[PermissionOption]]] = []
        self.elicitations: list[Elicitation] = []
        """Every elicitation asked, in order."""
        self.elicitation_modes = elicitation_modes
        self._elicitation_answers = list(elicitations or [])
        self._answers = list(answers or [])
        self.asked = trio.Event()
        """Set when the first question arrives."""
        self.files: FileAccess = LocalFiles(max_bytes=10 * 1024 * 1024)
        self.terminal: ClientTerminal | None = None
        self.shows_notices = False
        self.shows_compaction = False

    async def send_update(self, update: SessionUpdate) -> None:
        await trio.lowlevel.checkpoint()  # a real one writes to the connection
        self.updates.append(update)

    def queue_update(self, update: SessionUpdate) -> bool:
        return False  # as a full output would: the turn awaits send_update

    async def advise(
        self, message: str, *, title: str, severity: NoticeSeverity = "warning"
    ) -> None:
        await self.send_update(
            advisory(message, title=title, severity=severity, as_notice=self.shows_notices)
        )

    async def request_permission(
        self, tool_call: ToolCallFields, options: list[PermissionOption]
    ) -> PermissionChoice:
        self.questions.append((tool_call, options))
        self.asked.set()
        if not self._answers:
            raise AssertionError(f"an unexpected permission question: {tool_call.title}")
        answer = self._answers.pop(0)
        if answer == HANG:
            await trio.sleep_forever()
        await trio.lowlevel.checkpoint()
        return answer  # type: ignore[return-value]

    async def elicit(self, elicitation: Elicitation) -> ElicitationAnswer | None:
        self.elicitations.append(elicitation)
        self.asked.set()
        if elicitation.mode not in self.elicitation_modes:
            return None  # as the real facade: never sent
        if not self._elicitation_answers:
            raise AssertionError(f"an unexpected elicitation: {elicitation.message}")
        answer = self._elicitation_answers.pop(0)
        if answer == HANG:
            await trio.sleep_forever()
        await trio.lowlevel.checkpoint()
        return answer  # type: ignore[return-value]

    # -- what the tests read ------------------------------------------------------------------

    def tool_updates(self, call_id: str) -> list[ToolCallStart | ToolCallProgress]:
        """The updates of one tool call, in order."""
        return [
            u
            for u in self.updates
            if isinstance(u, ToolCallStart | ToolCallProgress) and u.tool_call_id == call_id
        ]

    def statuses(self, call_id: str) -> list[str | None]:
        return [u.status for u in self.tool_updates(call_id)]


def turn_env(
    cwd: Path,
    provider: Provider,
    editor: FakeEditor,
    *,
    mode: str = "default",
    remembered: dict[str, bool] | None = None,
    cancel_turn: Callable[[], None] = lambda: None,
    tools: dict[str, Tool] | None = None,
    **config: Any,
) -> TurnEnv:
    """A turn's environment in ``cwd`` (a real path) with the built-in tools."""
    return TurnEnv(
        model=ModelSide(
            provider=provider,
            model="claude-sonnet-4-5",
            system=lambda: "You are a test.",
            thinking=lambda: "off",
        ),
        calls=ToolEnv(
            config=Config(home=cwd / ".home", **config),
            tools=tools if tools is not None else builtin_tools(),
            editor=editor,
            session=SessionState(
                cwd=cwd,
                mode=lambda: mode,
                remembered=remembered if remembered is not None else {},
                cancel_turn=cancel_turn,
            ),
        ),
    )
