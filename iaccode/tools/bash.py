"""``bash``: run a shell command in the project directory and return what it printed.

Locally (the default) the command runs as ``/bin/bash -c COMMAND`` in a session and process
group of its own, with stdin from ``/dev/null`` (our stdin is the protocol channel), stdout and
stderr merged into one pipe, and an environment without secrets or pagers. Whatever way it
ends (exit, timeout, the turn's cancellation) the whole group is ended: TERM, up to
``kill_grace`` seconds, then KILL, so background jobs (``sleep 30 &``, ``nohup``) never
outlive the call. We stop waiting when the shell exits rather than when the pipe reaches EOF
(a background child holds the pipe open).

A job that moves to a process group of its own (``set -m``, GNU ``timeout``) is still in the
shell's session, and is ended with the group. On Linux, a process that leaves the session
(``setsid``, a daemon that double-forks into a new session) is ended too: the shell and the
agent are child subreapers, so every process the command started stays findable through the
``/proc`` parent links and gets the same TERM, grace, KILL (:mod:`iaccode.host.process_tree`).
Limitation, without prctl or ``/proc`` (macOS): such a process escapes the kill. We only stop
reading its output (after a short drain) and close our end of the pipe.

When the editor advertised ``terminal: true``, the command runs in the editor's terminal
instead (``terminal/*``), which the editor embeds in the tool call while it runs. On Linux it
runs there under our supervisor (:mod:`iaccode.tools.supervise`), which ends the whole tree
when the terminal is killed, even when the client kills only its outer shell.

Every infrastructure CLI the command runs meets its gate (:mod:`iaccode.gate`): the tool opens
the call's channel (``ToolContext.gate``) for as long as the command runs, puts the gates first
on its PATH and leaves the cloud credentials out of its environment (the gate gives them back to
the real CLI). In the editor's terminal the supervisor does both there.

A command that runs a Terraform / OpenTofu plan gets a summary of it before its output
(:mod:`iaccode.iac.plan_summary`), read from all of the output as it streams, so it holds
even when the middle of the output is dropped here or cut for the model.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import trio
from attrs import evolve, frozen

from iaccode import redaction
from iaccode.gate.channel import CallChannel, GatePolicy, open_channel
from iaccode.host import process_tree
from iaccode.host.exception_groups import sole
from iaccode.iac.command_env import HOLD_VARIABLE, command_env
from iaccode.iac.plan_summary import PlanReader, runs_plan
from iaccode.printable import visible
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import (
    ContentToolCallContent,
    TerminalContent,
    ToolCallContent,
    ToolCallProgress,
)
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools import supervise
from iaccode.tools.base import (
    ClientTerminal,
    ExitStatus,
    TerminalOutput,
    Tool,
    ToolContext,
    ToolLimits,
)

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
"""Bytes read from the pipe at a time (on top of the kept output, the most we hold)."""

DRAIN_SECONDS = 0.5
"""After the group is ended, how long we read what is left in the pipe (an escapee holding
the pipe open would otherwise keep us reading forever)."""

CLIENT_SLACK = 1.0
"""Added to ``kill_grace`` to bound each clean-up request to the editor's terminal."""

TITLE_CHARS = 80

_DEFAULTS = ToolLimits()


@frozen
class BashInput:
    command: str
    timeout: float | None = None


class Bash(Tool):
    name = "bash"
    kind = "execute"
    read_only = False
    machine_dependent = True
    gated = True
    input_type = BashInput
    description = (
        "Run a shell command with `bash -c` in the project directory and return its output "
        "(stdout and stderr together, in order), followed by the exit code when it is not 0.\n"
        "\n"
        "- Non-interactive: stdin is empty and there is no terminal, so nothing can answer a "
        "prompt. Pass flags such as `-y`, `--yes`, `--no-edit` or `--non-interactive`. Pagers "
        "and editors are disabled (PAGER=cat, GIT_EDITOR=true); colours are off.\n"
        "- Every call is a fresh shell in the project directory: `cd`, variables and functions "
        "do not carry over to the next call. Chain steps with `&&` in one command instead.\n"
        f"- Timeout: {_DEFAULTS.bash_timeout:g} seconds by default; pass `timeout` (seconds, at "
        f"most {_DEFAULTS.bash_max_timeout:g}) for longer builds or test runs. On timeout the "
        "command and everything it started are killed.\n"
        "- Nothing outlives the call: background jobs (`&`, `nohup`) are killed when the "
        "command ends, so a server started here does not keep running.\n"
        f"- Output is capped at {_DEFAULTS.bash_output_bytes // 1024} KiB (the start and the "
        "end are kept, the middle dropped) and you see at most "
        f"{_DEFAULTS.output_chars} characters of it; send large output to a file and look at "
        "it with `head`, `tail` or `grep`.\n"
        "- Commands that change real infrastructure (terraform/tofu apply or destroy, kubectl "
        "apply or delete, helm install, aws cloudformation deploy, pulumi up, ...) always ask "
        "the user first, whatever else was allowed: run a plan or a dry run before, and say "
        "what the change will do. The output of a terraform/tofu plan starts with a summary "
        "of it (destroys and replacements first), read from the whole output.\n"
        "- Prefer the file tools (read_file, edit_file, glob, grep) for reading, editing and "
        "searching files; use bash for builds, tests, git and other programs."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, run with bash -c."},
            "timeout": {
                "type": "number",
                "description": (
                    f"Seconds before the command is killed (default "
                    f"{_DEFAULTS.bash_timeout:g}, at most "
                    f"{_DEFAULTS.bash_max_timeout:g})."
                ),
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    def title(self, args: BashInput) -> str:
        # At new lines only: a character that splits lines elsewhere (\u2028, \r) stays in
        # the title, which the runner shows escaped: never a harmless first line of more.
        lines = args.command.strip().split("\n")
        first = lines[0].strip() if lines else ""
        if len(first) > TITLE_CHARS:
            return first[: TITLE_CHARS - 1] + "…"
        if len(lines) > 1:
            return first + " …"
        return first or "bash"

    def command_line(self, args: BashInput) -> str:
        return args.command

    async def preview(self, args: BashInput, ctx: ToolContext) -> list[ToolCallContent]:
        """The whole command, each character shown: a client may not show rawInput, and
        the title is its first line."""
        return [ContentToolCallContent(TextContent(visible(args.command)))]

    async def run(self, args: BashInput, ctx: ToolContext) -> ToolResult:
        if not args.command.strip():
            raise ToolFailure("The command is empty.")
        timeout = _timeout(args.timeout, ctx.limits)
        try:
            if ctx.terminal is not None:
                return await _run_in_terminal(ctx.terminal, args.command, timeout, ctx)
            return await _run_local(args.command, timeout, ctx)
        except BaseExceptionGroup as group:
            # Our nurseries wrap a cancellation in a group; the caller expects a bare
            # Cancelled (and its cancel scope catches it either way).
            cancelled = sole(group, trio.Cancelled)
            if cancelled is None:
                raise
            raise cancelled from None


def _timeout(requested: float | None, limits: ToolLimits) -> float:
    if requested is None:
        return min(limits.bash_timeout, limits.bash_max_timeout)
    if not requested > 0:  # also NaN
        raise ToolFailure(f"timeout must be a positive number of seconds, not {requested}.")
    return min(requested, limits.bash_max_timeout)


def _shell() -> str:
    return "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"


def _status_line(
    exit_code: int | None, signal_name: str | None, timed_out: bool, timeout: float
) -> str | None:
    if timed_out:
        return f"[timed out after {timeout:g} s; the process group was killed]"
    if signal_name is not None:
        return f"[killed by {signal_name}]"
    if exit_code is not None and exit_code != 0:
        return f"[exit code {exit_code}]"
    return None


def _result_text(output: str, status: str | None, plan: str | None = None) -> str:
    before = f"{plan}\n\n" if plan else ""
    if status is None:
        return before + (output or "(no output)")
    if output and not output.endswith("\n"):
        output += "\n"
    return before + output + status


# --- local execution -------------------------------------------------------------------------


class _HeadTail:
    """The first and last bytes of a stream, never more than ``limit`` in all."""

    def __init__(self, limit: int) -> None:
        limit = max(limit, 0)
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes | bytearray) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]  # cheap: a bytearray drops its front without copying
            self.dropped += excess

    def text(self) -> str:
        """What was kept, with the secrets we hold replaced: a secret cut in two by the
        dropped middle loses both pieces."""
        redact = redaction.current()
        if not self.dropped:
            return redact(bytes(self.head + self.tail).decode("utf-8", errors="replace"))
        # Decode each side on its own, without the characters the cut split in two.
        head = codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.head))
        tail = bytes(self.tail)
        skip = 0
        while skip < min(3, len(tail)) and 0x80 <= tail[skip] < 0xC0:  # continuation bytes
            skip += 1
        return (
            f"{redact.ends(head, end=True)}\n[... {self.dropped} bytes of output dropped "
            f"from the middle ...]\n"
            f"{redact.ends(tail[skip:].decode('utf-8', errors='replace'), start=True)}"
        )


@contextlib.asynccontextmanager
async def _gated(
    policy: GatePolicy | None, terminal: bool = False
) -> AsyncIterator[CallChannel | None]:
    """The call's gate channel, for as long as the command runs (None: no gates: both
    ``[iac]`` settings are off, or a caller without a policy)."""
    if policy is None or not (policy.confirm or policy.hold_credentials):
        yield None
        return
    async with open_channel(policy, terminal=terminal) as channel:
        yield channel


TAMPERED = (
    "[iac-code: this command removed or changed the gates in front of the "
    "infrastructure CLIs; they were put back. Do not touch them.]"
)


def _noted(result: ToolResult, channel: CallChannel | None) -> ToolResult:
    """The result, with a line saying so when the command tampered with the gates."""
    if channel is None or not channel.tampered:
        return result
    raw = dict(result.raw_output) if isinstance(result.raw_output, dict) else {}
    raw["gates_tampered"] = True
    return evolve(result, text=f"{result.text}\n{TAMPERED}", is_error=True, raw_output=raw)


def _holds(ctx: ToolContext) -> bool:
    """Whether the command goes without the cloud credentials: unless the user said
    ``[iac] hold_credentials = false``; a caller without a policy holds them too."""
    return ctx.gate is None or ctx.gate.hold_credentials


async def _run_local(command: str, limit: float, ctx: ToolContext) -> ToolResult:
    async with _gated(ctx.gate) as channel:
        env = command_env(hold_credentials=_holds(ctx))
        if channel is not None:
            env = channel.command_env(env)
        try:
            proc = await process_tree.open_shell(
                [_shell(), "-c", command],
                cwd=ctx.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolFailure(f"Could not start the command: {exc}") from exc
        if channel is not None:
            channel.set_root(proc.pid)
        result = await _watch_local(proc, command, limit, ctx)
    return _noted(result, channel)


async def _watch_local(
    proc: trio.Process, command: str, limit: float, ctx: ToolContext
) -> ToolResult:
    tree = process_tree.Tree(proc)
    stdout = proc.stdout
    assert stdout is not None
    output = _HeadTail(ctx.limits.bash_output_bytes)
    plan = PlanReader() if runs_plan(command) else None
    pipe_closed = trio.Event()
    ended = False

    async def read() -> None:
        try:
            while chunk := await stdout.receive_some(READ_CHUNK):
                output.feed(chunk)
                if plan is not None:
                    plan.feed(chunk)
        finally:
            pipe_closed.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            with trio.move_on_after(limit) as deadline:
                await proc.wait()  # the shell, not the pipe: a background job holds the pipe
            with trio.CancelScope(shield=True):
                await process_tree.end_group(proc, tree, ctx.limits.kill_grace)
                ended = True
                with trio.move_on_after(DRAIN_SECONDS):
                    await pipe_closed.wait()
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if not ended:  # cancelled (or failed) while it ran
                await process_tree.end_group(proc, tree, ctx.limits.kill_grace)
            process_tree.forget(proc)
            await stdout.aclose()

    timed_out = deadline.cancelled_caught
    code = proc.returncode
    exit_code = code if code is not None and code >= 0 else None
    signal_name = _signal_name(-code) if code is not None and code < 0 else None
    text = output.text()
    status = _status_line(exit_code, signal_name, timed_out, limit)
    summary = plan.summary() if plan is not None else None
    raw: dict[str, Any] = {
        "exit_code": exit_code,
        "signal": signal_name,
        "timed_out": timed_out,
        "output": text,
        "truncated_bytes": output.dropped,
    }
    if summary is not None:
        raw["plan_summary"] = summary
    return ToolResult(
        _result_text(text, status, summary), is_error=status is not None, raw_output=raw
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# --- the editor's terminal ---------------------------------------------------------------------


async def _run_in_terminal(
    terminal: ClientTerminal, command: str, limit: float, ctx: ToolContext
) -> ToolResult:
    async with _gated(ctx.gate, terminal=True) as channel:
        result = await _in_terminal(terminal, command, limit, ctx, channel)
    return _noted(result, channel)


def _terminal_env(channel: CallChannel | None, ctx: ToolContext) -> dict[str, str] | None:
    """What ``terminal/create`` adds to the editor's environment: the channel, for our
    supervisor to set PATH and hold the credentials back there; without the supervisor the
    gates on PATH (the editor's credentials then stay)."""
    if channel is None:
        return None
    if process_tree.supported():
        return {**channel.env, HOLD_VARIABLE: "1" if _holds(ctx) else "0"}
    channel.token_only()
    return {
        **channel.env,
        "PATH": channel.folder.path_for_commands(os.environ.get("PATH", os.defpath)),
    }


async def _in_terminal(
    terminal: ClientTerminal,
    command: str,
    limit: float,
    ctx: ToolContext,
    channel: CallChannel | None,
) -> ToolResult:
    bound = ctx.limits.kill_grace + CLIENT_SLACK
    created: list[str] = []
    exited = False
    try:
        await _create_terminal(terminal, command, ctx, bound, created, _terminal_env(channel, ctx))
        if not created:
            raise ToolFailure("The editor did not create a terminal for the command in time.")
        terminal_id = created[0]
        await ctx.report(
            ToolCallProgress(tool_call_id=ctx.tool_call_id, content=[TerminalContent(terminal_id)])
        )
        exit_status: ExitStatus | None = None
        with trio.move_on_after(limit) as deadline:
            exit_status = await terminal.wait_for_exit(terminal_id)  # ToolFailure: it failed
        timed_out = deadline.cancelled_caught
        if timed_out:
            await _bounded(terminal.kill, terminal_id, bound)
        exited = True
        answer: TerminalOutput | None = None
        with trio.move_on_after(bound):
            try:
                answer = await terminal.output(terminal_id)
            except ToolFailure as exc:
                log.warning("terminal/output for %s failed: %s", terminal_id, exc)
    finally:
        if created:
            if not exited:  # cancelled (or failed) while it ran
                await _bounded(terminal.kill, created[0], bound)
            await _bounded(terminal.release, created[0], bound)

    return _terminal_result(terminal_id, answer, exit_status, timed_out, limit, runs_plan(command))


async def _create_terminal(
    terminal: ClientTerminal,
    command: str,
    ctx: ToolContext,
    bound: float,
    created: list[str],
    env: dict[str, str] | None = None,
) -> None:
    """Create the terminal, appending its id to ``created``.

    Shielded, so a cancel cannot lose a terminal the editor is starting (it would run on,
    unreleased); once cancelled we wait at most ``bound`` more for the answer.
    """
    shield = trio.CancelScope(shield=True)

    async def on_cancel() -> None:
        try:
            await trio.sleep_forever()
        finally:
            shield.deadline = min(shield.deadline, trio.current_time() + bound)

    failure: ToolFailure | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_cancel)
        with shield:
            try:
                program, args = _terminal_command(command, ctx.limits)
                created.append(
                    await terminal.create(
                        program,
                        args,
                        cwd=str(ctx.cwd),
                        output_byte_limit=ctx.limits.bash_output_bytes,
                        env=env,
                    )
                )
            except ToolFailure as exc:  # raised outside the nursery: not in an exception group
                failure = exc
        nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure


def _terminal_command(command: str, limits: ToolLimits) -> tuple[str, list[str]]:
    """What the editor's terminal runs: the shell under our supervisor where it can keep the
    whole tree in hand (Linux), so a kill of the terminal ends everything the command
    started, not only the client's outer shell."""
    argv = [_shell(), "-c", command]
    if not process_tree.supported():
        return argv[0], argv[1:]
    return supervise.command_line(argv, limits.kill_grace)


async def _bounded(
    call: Callable[[str], Awaitable[None]], terminal_id: str, seconds: float
) -> None:
    """A clean-up request to the editor: shielded from cancels, bounded, failures logged."""
    with trio.CancelScope(shield=True, deadline=trio.current_time() + seconds):
        try:
            await call(terminal_id)
        except Exception as exc:
            log.warning("terminal clean-up for %s failed: %s", terminal_id, exc)


def _terminal_result(
    terminal_id: str,
    answer: TerminalOutput | None,
    exit_status: ExitStatus | None,
    timed_out: bool,
    timeout: float,
    plan: bool = False,
) -> ToolResult:
    answer = answer or TerminalOutput(None)
    text = answer.output
    if text is None:
        text = "(the terminal's output could not be read)"
    truncated = answer.truncated
    # Redacted here too (the runner does it again): the terminal's cut may leave a secret's end.
    text = redaction.current().ends(text, start=truncated)
    if truncated:
        text = "[... the start of the output was cut by the terminal's limit ...]\n" + text
    status = answer.exit_status or exit_status or ExitStatus()
    exit_code, signal_name = status.exit_code, status.signal
    line = _status_line(exit_code, signal_name, timed_out, timeout)
    summary = None
    if plan:  # only what the terminal kept: its limit may have cut the start
        reader = PlanReader()
        reader.feed(text.encode("utf-8", "replace"))
        summary = reader.summary()
    raw: dict[str, Any] = {
        "exit_code": exit_code,
        "signal": signal_name,
        "timed_out": timed_out,
        "output": text,
        "truncated": truncated,
        "terminal_id": terminal_id,
    }
    content: list[ToolCallContent] = [TerminalContent(terminal_id)]
    if summary is not None:
        raw["plan_summary"] = summary
        content.insert(0, ContentToolCallContent(TextContent(summary)))
    return ToolResult(
        _result_text(text, line, summary),
        is_error=line is not None,
        raw_output=raw,
        content=content,
    )
