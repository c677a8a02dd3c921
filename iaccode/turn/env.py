"""What a turn works with, grouped by where it comes from.

TurnEnv
  model: ModelSide      the provider and what each request says (Turn)
  calls: ToolEnv        what running tool calls uses (ToolRunner)
    editor: EditorAccess  the editor: updates, permission questions, files, terminal
    session: SessionState the session's live settings and answers
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, Protocol

from attrs import evolve, field, frozen

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.llm.prices import CostMeter
from iaccode.protocol.elicitation import Elicitation, ElicitationAnswer
from iaccode.protocol.messages import NoticeSeverity, PlanEntry, SessionUpdate
from iaccode.protocol.tool_calls import PermissionOption, PermissionOptionKind, ToolCallFields
from iaccode.tools.base import ClientTerminal, FileAccess, Tool
from iaccode.turn.exposure import Exposure

SendUpdate = Callable[[SessionUpdate], Awaitable[None]]
"""Send a ``session/update``, waiting while the editor reads slowly: always a checkpoint."""
QueueUpdate = Callable[[SessionUpdate], bool]
"""Send a ``session/update`` only if that needs no wait: never a checkpoint. False (nothing
sent) when the output is full or a burst is done (``Connection.notify_nowait``); then await
``send_update`` for it."""

PermissionChoice = PermissionOptionKind | Literal["cancelled"] | None
"""The user's answer to a permission question: the kind of the option chosen, ``cancelled``,
or None when there is no answer to go by (the editor failed, or answered something unreadable)."""


class EditorAccess(Protocol):
    """The editor, as a turn reaches it (``iaccode.session.editor.Editor``; tests fake it)."""

    @property
    def files(self) -> FileAccess:
        """Where tools read and write text files (the editor's, or the local disk)."""
        ...

    @property
    def terminal(self) -> ClientTerminal | None:
        """The editor's terminals, when it has them (else commands run here)."""
        ...

    async def send_update(self, update: SessionUpdate) -> None:
        """A ``session/update`` for the session (always a checkpoint)."""
        ...

    def queue_update(self, update: SessionUpdate) -> bool:
        """The same without waiting, if it can be (never a checkpoint): False when nothing
        was sent, and the caller awaits ``send_update``. How the model's deltas stream: the
        writer gets batches instead of one line per scheduler pass."""
        ...

    async def request_permission(
        self, tool_call: ToolCallFields, options: list[PermissionOption]
    ) -> PermissionChoice:
        """Ask the user; never raises for the editor's failures (they are None)."""
        ...

    @property
    def elicitation_modes(self) -> frozenset[str]:
        """The elicitation modes the editor advertised (``form``, ``url``)."""
        ...

    async def elicit(self, elicitation: Elicitation) -> ElicitationAnswer | None:
        """Ask the user for input; None when there is no answer to go by (a mode the editor
        did not advertise, its failure, an unreadable answer). Cancelling cancels it."""
        ...

    @property
    def shows_compaction(self) -> bool:
        """The client shows ``compaction_update`` (``session.compaction``)."""
        ...

    async def advise(
        self, message: str, *, title: str, severity: NoticeSeverity = "warning"
    ) -> None:
        """Tell the user something outside the conversation (a server that stopped, a model
        that gave up): a ``notice`` where the client shows them, else ``message`` as today's
        ``⚠`` text in the chat."""
        ...


@frozen
class ModelSide:
    """The model of a turn: who answers, and what each request carries besides the history."""

    provider: Provider
    model: str
    system: Callable[[], str] = lambda: ""
    """The system prompt of this turn's requests (the session's, built from sections)."""
    subagent_system: Callable[[], str] = lambda: ""
    """The system prompt a sub-agent started from this turn gets."""
    thinking: Callable[[], str] = lambda: "off"
    """The session's current thinking effort: off, low, medium, high."""
    cost: CostMeter = field(factory=CostMeter)
    """The session's cost so far (shared with the session and its sub-agents)."""


@frozen
class SessionState:
    """The session's live state that tool calls read and change."""

    cwd: Path
    """The session's working directory, as a real path."""
    mode: Callable[[], str]
    """The session's current mode (it may change while the turn runs)."""
    remembered: dict[str, bool]
    """Tool name -> True (allow_always) / False (reject_always); shared with the session."""
    cancel_turn: Callable[[], None]
    """Cancel the running turn (the user answered a permission question with ``cancelled``)."""
    saved_output: Path | None = None
    """Where over-long tool output is kept whole (a real path; read_file may read it freely)."""
    show_plan: Callable[[list[PlanEntry]], Awaitable[None]] | None = None
    """Show the plan (todo_write) and keep it with the session; None in a sub-agent."""
    additional_dirs: tuple[Path, ...] = ()
    """The client's extra project folders (``additionalDirectories``), as real paths."""
    exposure: Exposure = field(factory=Exposure)
    """Whether the session read a secrets file, and the hosts web_fetch may reach since;
    shared with the session."""


@frozen
class ToolEnv:
    """What running a model answer's tool calls works with."""

    config: Config
    tools: dict[str, Tool]
    editor: EditorAccess
    session: SessionState
    tool_call_meta: dict[str, Any] | None = None
    """``_meta`` added to this turn's tool-call updates (a sub-agent names its parent call)."""


@frozen
class TurnEnv:
    model: ModelSide
    calls: ToolEnv

    @property
    def config(self) -> Config:
        return self.calls.config

    def nested(self, *, tools: dict[str, Tool], parent_tool_call_id: str) -> TurnEnv:
        """The environment of a sub-agent running inside one of this turn's tool calls."""
        return TurnEnv(
            model=evolve(self.model, system=self.model.subagent_system),
            calls=evolve(
                self.calls,
                tools=tools,
                session=evolve(self.calls.session, show_plan=None),
                tool_call_meta={"iaccode": {"parentToolCallId": parent_tool_call_id}},
            ),
        )
