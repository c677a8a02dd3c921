"""Who may run what: session modes, remembered answers, and the permission question.

    decide(...)  -> RUN | ASK | REFUSE (with the reason the model is told)
    ask(...)     -> the user's answer to ``session/request_permission``

Read-only tools run without asking inside the project (the session's cwd and the folders the
client added, ``in_project``); outside it (an absolute path,
``..``, a symlink that resolves outside: checked on the real path) they ask. Writes, commands
and sub-agents ask, unless the mode says otherwise or the user answered ``*_always`` before.
An *Always allow* covers the project's files only (``tools.base.in_project``): outside them a call
with paths asks again, and its question offers no *Always allow*.

A write to a protected path (the agent's own files, other programs' configuration and
credentials: :mod:`iaccode.turn.protected`), or a bash line that names one, asks in every mode,
bypass included, whatever was allowed before; the question says why and offers no *Always
allow*.

A bash command that changes real infrastructure (:mod:`iaccode.iac.guard`) is the exception
to the remembered answers and the modes: it asks every time, in bypass too, with a question
that says so and offers no *Always allow*; plan mode refuses it (``[iac]
confirm_infra_changes = false`` in config.toml makes it an ordinary command).

The real paths judged here are resolved once by the tool runner, shown to the user in the
question, and handed to the tool, which opens exactly those (see
:mod:`iaccode.tools.local_files`): a symlink swapped after the check cannot redirect the call.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from iaccode.iac.guard import infra_change
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import (
    ContentToolCallContent,
    PermissionOption,
    ToolCallContent,
    ToolCallFields,
)
from iaccode.tools.base import Tool, ToolContext, ToolFailure, in_project, is_inside, resolve_path
from iaccode.turn.env import EditorAccess
from iaccode.turn.protected import Protected

log = logging.getLogger(__name__)

DENIED = "Permission denied."

OPTIONS = [
    PermissionOption("allow_once", "Allow once", "allow_once"),
    PermissionOption("allow_always", "Always allow", "allow_always"),
    PermissionOption("reject_once", "Reject", "reject_once"),
    PermissionOption("reject_always", "Always reject", "reject_always"),
]


class Decision(enum.Enum):
    RUN = "run"
    ASK = "ask"
    REFUSE = "refuse"


class Answer(enum.Enum):
    ALLOW = "allow"
    REJECT = "reject"
    CANCELLED = "cancelled"


@frozen
class Verdict:
    decision: Decision
    reason: str = ""
    """For REFUSE: what the model is told."""
    infra_change: str | None = None
    """For ASK: what in the command changes real infrastructure ("terraform apply")."""
    protected: str | None = None
    """For ASK: why the call asks in every mode (it writes a protected path)."""
    remember: bool = True
    """For ASK: whether *Always allow* is offered (it would not hold outside the project)."""


def decide(tool: Tool, args: Any, *, mode: str, cwd: Path, remembered: dict[str, bool],
           resolved: Mapping[str, Path] | None = None, ours: Path | None = None,
           confirm_infra_changes: bool = True, protected: Protected | None = None,
           additional: Sequence[Path] = ()) -> Verdict:
    """What to do with one call, before running it. ``resolved`` holds the call's paths as
    resolved for running it (the same answer must be judged and used); others resolve now.
    ``ours``: a folder of our own (the session's saved tool output) read-only tools may read
    without asking. ``protected``: the places a write reaches only after a question.
    ``additional``: the client's extra project folders (real paths)."""
    if confirm_infra_changes and (infra := infra_change_verdict(tool, args, mode=mode,
                                                                remembered=remembered)):
        return infra
    if mode == "plan" and not tool.read_only:
        return Verdict(Decision.REFUSE, "Plan mode is on: edits and commands are refused. "
                       "Describe the change instead, or ask the user to switch modes.")
    if remembered.get(tool.name) is False:
        return Verdict(Decision.REFUSE, DENIED)
    resolved = resolved or {}
    paths = [resolved.get(raw) or resolve_path(cwd, raw) for raw in tool.paths(args)]
    inside = all(in_project(path, cwd, additional) for path in paths)
    if protected is not None and (why := _protected_reason(tool, args, paths, cwd, protected)):
        return Verdict(Decision.ASK, protected=why, remember=False)
    if mode == "bypass" or (remembered.get(tool.name) is True and inside):
        return Verdict(Decision.RUN)
    if tool.read_only and inside:
        return Verdict(Decision.RUN)
    if tool.read_only and _only_ours(tool, args, resolved, cwd, ours):
        return Verdict(Decision.RUN)
    if mode == "accept_edits" and tool.kind == "edit" and inside:
        return Verdict(Decision.RUN)
    return Verdict(Decision.ASK, remember=inside)


def _protected_reason(tool: Tool, args: Any, paths: list[Path], cwd: Path,
                      protected: Protected) -> str | None:
    """Why the call writes a protected place: a path of a tool that writes, or a path a bash
    line names (see :mod:`iaccode.turn.protected` for what that catches)."""
    if not tool.read_only:
        for path in paths:
            if why := protected.reason(path):
                return why
    command = getattr(args, "command", None)
    if tool.name == "bash" and isinstance(command, str):
        return protected.command_reason(command, cwd)
    return None


def mcp_read_only(annotations: Mapping[str, Any]) -> bool:
    """Whether an MCP tool counts as read-only: it runs without a question (like the read
    tools) and is allowed in plan mode. Only when its server says so (``readOnlyHint: true``);
    no hint, or any other, means it may change something, so it asks (``*_always`` holds for
    that tool), plan mode refuses it and bypass runs it, like a command."""
    return annotations.get("readOnlyHint") is True


def infra_change_verdict(tool: Tool, args: Any, *, mode: str,
                         remembered: Mapping[str, bool]) -> Verdict | None:
    """For a bash command that changes real infrastructure: ASK whatever was allowed before
    and in every mode (plan refuses; an *Always reject* still holds); None for anything else."""
    command = getattr(args, "command", None)
    change = infra_change(command) if tool.name == "bash" and isinstance(command, str) else None
    if change is None:
        return None
    if mode == "plan":
        return Verdict(Decision.REFUSE, f"Plan mode is on: `{change}` changes real "
                       "infrastructure and is refused. Describe the change (a `plan` is fine) "
                       "or ask the user to switch modes.")
    if remembered.get(tool.name) is False:
        return Verdict(Decision.REFUSE, DENIED)
    return Verdict(Decision.ASK, infra_change=change)


INFRA_OPTIONS = [option for option in OPTIONS if option.kind != "allow_always"]
"""What the question for an infrastructure change offers: never *Always allow*."""
ONCE_OPTIONS = INFRA_OPTIONS
"""What a question offers when *Always allow* would not hold (outside the project, a
protected path)."""


def infra_question(tool_call: ToolCallFields, change: str, command: str) -> ToolCallFields:
    """The permission question's tool call for an infrastructure change: the title and the
    content say so and show the exact command."""
    text = (f"This command changes real infrastructure ({change}):\n\n{command}\n\n"
            "It runs only if you allow it now; \"Always allow\" does not cover such commands.")
    return evolve(tool_call, title=f"Changes real infrastructure: {command}",
                  content=[ContentToolCallContent(TextContent(text)), *(tool_call.content or [])])


def protected_question(tool_call: ToolCallFields, why: str) -> ToolCallFields:
    """The permission question's tool call for a write to a protected place: it says why."""
    text = (f"Protected: {why}.\n\nThis runs only if you allow it now, in every mode: "
            "\"Always allow\" and bypass mode do not cover it.")
    return evolve(tool_call, title=f"Protected: {tool_call.title}",
                  content=[ContentToolCallContent(TextContent(text)), *(tool_call.content or [])])


def outside_question(tool_call: ToolCallFields, outside: list[Path], cwd: Path
                     ) -> ToolCallFields:
    """The permission question's tool call for a call that reaches outside the project: the
    title and the content say so, with the real paths."""
    paths = ", ".join(str(path) for path in outside)
    verb = "is" if len(outside) == 1 else "are"
    text = f"{paths} {verb} outside the project ({cwd})."
    return evolve(tool_call, title=f"{tool_call.title} (outside the project)",
                  content=[ContentToolCallContent(TextContent(text)), *(tool_call.content or [])])


def _only_ours(tool: Tool, args: Any, resolved: Mapping[str, Path], cwd: Path,
               ours: Path | None) -> bool:
    """Every path of the call is in our own folder (saved tool output), read-only."""
    paths = [resolved.get(raw) or resolve_path(cwd, raw) for raw in tool.paths(args)]
    return ours is not None and bool(paths) and all(is_inside(path, ours) for path in paths)


async def ask(editor: EditorAccess, tool_call: ToolCallFields, tool_name: str,
              remembered: dict[str, bool], options: list[PermissionOption] = OPTIONS) -> Answer:
    """Ask the user; remember ``*_always`` answers for this tool in ``remembered``.

    Anything but a clear allow means the tool does not run: a rejection, an answer we cannot
    read, an error from the client, or the client going away.
    """
    kind = await editor.request_permission(tool_call, options)
    if kind == "cancelled":
        return Answer.CANCELLED
    if kind in ("allow_always", "reject_always"):
        remembered[tool_name] = kind == "allow_always"
    if kind in ("allow_once", "allow_always"):
        return Answer.ALLOW
    return Answer.REJECT


async def question_content(tool: Tool, args: Any, context: ToolContext
                           ) -> list[ToolCallContent] | None:
    """What the question shows of the call's effect (the diff an edit would make), worked out
    without writing anything, so a client that shows diffs before approval has one. None when
    the tool shows nothing or cannot work it out (running the call then reports why).

    Only for paths inside the project: working out a diff reads the file, and a file outside
    it is read only once the user allowed the call (the question itself shows the path)."""
    if not all(in_project(path, context.cwd, context.additional_dirs)
               for path in context.resolved.values()):
        return None
    try:
        return await tool.preview(args, context)
    except ToolFailure as exc:
        log.info("no preview for the %s question: %s", tool.name, exc)
        return None
