"""ACP request, response and notification params that iac-code accepts or sends.

Field names are snake_case here and camelCase on the wire (``meta`` is ``_meta``); the
converter in ``convert.py`` does the renaming. Every class tolerates unknown input fields.
"""

from __future__ import annotations

from typing import Any, Literal

from attrs import field, frozen

from iaccode.protocol.content import ContentBlock, TextContent
from iaccode.protocol.tool_calls import ToolCallProgress, ToolCallStart

Meta = dict[str, Any] | None

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


# -- initialize --------------------------------------------------------------------------------


@frozen
class Implementation:
    name: str
    version: str
    title: str | None = None
    meta: Meta = None


@frozen
class FileSystemCapabilities:
    read_text_file: bool = False
    write_text_file: bool = False
    meta: Meta = None


@frozen
class ElicitationCapabilities:
    """``clientCapabilities.elicitation``: each mode the client can show is present (``{}``);
    absent or null means not supported."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None
    meta: Meta = None


@frozen
class ClientAuthCapabilities:
    terminal: bool = False
    """The client runs ``terminal`` auth methods (so we may offer ``iaccode login``)."""
    meta: Meta = None


@frozen
class ClientSessionCapabilities:
    """Each present capability is ``{}``; absent or null means unsupported."""

    compaction: dict[str, Any] | None = None
    """``compaction_update`` is shown (unstable schema)."""
    notices: dict[str, Any] | None = None
    """``notice`` updates are shown (unstable schema)."""
    meta: Meta = None


@frozen
class ClientCapabilities:
    fs: FileSystemCapabilities = field(factory=FileSystemCapabilities)
    terminal: bool = False
    auth: ClientAuthCapabilities = field(factory=ClientAuthCapabilities)
    session: ClientSessionCapabilities | None = None
    elicitation: ElicitationCapabilities | None = None
    meta: Meta = None

    def elicitation_modes(self) -> frozenset[str]:
        """The elicitation modes the client advertised (``form``, ``url``)."""
        found = self.elicitation
        if found is None:
            return frozenset()
        return frozenset(
            mode for mode, value in (("form", found.form), ("url", found.url)) if value is not None
        )


@frozen
class InitializeRequest:
    protocol_version: Any
    """Any JSON value: one we cannot read (``"1"``, ``1.5``, ``-1``) is negotiated like one we
    do not support (the spec's rule), not refused. The other params stay strict."""
    client_capabilities: ClientCapabilities = field(factory=ClientCapabilities)
    client_info: Implementation | None = None
    meta: Meta = None


@frozen
class PromptCapabilities:
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


@frozen
class SessionCapabilities:
    """Each present capability is the empty object ``{}``; absent means unsupported."""

    list: dict[str, Any] | None = None
    close: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    fork: dict[str, Any] | None = None
    delete: dict[str, Any] | None = None
    additional_directories: dict[str, Any] | None = None


@frozen
class McpCapabilities:
    http: bool = False
    sse: bool = False


@frozen
class AgentAuthCapabilities:
    logout: dict[str, Any] | None = None


@frozen
class AgentCapabilities:
    load_session: bool
    prompt_capabilities: PromptCapabilities
    session_capabilities: SessionCapabilities
    mcp_capabilities: McpCapabilities = field(factory=McpCapabilities)
    auth: AgentAuthCapabilities | None = None


@frozen
class AuthMethod:
    """An ``agent`` method (no ``type``: the client calls ``authenticate``) or a ``terminal``
    one (the client runs the agent with ``args`` appended)."""

    id: str
    name: str
    description: str | None = None
    type: Literal["terminal"] | None = None
    args: list[str] | None = None


@frozen
class InitializeResponse:
    protocol_version: int
    agent_capabilities: AgentCapabilities
    agent_info: Implementation
    auth_methods: list[AuthMethod]
    meta: Meta = None


@frozen
class AuthenticateRequest:
    method_id: str
    meta: Meta = None


# -- sessions ----------------------------------------------------------------------------------


@frozen
class NewSessionRequest:
    cwd: str
    mcp_servers: list[dict[str, Any]] = field(factory=list)
    additional_directories: list[str] | None = None
    """More folders that count as the project (absolute); None or [] for none."""
    meta: Meta = None


@frozen
class SessionMode:
    id: str
    name: str
    description: str | None = None


@frozen
class SessionModeState:
    current_mode_id: str
    available_modes: list[SessionMode]


@frozen
class ModelInfo:
    """One entry of the legacy ``models`` object (older clients read it; see ACP-NOTES)."""

    model_id: str
    name: str
    description: str | None = None


@frozen
class SessionModelState:
    current_model_id: str
    available_models: list[ModelInfo]


@frozen
class ConfigOptionValue:
    value: str
    name: str
    description: str | None = None


@frozen
class SessionConfigOption:
    """A ``select`` option (the only kind we offer)."""

    id: str
    name: str
    current_value: str
    options: list[ConfigOptionValue]
    category: str | None = None
    description: str | None = None
    type: Literal["select"] = "select"


@frozen
class NewSessionResponse:
    session_id: str
    modes: SessionModeState
    models: SessionModelState
    config_options: list[SessionConfigOption]
    meta: Meta = None


@frozen
class LoadSessionRequest:
    """Params of ``session/load``, ``session/resume`` and ``session/fork``."""

    session_id: str
    cwd: str
    mcp_servers: list[dict[str, Any]] = field(factory=list)
    additional_directories: list[str] | None = None
    """The session's complete list of extra project folders from now on (the RFD: omitted is
    none, never the stored ones)."""
    meta: Meta = None


@frozen
class SessionStateResponse:
    """The answer of ``session/load`` and ``session/resume`` (no ``sessionId``: the client
    knows it)."""

    modes: SessionModeState
    models: SessionModelState
    config_options: list[SessionConfigOption]
    meta: Meta = None


@frozen
class ListSessionsRequest:
    cwd: str | None = None
    cursor: str | None = None
    meta: Meta = None


@frozen
class SessionInfo:
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None
    additional_directories: list[str] = field(factory=list)
    """Always sent, ``[]`` for none (the additional-directories RFD)."""


@frozen
class ListSessionsResponse:
    sessions: list[SessionInfo]
    next_cursor: str | None = None
    meta: Meta = None


@frozen
class SessionRequest:
    """Params of the methods that name only a session (`session/close`, `session/cancel`)."""

    session_id: str
    meta: Meta = None


# -- prompt turn -------------------------------------------------------------------------------


@frozen
class PromptRequest:
    session_id: str
    prompt: list[ContentBlock]
    meta: Meta = None


@frozen
class SteeringRequest:
    """``_session/steering`` (the extension claude-agent-acp and codex-acp answer): a message
    for the running turn, or, with none running, a new turn unless ``idle_behavior`` is
    ``promptRequired``."""

    session_id: str
    prompt: list[ContentBlock]
    idle_behavior: str | None = None
    meta: Meta = None


SteeringOutcome = Literal["injected", "startedNewTurn", "promptRequired"]


@frozen
class SteeringResponse:
    outcome: SteeringOutcome
    reason: str | None = None
    """With ``promptRequired``: why (``noRunningTurn``)."""
    meta: Meta = None


@frozen
class Usage:
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None
    thought_tokens: int | None = None


@frozen
class PromptResponse:
    stop_reason: StopReason
    usage: Usage | None = None
    meta: Meta = None


@frozen
class AgentMessageChunk:
    content: ContentBlock
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"
    message_id: str | None = None
    """The model message the chunk belongs to (its thinking shares it); kept in the history,
    so ``session/load`` shows the same id. None for our own notices."""
    meta: Meta = None


def warning_text(message: str) -> str:
    """A warning as the chat shows it: apart from what came before, marked ``⚠``. A session's
    history keeps this text as a notice, so a load shows the warning as it was."""
    return f"\n\n⚠ {message}\n"


def warning_chunk(message: str) -> AgentMessageChunk:
    """A warning as a chat message (for a client without ``notice`` updates): its
    :func:`warning_text`, with ``message`` itself in ``_meta.iaccode.error`` for a client that
    shows errors apart."""
    return AgentMessageChunk(
        TextContent(warning_text(message)), meta={"iaccode": {"error": message}}
    )


@frozen
class AgentThoughtChunk:
    content: ContentBlock
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"
    message_id: str | None = None
    """As ``AgentMessageChunk.message_id``."""
    meta: Meta = None


@frozen
class UserMessageChunk:
    content: ContentBlock
    session_update: Literal["user_message_chunk"] = "user_message_chunk"
    meta: Meta = None


@frozen
class Cost:
    amount: float
    currency: str = "USD"


@frozen
class UsageUpdate:
    """Tokens in the context window now, and the window's size."""

    used: int
    size: int
    cost: Cost | None = None
    """The session's cost so far (only for models with a known price)."""
    session_update: Literal["usage_update"] = "usage_update"
    meta: Meta = None


@frozen
class CurrentModeUpdate:
    current_mode_id: str
    session_update: Literal["current_mode_update"] = "current_mode_update"
    meta: Meta = None


@frozen
class ConfigOptionUpdate:
    config_options: list[SessionConfigOption]
    session_update: Literal["config_option_update"] = "config_option_update"
    meta: Meta = None


@frozen
class AvailableCommandInput:
    """What a command takes after its name (ACP ``UnstructuredCommandInput``)."""

    hint: str


@frozen
class AvailableCommand:
    name: str
    description: str
    input: AvailableCommandInput | None = None


@frozen
class AvailableCommandsUpdate:
    available_commands: list[AvailableCommand]
    session_update: Literal["available_commands_update"] = "available_commands_update"
    meta: Meta = None


@frozen
class SessionInfoUpdate:
    title: str | None = None
    updated_at: str | None = None
    session_update: Literal["session_info_update"] = "session_info_update"
    meta: Meta = None


PlanEntryStatus = Literal["pending", "in_progress", "completed"]
PlanEntryPriority = Literal["high", "medium", "low"]


@frozen
class PlanEntry:
    content: str
    priority: PlanEntryPriority
    status: PlanEntryStatus
    meta: Meta = None


@frozen
class PlanUpdate:
    """The agent's whole plan; each update replaces the one before (ACP "Agent Plan")."""

    entries: list[PlanEntry]
    session_update: Literal["plan"] = "plan"
    meta: Meta = None


NoticeSeverity = Literal["info", "warning", "error"]


@frozen
class NoticeUpdate:
    """An advisory shown outside the chat (unstable ``notice``; only to clients with
    ``session.notices``, the others get the same text as an ``agent_message_chunk``)."""

    severity: NoticeSeverity
    title: str
    description: str | None = None
    session_update: Literal["notice"] = "notice"
    meta: Meta = None


CompactionStatus = Literal["in_progress", "completed", "failed", "cancelled"]


@frozen
class CompactionUpdate:
    """A context compaction's progress (unstable ``compaction_update``; only to clients with
    ``session.compaction``, the others get a text message when it is done)."""

    compaction_id: str
    status: CompactionStatus
    summary: list[ContentBlock] | None = None
    """With ``completed``: what the model is left with, for the user to read."""
    error: str | None = None
    """With ``failed``: why."""
    session_update: Literal["compaction_update"] = "compaction_update"
    meta: Meta = None


SessionUpdate = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | UsageUpdate
    | ToolCallStart
    | ToolCallProgress
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | AvailableCommandsUpdate
    | SessionInfoUpdate
    | PlanUpdate
    | NoticeUpdate
    | CompactionUpdate
)


@frozen
class SessionNotification:
    session_id: str
    update: SessionUpdate
    meta: Meta = None


@frozen
class SetModeRequest:
    session_id: str
    mode_id: str
    meta: Meta = None


@frozen
class SetConfigOptionRequest:
    """``session/set_config_option`` (and ``config/set``, its older name)."""

    session_id: str
    config_id: str
    value: str
    meta: Meta = None


@frozen
class SetConfigOptionResponse:
    config_options: list[SessionConfigOption]
    meta: Meta = None


@frozen
class Empty:
    """The ``{}`` answer of methods with nothing to say (never ``null``)."""

    meta: Meta = None
