"""Tool calls as the editor sees them: ``tool_call`` / ``tool_call_update`` and their content,
and the permission question (``session/request_permission``) with its answer."""

from __future__ import annotations

from typing import Any, Literal

from attrs import field, frozen

from iaccode.protocol.content import ContentBlock

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]
PermissionOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


@frozen
class ContentToolCallContent:
    content: ContentBlock
    type: Literal["content"] = "content"


@frozen
class DiffContent:
    path: str
    new_text: str
    old_text: str | None = None
    type: Literal["diff"] = "diff"


@frozen
class TerminalContent:
    terminal_id: str
    type: Literal["terminal"] = "terminal"


ToolCallContent = ContentToolCallContent | DiffContent | TerminalContent

TOOL_CALL_CONTENT_TYPES: dict[str, type[ToolCallContent]] = {
    "content": ContentToolCallContent,
    "diff": DiffContent,
    "terminal": TerminalContent,
}


@frozen
class ToolCallLocation:
    path: str
    line: int | None = None


@frozen
class ToolCallStart:
    """``sessionUpdate: tool_call``: a tool call appears in the editor."""

    tool_call_id: str
    title: str
    kind: ToolKind
    status: ToolCallStatus
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    session_update: Literal["tool_call"] = "tool_call"
    meta: dict[str, Any] | None = None
    name: str | None = None
    """The tool's programmatic name (``read_file``, ``mcp__server__tool``)."""


@frozen
class ToolCallProgress:
    """``sessionUpdate: tool_call_update``: only the fields that changed."""

    tool_call_id: str
    status: ToolCallStatus | None = None
    title: str | None = None
    kind: ToolKind | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None
    session_update: Literal["tool_call_update"] = "tool_call_update"
    meta: dict[str, Any] | None = None
    name: str | None = None


@frozen
class ToolCallFields:
    """The ``toolCall`` of a permission question (a ToolCallUpdate on the wire)."""

    tool_call_id: str
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    content: list[ToolCallContent] | None = None
    name: str | None = None


@frozen
class PermissionOption:
    option_id: str
    name: str
    kind: PermissionOptionKind


@frozen
class RequestPermissionRequest:
    session_id: str
    tool_call: ToolCallFields
    options: list[PermissionOption]


Meta = dict[str, Any] | None


@frozen
class SelectedPermissionOutcome:
    """The user chose one of the options offered."""

    option_id: str
    outcome: Literal["selected"] = "selected"
    meta: Meta = None


@frozen
class CancelledPermissionOutcome:
    """The prompt turn was cancelled before the user answered."""

    outcome: Literal["cancelled"] = "cancelled"
    meta: Meta = None


PERMISSION_OUTCOMES: dict[str, type[SelectedPermissionOutcome | CancelledPermissionOutcome]] = {
    "selected": SelectedPermissionOutcome,
    "cancelled": CancelledPermissionOutcome,
}
"""The ACP outcomes by their ``outcome`` tag."""

FlatPermissionOutcome = Literal["allowed", "denied"]
"""An older flat answer, still read: ``{"outcome": "allowed", "option_id": "allow_once"}`` or
``{"outcome": "denied"}``."""

PermissionOutcome = SelectedPermissionOutcome | CancelledPermissionOutcome | FlatPermissionOutcome


@frozen
class RequestPermissionResponse:
    """The editor's answer to ``session/request_permission``."""

    outcome: PermissionOutcome
    option_id: str | None = field(default=None, metadata={"wire_name": "option_id"})
    """With the flat ``allowed`` only: the option chosen (snake_case on the wire)."""
    meta: Meta = None
