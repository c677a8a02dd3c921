"""What a turn works with: the session's model, tools, client and permission state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from attrs import evolve, field, frozen

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.llm.prices import CostMeter
from iaccode.protocol.messages import PlanEntry, SessionUpdate
from iaccode.tools.base import ClientTerminal, FileAccess, Tool, ToolLimits, ToolResult

SendUpdate = Callable[[SessionUpdate], Awaitable[None]]
"""Send a ``session/update``, waiting while the editor reads slowly: always a checkpoint."""
QueueUpdate = Callable[[SessionUpdate], bool]
"""Send a ``session/update`` only if that needs no wait: never a checkpoint. False (nothing
sent) when the output is full or a burst is done (``Connection.notify_nowait``); then await
``send_update`` for it."""
Request = Callable[[str, Any], Awaitable[Any]]


@frozen
class TurnEnv:
    config: Config
    provider: Provider
    model: str
    session_id: str
    cwd: Path
    """The session's working directory, as a real path."""
    send_update: SendUpdate
    request: Request
    """Send a request to the client (permission questions) and wait for the answer."""
    files: FileAccess
    terminal: ClientTerminal | None
    tools: dict[str, Tool]
    mode: Callable[[], str]
    """The session's current mode (it may change while the turn runs)."""
    thinking: Callable[[], str]
    """The session's current thinking effort: off, low, medium, high."""
    remembered: dict[str, bool]
    """Tool name -> True (allow_always) / False (reject_always); shared with the session."""
    limits: ToolLimits
    cancel_turn: Callable[[], None]
    """Cancel the running turn (the user answered a permission question with ``cancelled``)."""
    tool_tap: Callable[[str, str, ToolResult], None] | None = None
    """Sees each finished tool call's result (a transcript records them)."""
    recorded_tools: Mapping[str, ToolResult] = field(factory=dict)
    """Results to use instead of running machine-dependent tools (a replay)."""
    tool_call_meta: dict[str, Any] | None = None
    """``_meta`` added to this turn's tool-call updates (a sub-agent names its parent call)."""
    system: Callable[[], str] = lambda: ""
    """The system prompt of this turn's requests (the session's, built from sections)."""
    subagent_system: Callable[[], str] = lambda: ""
    """The system prompt a sub-agent started from this turn gets."""
    show_plan: Callable[[list[PlanEntry]], Awaitable[None]] | None = None
    """Show the plan (todo_write) and keep it with the session; None in a sub-agent."""
    saved_output: Path | None = None
    """Where over-long tool output is kept whole (a real path; read_file may read it freely)."""
    cost: CostMeter = field(factory=CostMeter)
    """The session's cost so far (shared with the session and its sub-agents)."""
    queue_update: QueueUpdate = lambda update: False
    """How the model's deltas are streamed (``send_update`` when this says False): a turn
    hands the writer batches instead of one line per scheduler pass."""

    def nested(self, *, tools: dict[str, Tool], parent_tool_call_id: str) -> TurnEnv:
        """The environment of a sub-agent running inside one of this turn's tool calls."""
        return evolve(self, tools=tools, system=self.subagent_system, show_plan=None,
                      tool_call_meta={
            "iaccode": {"parentToolCallId": parent_tool_call_id}})
