"""Run the tool calls of one model answer, showing each to the editor from start to finish.

    tool_call (pending: name, title, kind, locations, rawInput)   every call of the answer
      -> [session/request_permission (with the diff an edit would make)]      then one by one
      -> tool_call_update (in_progress)
      -> tool_call_update (completed | failed: rawOutput, content)

Every announced call gets its final update, however the run ends (cancel, close, a bug).

A call of a gated tool (``Tool.gated``: bash) runs with its gates (:mod:`iaccode.gate`): a
change an infrastructure CLI would make while the command runs is asked about on the same call
(:mod:`iaccode.turn.gate_questions`); one the question about the command line already allowed
runs without a second question.

Each call's paths are resolved to real paths once: the permission check judges them, the
question shows them, and the tool works on them (``ToolContext.resolved``), so a symlink swapped
in between cannot redirect a call that was judged inside the project (or approved for one path)
to somewhere else.

Read-only calls that need no question run concurrently (bounded); everything else runs one at
a time, in order. Results go back to the model in the order it asked. A call we cannot run
(unknown tool, input that is not valid JSON or does not fit the tool) is answered with an
error and never executed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import trio
from attrs import evolve, frozen

from iaccode.gate.channel import GatePolicy
from iaccode.gate.folder import gate_folder
from iaccode.host.local_files import display_path
from iaccode.iac import sensitive
from iaccode.printable import visible
from iaccode.protocol.content import TextContent
from iaccode.protocol.convert import ParamsError, to_wire, tool_input
from iaccode.protocol.tool_calls import (
    ContentToolCallContent,
    ToolCallContent,
    ToolCallFields,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
)
from iaccode.secret_files import is_secret_file
from iaccode.tool_result import ToolResult
from iaccode.tools import tool_output
from iaccode.tools.base import Tool, ToolContext, in_project, resolve_path, run_tool, truncate
from iaccode.tools.redacted import redacted_content, redacted_result
from iaccode.turn import permissions
from iaccode.turn.env import ToolEnv
from iaccode.turn.exposure import SEARCHED, secrets_read
from iaccode.turn.gate_questions import gate_policy
from iaccode.turn.permissions import Answer, Decision
from iaccode.turn.protected import Protected
from iaccode.turn.transcript import Transcript

log = logging.getLogger(__name__)

READ_CONCURRENCY = 4
"""Read-only calls of one answer that may run at once."""

FINAL_UPDATE_TIMEOUT = 0.5
"""After a cancel, how long we try to tell the editor how an announced call ended."""
TITLE_CHARS = 200
"""Most characters of a call's title (a sub-agent's task is the model's free text)."""


@frozen
class _Call:
    """An announced call, its input checked, waiting to run."""

    call_id: str
    tool: Tool
    args: Any
    raw_input: Any
    title: str
    locations: list[ToolCallLocation] | None
    resolved: dict[str, Path]


def _leads_to(cwd: Path, resolved: dict[str, Path]) -> str:
    """`` (→ REAL)`` for each path of a call that a link leads elsewhere: the title says where
    the call really goes (``Write notes.txt (→ .github/workflows/deploy.yml)``)."""
    shown = [
        f" (→ {display_path(real, cwd)})"
        for raw, real in resolved.items()
        if real != Path(os.path.normpath(cwd / os.path.expanduser(raw)))
    ]
    return "".join(shown)


class ToolRunner:
    def __init__(
        self, env: ToolEnv, invalid_inputs: dict[str, str], transcript: Transcript
    ) -> None:
        self._env = env
        self._editor = env.editor
        self._session = env.session
        self._invalid_inputs = invalid_inputs
        self._transcript = transcript
        self._starts: dict[str, dict[str, Any]] = {}
        """Each call's ``tool_call`` update, kept for the record written when it ends."""
        self._names: dict[str, str | None] = {}
        """Each announced call's tool name (``name`` on every update of the call)."""
        self._reads_secrets = False
        """A call of the answer being run reads secrets: it names a secrets file or a command
        that prints them (``turn/exposure.py``)."""
        self._titles: dict[str, str] = {}
        """The title a call's permission question gave it ("Changes real infrastructure:
        ..."), which the client shows from then on: its final update says it too."""
        self._unfinished: dict[str, str] = {}
        """Announced calls without a final update yet -> what their final update says if the
        run ends early."""
        self._protected = Protected.of(env.config, project=env.session.cwd)
        self._shown: dict[str, list[ToolCallContent]] = {}
        """What each running call's card shows (its terminal), for after a gate's question."""

    async def run_all(self, tool_uses: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run every call; return the ``tool_result`` blocks in the order of ``tool_uses``.

        Every call is announced (``tool_call``, pending) before the first runs, so the editor
        shows the whole answer. Whatever ends the run early (a cancel while a question waits,
        while a call runs or while calls wait their turn, a close, a bug), each announced call
        that has not finished gets a final ``failed`` update saying why, before this returns.
        """
        results: dict[str, dict[str, Any]] = {}
        try:
            calls = []
            for use in tool_uses:
                announced = await self._announce(use)
                if isinstance(announced, ToolResult):
                    await self._keep(str(use["id"]), announced, results)
                else:
                    calls.append(announced)
            await self._run_calls(calls, results)
        except BaseException:
            await self._fail_unfinished()
            raise
        return [results[use["id"]] for use in tool_uses]

    async def _run_calls(self, calls: list[_Call], results: dict[str, dict[str, Any]]) -> None:
        # A web_fetch beside a call that reads secrets waits for it (and may ask).
        self._reads_secrets = any(
            secrets_read(call.raw_input, map(str, call.resolved.values()))
            for call in calls
            if call.tool.reads_what_it_names
        )
        limiter = trio.CapacityLimiter(READ_CONCURRENCY)
        index = 0
        while index < len(calls):
            batch = [calls[index]]
            if self._runs_freely(batch[0]):
                while index + len(batch) < len(calls) and self._runs_freely(
                    calls[index + len(batch)]
                ):
                    batch.append(calls[index + len(batch)])
            if len(batch) == 1:
                await self._run_one(batch[0], results)
            else:
                async with trio.open_nursery() as nursery:
                    for one in batch:
                        nursery.start_soon(self._run_limited, one, results, limiter)
            index += len(batch)

    def _runs_freely(self, call: _Call) -> bool:
        """A read-only call that needs no question (so it may run beside others)."""
        session = self._session
        if (
            not call.tool.read_only
            or (call.tool.kind == "fetch" and self._reads_secrets)
            or session.exposure.host_to_ask(call.tool, call.args, session.mode())
        ):
            return False
        return self._decide(call).decision is Decision.RUN

    def _decide(
        self, call: _Call, confirm_infra_changes: bool = True, gates: Path | None = None
    ) -> permissions.Verdict:
        """:func:`permissions.decide` for ``call`` in this session."""
        session = self._session
        return permissions.decide(
            call.tool,
            call.args,
            mode=session.mode(),
            cwd=session.cwd,
            remembered=session.remembered,
            resolved=call.resolved,
            ours=session.saved_output,
            protected=self._protected,
            additional=session.additional_dirs,
            confirm_infra_changes=confirm_infra_changes,
            gates=gates,
        )

    async def _run_limited(
        self, call: _Call, results: dict[str, dict[str, Any]], limiter: trio.CapacityLimiter
    ) -> None:
        async with limiter:
            await self._run_one(call, results)

    async def _run_one(self, call: _Call, results: dict[str, dict[str, Any]]) -> None:
        await self._keep(call.call_id, await self._call(call), results)

    async def _keep(
        self, call_id: str, result: ToolResult, results: dict[str, dict[str, Any]]
    ) -> None:
        results[call_id] = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": (
                result.model_content
                if result.model_content is not None
                else await self._for_model(call_id, result.text)
            ),
            "is_error": result.is_error,
        }

    async def _for_model(self, call_id: str, text: str) -> str:
        """The text, or, when it is over the limit, its head and tail and the file keeping
        all of it."""
        limit = self._env.config.tool_limits.output_chars
        saved_output = self._session.saved_output
        if len(text) <= limit or saved_output is None:
            return truncate(text, limit)
        try:
            saved: Path | None = await trio.to_thread.run_sync(
                tool_output.save, saved_output, call_id, text
            )
        except OSError as exc:
            log.warning("could not save the output of %s: %s", call_id, exc)
            saved = None
        return tool_output.shortened(text, limit, saved)

    async def _announce(self, use: dict[str, Any]) -> _Call | ToolResult:
        """Show the call (pending); a call we cannot run is answered at once (the result)."""
        env = self._env
        call_id, name, raw_input = str(use["id"]), str(use.get("name", "")), use.get("input")
        tool = env.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(env.tools))
            return await self._refuse(
                call_id,
                name,
                "other",
                raw_input,
                f"Unknown tool {name!r}. Available tools: {known}.",
            )
        if call_id in self._invalid_inputs:
            return await self._refuse(
                call_id,
                name,
                tool.kind,
                raw_input,
                "The tool input was not valid JSON (was it cut off by the "
                "output token limit?). The tool was not run.",
            )
        try:
            args: Any = tool_input(raw_input, tool.input_type)
        except ParamsError as exc:
            return await self._refuse(
                call_id,
                name,
                tool.kind,
                raw_input,
                f"Invalid input for {name}: {exc}. Not run.",
            )
        # Resolved once: what is judged, shown and used must be the same real path.
        resolved = {raw: resolve_path(self._session.cwd, raw) for raw in tool.paths(args)}
        locations = [ToolCallLocation(str(resolved[raw])) for raw in tool.paths(args)] + [
            ToolCallLocation(str(resolve_path(self._session.cwd, raw)))
            for raw in tool.shown_paths(args)
        ]
        title = visible(tool.title(args) + _leads_to(self._session.cwd, resolved), one_line=True)
        if len(title) > TITLE_CHARS:  # a path or a task, as it is, not too long
            title = title[: TITLE_CHARS - 1] + "…"
        call = _Call(call_id, tool, args, raw_input, title, locations or None, resolved)
        await self._start(
            ToolCallStart(
                call_id,
                call.title,
                tool.kind,
                "pending",
                call.locations,
                raw_input=raw_input,
                meta=env.tool_call_meta,
                name=tool.name,
            )
        )
        return call

    def _gates(self) -> Path | None:
        """The folder of gates on the commands' PATH (None: no gates: both settings off, or a
        replay, whose bash results are played back: no command runs, so no gate asks)."""
        config = self._env.config
        if (
            not (config.confirm_infra_changes or config.hold_credentials)
            or config.recorded_tools is not None
        ):
            return None
        return gate_folder().bin

    async def _call(self, call: _Call) -> ToolResult:
        env, session, tool, call_id = self._env, self._session, call.tool, call.call_id
        gates = self._gates() if tool.gated else None
        verdict = self._decide(
            call, confirm_infra_changes=env.config.confirm_infra_changes, gates=gates
        )
        approved: frozenset[tuple[str, ...]] = frozenset()
        if verdict.decision is Decision.ASK:
            self._unfinished[call_id] = "the turn ended while the user was asked for permission"
            content = redacted_content(
                await permissions.question_content(
                    tool, call.args, self._context(tool, call_id, call.resolved)
                )
            )
            fields = ToolCallFields(
                call_id,
                call.title,
                tool.kind,
                "pending",
                call.locations,
                call.raw_input,
                content,
                name=tool.name,
            )
            outside = [
                path
                for path in call.resolved.values()
                if not in_project(path, session.cwd, session.additional_dirs)
            ]
            if outside:
                fields = permissions.outside_question(fields, outside, session.cwd)
            options = (
                permissions.options_for(tool.name) if verdict.remember else permissions.ONCE_OPTIONS
            )
            if verdict.protected is not None:
                fields = permissions.protected_question(fields, verdict.protected)
            if verdict.infra_change is not None:
                fields = permissions.infra_question(
                    fields,
                    verdict.infra_change,
                    tool.command_line(call.args) or "",
                    verdict.findings,
                )
            if fields.title is not None and fields.title != call.title:  # shown from now on
                self._titles[call_id] = fields.title
            answer = await permissions.ask(
                self._editor, fields, tool.name, session.remembered, options
            )
            if answer is Answer.CANCELLED:
                await self._finish(call_id, ToolResult("Cancelled by the user.", is_error=True))
                session.cancel_turn()
                await trio.lowlevel.checkpoint()  # raises Cancelled: the turn ends here
            if answer is not Answer.ALLOW:
                return await self._finish(call_id, ToolResult(permissions.DENIED, is_error=True))
            approved = verdict.approved_changes
        elif verdict.decision is Decision.REFUSE:
            return await self._finish(call_id, ToolResult(verdict.reason, is_error=True))
        elif host := session.exposure.host_to_ask(tool, call.args, session.mode()):
            refused = await self._ask_for_host(call, host)
            if refused is not None:
                return refused
        if tool.reads_what_it_names:
            session.exposure.note(call.raw_input, map(str, call.resolved.values()))

        self._unfinished[call_id] = "the turn ended while the tool ran"
        await self._editor.send_update(
            ToolCallProgress(call_id, status="in_progress", meta=env.tool_call_meta, name=tool.name)
        )
        policy = self._gate_policy(call, approved) if tool.gated else None
        result = await self._execute(tool, call.args, call_id, call.resolved, policy)
        if tool.reads_what_it_names:
            result = await self._note_read(tool, call, result)
        return await self._finish(call_id, result)

    async def _note_read(self, tool: Tool, call: _Call, result: ToolResult) -> ToolResult:
        """What the call's answer told of secrets files (the exposure check): the lines of
        one it shows (grep's ``.env:1:...``), or one it searched (its answer says something of
        it, ``No matches`` too), kept with the call so that a loaded session knows it."""
        exposure = self._session.exposure
        exposure.note_output(result.text)
        if exposure.secrets is not None:
            return result
        context = self._context(tool, call.call_id, call.resolved)
        searched = await tool.searched(call.args, context, is_secret_file)
        if searched is None:
            return result
        exposure.note_searched(searched)
        if isinstance(result.raw_output, dict):
            result = evolve(result, raw_output={**result.raw_output, SEARCHED: searched})
        return result

    def _gate_policy(self, call: _Call, approved: frozenset[tuple[str, ...]]) -> GatePolicy:
        # After a gate's question the card gets back the title it shows now (a question about
        # the line may have given it one).
        fields = ToolCallFields(
            call.call_id,
            self._titles.get(call.call_id, call.title),
            call.tool.kind,
            raw_input=call.raw_input,
            name=call.tool.name,
        )
        return gate_policy(
            self._env,
            fields,
            call.tool.command_line(call.args) or "",
            approved,
            lambda: self._shown.get(call.call_id),
        )

    async def _ask_for_host(self, call: _Call, host: str) -> ToolResult | None:
        """After a secrets file was read: may this web_fetch reach ``host``? None: yes (and
        the host is allowed from now on); else the call's final result."""
        exposure = self._session.exposure
        self._unfinished[call.call_id] = "the turn ended while the user was asked for permission"
        fields, options = exposure.question(
            ToolCallFields(
                call.call_id,
                call.title,
                call.tool.kind,
                "pending",
                call.locations,
                call.raw_input,
                name=call.tool.name,
            ),
            host,
            call.tool.address(call.args),
        )
        kind = await self._editor.request_permission(fields, options)
        if kind == "cancelled":
            await self._finish(call.call_id, ToolResult("Cancelled by the user.", is_error=True))
            self._session.cancel_turn()
            await trio.lowlevel.checkpoint()  # raises Cancelled: the turn ends here
        if kind in ("allow_always", "allow_once"):
            exposure.hosts.add(host)
            return None
        return await self._finish(call.call_id, ToolResult(permissions.DENIED, is_error=True))

    async def _fail_unfinished(self) -> None:
        """The run ended early: a final ``failed`` update (and record) for every announced
        call that has none. Shielded and bounded: the editor may have stopped reading."""
        with trio.CancelScope(shield=True), trio.move_on_after(FINAL_UPDATE_TIMEOUT):
            for call_id, why in list(self._unfinished.items()):
                await self._finish(call_id, ToolResult(f"Cancelled: {why}.", is_error=True))

    def _context(
        self, tool: Tool, call_id: str, resolved: dict[str, Path], gate: GatePolicy | None = None
    ) -> ToolContext:
        editor, session = self._editor, self._session

        async def report(update: ToolCallProgress) -> None:
            if update.content is not None:
                self._shown[call_id] = update.content
            await editor.send_update(evolve(update, name=tool.name))

        return ToolContext(
            cwd=session.cwd,
            limits=self._env.config.tool_limits,
            files=editor.files,
            tool_call_id=call_id,
            report=report,
            terminal=editor.terminal,
            resolved=resolved,
            show_plan=session.show_plan,
            additional_dirs=session.additional_dirs,
            gate=gate,
            elicit=editor.elicit,
            reachable=None if session.mode() == "bypass" else session.exposure.reachable,
            # A replay leaves the machine's programs out of the checks after
            # a write (terraform, cfn-lint): their answers were not recorded.
            write_checks=("full" if self._env.config.recorded_tools is None else "files_only"),
        )

    async def _execute(
        self,
        tool: Tool,
        args: Any,
        call_id: str,
        resolved: dict[str, Path],
        gate: GatePolicy | None = None,
    ) -> ToolResult:
        try:
            result = await run_tool(tool, args, self._context(tool, call_id, resolved, gate))
        finally:
            self._shown.pop(call_id, None)
        # Values Terraform marks sensitive never reach the model (nor the editor's view) ...
        result = await sensitive.hide(
            tool.command_line(args), result, self._session.cwd, resolved.values()
        )
        # ... and the one way out of a tool: no secret value we hold goes further.
        return redacted_result(result)

    async def _refuse(
        self, call_id: str, name: str, kind: Any, raw_input: Any, message: str
    ) -> ToolResult:
        await self._start(
            ToolCallStart(
                call_id,
                name or "unknown tool",
                kind,
                "pending",
                raw_input=raw_input,
                meta=self._env.tool_call_meta,
                name=name or None,
            )
        )
        return await self._finish(call_id, ToolResult(message, is_error=True))

    async def _start(self, start: ToolCallStart) -> None:
        self._starts[start.tool_call_id] = to_wire(start)
        self._names[start.tool_call_id] = start.name
        self._unfinished[start.tool_call_id] = "the turn ended before the tool could run"
        await self._editor.send_update(start)

    async def _finish(self, call_id: str, result: ToolResult) -> ToolResult:
        shown = truncate(result.text, self._env.config.tool_limits.output_chars)
        end = ToolCallProgress(
            call_id,
            status="failed" if result.is_error else "completed",
            content=result.content or [ContentToolCallContent(TextContent(shown))],
            raw_output=result.raw_output if result.raw_output is not None else {"output": shown},
            meta=self._env.tool_call_meta,
            name=self._names.get(call_id),
            title=self._titles.get(call_id),
        )
        self._transcript.tool_call(self._starts.get(call_id, {}), to_wire(end))
        self._unfinished.pop(call_id, None)
        # Shielded (bounded): a cancel arriving now must not lose the call's last update.
        with trio.CancelScope(shield=True), trio.move_on_after(FINAL_UPDATE_TIMEOUT):
            await self._editor.send_update(end)
        return result
