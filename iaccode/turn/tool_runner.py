"""Run the tool calls of one model answer, showing each to the editor from start to finish.

    tool_call (pending: title, kind, locations, rawInput)
      -> [session/request_permission]
      -> tool_call_update (in_progress)
      -> tool_call_update (completed | failed: rawOutput, content)

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
from pathlib import Path
from typing import Any

import trio

from iaccode.iac import diagnostics
from iaccode.protocol.content import TextContent
from iaccode.protocol.convert import ParamsError, to_wire, tool_input
from iaccode.protocol.tool_calls import (
    ContentToolCallContent,
    ToolCallFields,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
)
from iaccode.tools.base import (
    MACHINE_DEPENDENT,
    Tool,
    ToolContext,
    ToolFailure,
    ToolResult,
    resolve_path,
    truncate,
)
from iaccode.turn import permissions
from iaccode.turn.env import TurnEnv
from iaccode.turn.permissions import Answer, Decision
from iaccode.turn.transcript import Transcript

log = logging.getLogger(__name__)

READ_CONCURRENCY = 4
"""Read-only calls of one answer that may run at once."""

FINAL_UPDATE_TIMEOUT = 0.5
"""After a cancel, how long we try to tell the editor that a running call failed."""


class ToolRunner:
    def __init__(self, env: TurnEnv, invalid_inputs: dict[str, str],
                 transcript: Transcript) -> None:
        self._env = env
        self._invalid_inputs = invalid_inputs
        self._transcript = transcript
        self._starts: dict[str, dict[str, Any]] = {}
        """Each call's ``tool_call`` update, kept for the record written when it ends."""

    async def run_all(self, tool_uses: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run every call; return the ``tool_result`` blocks in the order of ``tool_uses``."""
        results: dict[str, dict[str, Any]] = {}
        limiter = trio.CapacityLimiter(READ_CONCURRENCY)
        index = 0
        while index < len(tool_uses):
            batch = [tool_uses[index]]
            if self._runs_freely(batch[0]):
                while (index + len(batch) < len(tool_uses)
                       and self._runs_freely(tool_uses[index + len(batch)])):
                    batch.append(tool_uses[index + len(batch)])
            if len(batch) == 1:
                await self._run_one(batch[0], results)
            else:
                async with trio.open_nursery() as nursery:
                    for use in batch:
                        nursery.start_soon(self._run_limited, use, results, limiter)
            index += len(batch)
        return [results[use["id"]] for use in tool_uses]

    def _runs_freely(self, use: dict[str, Any]) -> bool:
        """A read-only call that needs no question (so it may run beside others)."""
        tool = self._env.tools.get(use.get("name", ""))
        if tool is None or not tool.read_only or use["id"] in self._invalid_inputs:
            return False
        try:
            args: Any = tool_input(use.get("input"), tool.input_type)
        except ParamsError:
            return False
        verdict = permissions.decide(tool, args, mode=self._env.mode(), cwd=self._env.cwd,
                                     remembered=self._env.remembered)
        return verdict.decision is Decision.RUN

    async def _run_limited(self, use: dict[str, Any], results: dict[str, dict[str, Any]],
                           limiter: trio.CapacityLimiter) -> None:
        async with limiter:
            await self._run_one(use, results)

    async def _run_one(self, use: dict[str, Any], results: dict[str, dict[str, Any]]) -> None:
        call_id = str(use["id"])
        result = await self._call(call_id, str(use.get("name", "")), use.get("input"))
        results[call_id] = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": truncate(result.text, self._env.limits.output_chars),
            "is_error": result.is_error,
        }

    async def _call(self, call_id: str, name: str, raw_input: Any) -> ToolResult:
        env = self._env
        tool = env.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(env.tools))
            return await self._refuse(call_id, name, "other", raw_input,
                                      f"Unknown tool {name!r}. Available tools: {known}.")
        if call_id in self._invalid_inputs:
            return await self._refuse(call_id, name, tool.kind, raw_input,
                                      "The tool input was not valid JSON (was it cut off by the "
                                      "output token limit?). The tool was not run.")
        try:
            args: Any = tool_input(raw_input, tool.input_type)
        except ParamsError as exc:
            problems = "; ".join(f"{path}: {why}" for path, why in exc.problems.items())
            return await self._refuse(call_id, name, tool.kind, raw_input,
                                      f"Invalid input for {name}: {problems}. Not run.")

        title = tool.title(args)
        # Resolved once: what is judged, shown and used must be the same real path.
        resolved = {raw: resolve_path(env.cwd, raw) for raw in tool.paths(args)}
        locations = [ToolCallLocation(str(resolved[raw])) for raw in tool.paths(args)] or None
        await self._start(ToolCallStart(call_id, title, tool.kind, "pending", locations,
                                        raw_input=raw_input, meta=env.tool_call_meta))
        verdict = permissions.decide(tool, args, mode=env.mode(), cwd=env.cwd,
                                     remembered=env.remembered, resolved=resolved,
                                     confirm_infra_changes=env.config.confirm_infra_changes)
        if verdict.decision is Decision.ASK:
            fields = ToolCallFields(call_id, title, tool.kind, "pending", locations, raw_input)
            options = permissions.OPTIONS
            if verdict.infra_change is not None:
                fields = permissions.infra_question(fields, verdict.infra_change, args.command)
                options = permissions.INFRA_OPTIONS
            answer = await permissions.ask(env.request, env.session_id, fields, tool.name,
                                           env.remembered, options)
            if answer is Answer.CANCELLED:
                await self._finish(call_id, ToolResult("Cancelled by the user.", is_error=True))
                env.cancel_turn()
                await trio.lowlevel.checkpoint()  # raises Cancelled: the turn ends here
            if answer is not Answer.ALLOW:
                return await self._finish(call_id, ToolResult(permissions.DENIED, is_error=True))
        elif verdict.decision is Decision.REFUSE:
            return await self._finish(call_id, ToolResult(verdict.reason, is_error=True))

        await env.send_update(ToolCallProgress(call_id, status="in_progress",
                                               meta=env.tool_call_meta))
        return await self._finish(call_id, await self._execute(tool, args, call_id, resolved))

    async def _execute(self, tool: Tool, args: Any, call_id: str,
                       resolved: dict[str, Path]) -> ToolResult:
        env = self._env

        async def report(update: ToolCallProgress) -> None:
            await env.send_update(update)

        context = ToolContext(cwd=env.cwd, limits=env.limits, files=env.files,
                              tool_call_id=call_id, report=report, terminal=env.terminal,
                              resolved=resolved)
        recorded = env.recorded_tools.get(call_id) if tool.name in MACHINE_DEPENDENT else None
        try:
            result = recorded if recorded is not None else await tool.run(args, context)
        except ToolFailure as exc:
            result = ToolResult(str(exc), is_error=True)
        except trio.Cancelled:
            with trio.CancelScope(shield=True), trio.move_on_after(FINAL_UPDATE_TIMEOUT):
                await self._finish(call_id, ToolResult(
                    "Cancelled: the turn was cancelled while the tool ran.", is_error=True))
            raise
        except Exception as exc:  # a bug in the tool: the model and the log both hear of it
            log.exception("tool %s failed", tool.name)
            result = ToolResult(f"The tool failed unexpectedly: {type(exc).__name__}: {exc}",
                                is_error=True)
        if tool.name in diagnostics.CHECKED_TOOLS and not result.is_error:
            # An IaC file just written is checked, as an editor would; a replay leaves the
            # machine's programs (terraform, cfn-lint) out.
            result = await diagnostics.annotate(result, env.cwd,
                                                external=env.config.recorded_tools is None)
        if env.tool_tap is not None:
            env.tool_tap(call_id, tool.name, result)
        return result

    async def _refuse(self, call_id: str, name: str, kind: Any, raw_input: Any,
                      message: str) -> ToolResult:
        await self._start(ToolCallStart(
            call_id, name or "unknown tool", kind, "pending", raw_input=raw_input,
            meta=self._env.tool_call_meta))
        return await self._finish(call_id, ToolResult(message, is_error=True))

    async def _start(self, start: ToolCallStart) -> None:
        self._starts[start.tool_call_id] = to_wire(start)
        await self._env.send_update(start)

    async def _finish(self, call_id: str, result: ToolResult) -> ToolResult:
        shown = truncate(result.text, self._env.limits.output_chars)
        end = ToolCallProgress(
            call_id,
            status="failed" if result.is_error else "completed",
            content=result.content or [ContentToolCallContent(TextContent(shown))],
            raw_output=result.raw_output if result.raw_output is not None else {"output": shown},
            meta=self._env.tool_call_meta,
        )
        self._transcript.tool_call(self._starts.get(call_id, {}), to_wire(end))
        await self._env.send_update(end)
        return result
