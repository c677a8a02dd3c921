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

A bash command that changes real infrastructure (:mod:`iaccode.iac.guard`, the text reader)
is the exception to the remembered answers and the modes: it asks every time, in bypass too,
with a question that says so and offers no *Always allow*; plan mode refuses it (``[iac]
confirm_infra_changes = false`` in config.toml makes it an ordinary command). So does an MCP
tool its server does not mark read-only or non-destructive (``Tool.always_asks``). A change a
gate reports while the command runs (:mod:`iaccode.gate`) is asked about the same way, on the
running call (:func:`gate_question`). A change of a CLI whose gate handler asks itself
(Terraform's plan-bound apply, Pulumi's preview, the kube context) is left to the gate: one
question, the one with the plan, never pre-approved by the line.

The real paths judged here are resolved once by the tool runner, shown to the user in the
question, and handed to the tool, which opens exactly those (see
:mod:`iaccode.host.local_files`): a symlink swapped after the check cannot redirect the call.
"""

from __future__ import annotations

import enum
import logging
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from iaccode.gate import handlers
from iaccode.gate.channel import GateQuestion
from iaccode.host.local_files import is_inside
from iaccode.iac.guard import Finding, infra_changes
from iaccode.printable import visible
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import (
    ContentToolCallContent,
    PermissionOption,
    ToolCallContent,
    ToolCallFields,
)
from iaccode.tool_result import ToolFailure
from iaccode.tools.base import Tool, ToolContext, in_project, resolve_path
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


def options_for(tool_name: str) -> list[PermissionOption]:
    """:data:`OPTIONS` with *Always allow* naming what it covers: the tool, for the rest of
    the session (every bash command, not only the one asked about)."""
    return [
        evolve(option, name=f"Always allow {tool_name} in this session")
        if option.kind == "allow_always"
        else option
        for option in OPTIONS
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
    """For ASK: whether *Always allow* is offered (it would not hold outside the project, nor
    for an infrastructure change or a protected path)."""
    findings: tuple[Finding, ...] = ()
    """For ASK: all the text reader found; allowing the call lets the gates run the argvs it
    spells out (``Finding.argv``) without asking again."""

    @property
    def approved_changes(self) -> frozenset[tuple[str, ...]]:
        """The argvs the gates may run unasked once this call is allowed: the changes the line
        spells out, exactly."""
        return frozenset(
            finding.argv
            for finding in self.findings
            if finding.gate_sees and finding.argv is not None and not _asked_at_the_gate(finding)
        )  # asks with its plan anyway


def decide(
    tool: Tool,
    args: Any,
    *,
    mode: str,
    cwd: Path,
    remembered: dict[str, bool],
    resolved: Mapping[str, Path] | None = None,
    ours: Path | None = None,
    confirm_infra_changes: bool = True,
    protected: Protected | None = None,
    additional: Sequence[Path] = (),
    gates: Path | None = None,
) -> Verdict:
    """What to do with one call, before running it. ``resolved`` holds the call's paths as
    resolved for running it (the same answer must be judged and used); others resolve now.
    ``ours``: a folder of our own (the session's saved tool output) read-only tools may read
    without asking. ``protected``: the places a write reaches only after a question.
    ``additional``: the client's extra project folders (real paths). ``gates``: the folder of
    gates on the commands' PATH."""
    if confirm_infra_changes and (
        infra := infra_change_verdict(
            tool, args, mode=mode, remembered=remembered, cwd=cwd, gates=gates
        )
    ):
        if infra.decision is Decision.ASK and protected is not None:
            # The question says both: a line may change infrastructure and write ~/.aws.
            infra = evolve(
                infra,
                protected=_protected_reason(
                    tool, args, _paths(tool, args, resolved or {}, cwd), cwd, protected
                ),
            )
        return infra
    if mode == "plan" and not tool.read_only:
        return Verdict(
            Decision.REFUSE,
            "Plan mode is on: edits and commands are refused. "
            "Describe the change instead, or ask the user to switch modes.",
        )
    if remembered.get(tool.name) is False:
        return Verdict(Decision.REFUSE, DENIED)
    resolved = resolved or {}
    paths = _paths(tool, args, resolved, cwd)
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


def _paths(tool: Tool, args: Any, resolved: Mapping[str, Path], cwd: Path) -> list[Path]:
    return [resolved.get(raw) or resolve_path(cwd, raw) for raw in tool.paths(args)]


def _protected_reason(
    tool: Tool, args: Any, paths: list[Path], cwd: Path, protected: Protected
) -> str | None:
    """Why the call writes a protected place: a path of a tool that writes, or a path its
    command line names (see :mod:`iaccode.turn.protected` for what that catches)."""
    if not tool.read_only:
        for path in paths:
            if why := protected.reason(path):
                return why
    command = tool.command_line(args)
    if command is not None:
        return protected.command_reason(command, cwd)
    return None


def infra_change_verdict(
    tool: Tool,
    args: Any,
    *,
    mode: str,
    remembered: Mapping[str, bool],
    cwd: Path | None = None,
    gates: Path | None = None,
) -> Verdict | None:
    """For a command line (``Tool.command_line``) that changes real infrastructure, or a tool
    that always asks: ASK whatever was allowed before and in every mode (plan refuses; an
    *Always reject* still holds); None for anything else."""
    command = tool.command_line(args)
    findings: list[Finding] = []
    change: str | None
    if tool.always_asks is not None:
        change = f"{tool.title(args)}: {tool.always_asks}"
    elif command is not None:
        try:
            findings = infra_changes(command, cwd=cwd, gates=gates)
        except Exception:  # a bug in the reader must not let the line through unasked
            log.exception("the command reader failed on %r", command[:200])
            findings = [Finding("iac-code could not read this command line", cannot_tell=True)]
        change = "; ".join(finding.what for finding in findings) if findings else None
    else:
        change = None
    if change is None:
        return None
    if mode == "plan":
        return Verdict(
            Decision.REFUSE,
            f"Plan mode is on: `{change}` changes real "
            "infrastructure and is refused. Describe the change (a `plan` is fine) "
            "or ask the user to switch modes.",
        )
    if remembered.get(tool.name) is False:
        return Verdict(Decision.REFUSE, DENIED)
    if findings and gates is not None and command is not None and not _DETACHING.search(command):
        # A change whose CLI's handler asks at the gate, with what it learns there (the plan
        # it will apply, the target), is left to it: one question, the one with the plan.
        # (Without gates, a replay's played-back bash, the line asks for everything.)
        findings = [finding for finding in findings if not _asked_at_the_gate(finding)]
        if not findings:
            return None
        change = "; ".join(finding.what for finding in findings)
    return Verdict(Decision.ASK, infra_change=change, findings=tuple(findings), remember=False)


_DETACHING = re.compile(
    r"(?:^|[\s;&|(`'\"])(?:setsid|nohup|disown|flock|systemd-run"
    r"|daemonize|start-stop-daemon)(?=$|[\s;&|)`'\"])"
    r"|(?<![&>|])&(?![&>])"
)
"""A line that may run its CLI after the call ended, or in a runner that may not start it
(``setsid`` forks and returns, ``terraform apply &``, ``flock -c``): the gate could find the
call gone and refuse without a word to the user, so the line's own question stays (and the
gate still asks with the plan, never pre-approved). Read from the text, so a word in an
argument counts too: that only adds a question."""


def _asked_at_the_gate(finding: Finding) -> bool:
    return (
        finding.gate_sees
        and not finding.cannot_tell
        and finding.cli is not None
        and handlers.asks_itself(finding.cli)
    )


ONCE_OPTIONS = [option for option in OPTIONS if option.kind != "allow_always"]
"""What a question offers when *Always allow* would not hold (``Verdict.remember`` False: an
infrastructure change, a gate's question, a protected path, a path outside the project)."""


ALLOW_NOW = 'It runs only if you allow it now; "Always allow" does not cover such commands.'


def infra_question(
    tool_call: ToolCallFields, change: str, command: str, findings: tuple[Finding, ...] = ()
) -> ToolCallFields:
    """The permission question's tool call for an infrastructure change: the title and the
    content say so and show the exact command (and what the reader cannot tell)."""
    unsure = [visible(finding.what) for finding in findings if finding.cannot_tell]
    sure = [visible(finding.what) for finding in findings if not finding.cannot_tell]
    command, line = visible(command), visible(command, one_line=True)
    if command and findings:
        lines = []
        if sure:
            lines.append(f"This command changes real infrastructure ({'; '.join(sure)}):")
        if unsure:
            lines.append(
                "iac-code cannot tell what this command changes: "
                + "; ".join(unsure)
                + ("." if not sure else "")
            )
        text = "\n".join(lines) + f"\n\n{command}\n\n{ALLOW_NOW}"
        title = (
            f"Changes real infrastructure: {line}"
            if sure
            else f"May change real infrastructure: {line}"
        )
    elif command:
        text = f"This command changes real infrastructure ({change}):\n\n{command}\n\n{ALLOW_NOW}"
        title = f"Changes real infrastructure: {line}"
    else:  # a tool that always asks (an MCP tool)
        text = f'{change}.\n\nIt runs only if you allow it now; "Always allow" does not cover it.'
        title = f"May change real infrastructure: {tool_call.title}"
    return evolve(
        tool_call,
        title=title,
        content=[ContentToolCallContent(TextContent(text)), *(tool_call.content or [])],
    )


def protected_question(tool_call: ToolCallFields, why: str) -> ToolCallFields:
    """The permission question's tool call for a write to a protected place: it says why."""
    text = (
        f"Protected: {why}.\n\nThis runs only if you allow it now, in every mode: "
        '"Always allow" and bypass mode do not cover it.'
    )
    return evolve(
        tool_call,
        title=f"Protected: {tool_call.title}",
        content=[ContentToolCallContent(TextContent(text)), *(tool_call.content or [])],
    )


def gate_question(
    tool_call: ToolCallFields, question: GateQuestion, command: str
) -> ToolCallFields:
    """The question for a change a gate reports while the call's command runs: on the running
    call, naming the change (by the handler's title: its target), what the handler adds (a
    plan, right below the first line), and the exact argv the program got."""
    argv = shlex.join(question.request.argv)
    return evolve(
        tool_call,
        title=visible(question.title or f"Changes real infrastructure: {argv}", one_line=True),
        status="in_progress",
        content=[ContentToolCallContent(TextContent(gate_question_text(question, command)))],
    )


def gate_question_text(question: GateQuestion, command: str) -> str:
    """Every part of it is what the gate saw, each character shown (:func:`visible`): an
    argument ``prod \\u200b--dry-run=client`` is a name, not an option."""
    request = question.request
    argv = visible(shlex.join(request.argv))
    change = request.change
    label = change.label if change is not None else request.cli
    if change is not None and change.unknown:
        head = (
            f"`{argv}` is about to run. iac-code cannot tell whether it changes real "
            f"infrastructure ({label} is a command it does not know), so it asks."
        )
    else:
        head = f"`{argv}` is about to run: it changes real infrastructure ({label})."
    lines = [head]
    if question.detail:
        lines += ["", visible(question.detail)]
    lines += ["", f"program: {visible(request.program)}", f"in: {visible(request.cwd)}"]
    if request.started_by:
        lines.append(f"started by: {visible(request.started_by)}")
    lines.append(f"from the command: {visible(command)}")
    lines += ["", ALLOW_NOW]
    return "\n".join(lines)


def gate_refusal(question: GateQuestion, why: str) -> str:
    """The line a refused gate prints for the model."""
    return (
        f"iac-code: `{shlex.join(question.request.argv)}` was not run: {why}. It changes "
        "real infrastructure; ask the user, or describe the change instead."
    )


def outside_question(tool_call: ToolCallFields, outside: list[Path], cwd: Path) -> ToolCallFields:
    """The permission question's tool call for a call that reaches outside the project: the
    title and the content say so, with the real paths."""
    paths = ", ".join(str(path) for path in outside)
    verb = "is" if len(outside) == 1 else "are"
    text = f"{paths} {verb} outside the project ({cwd})."
    return evolve(
        tool_call,
        title=f"{tool_call.title} (outside the project)",
        content=[ContentToolCallContent(TextContent(text)), *(tool_call.content or [])],
    )


def _only_ours(
    tool: Tool, args: Any, resolved: Mapping[str, Path], cwd: Path, ours: Path | None
) -> bool:
    """Every path of the call is in our own folder (saved tool output), read-only."""
    paths = _paths(tool, args, resolved, cwd)
    return ours is not None and bool(paths) and all(is_inside(path, ours) for path in paths)


async def ask(
    editor: EditorAccess,
    tool_call: ToolCallFields,
    tool_name: str,
    remembered: dict[str, bool],
    options: list[PermissionOption] = OPTIONS,
) -> Answer:
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


async def question_content(
    tool: Tool, args: Any, context: ToolContext
) -> list[ToolCallContent] | None:
    """What the question shows of the call's effect (the diff an edit would make), worked out
    without writing anything, so a client that shows diffs before approval has one. None when
    the tool shows nothing or cannot work it out (running the call then reports why).

    Only for paths inside the project: working out a diff reads the file, and a file outside
    it is read only once the user allowed the call (the question itself shows the path)."""
    if not all(
        in_project(path, context.cwd, context.additional_dirs) for path in context.resolved.values()
    ):
        return None
    try:
        return await tool.preview(args, context)
    except ToolFailure as exc:
        log.info("no preview for the %s question: %s", tool.name, exc)
        return None
