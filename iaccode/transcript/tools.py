"""Tools recorded and played like the model (``RecordingProvider``): wrappers around the tools
whose results depend on the machine (``Tool.machine_dependent``: bash, web_fetch) or on a server
(every MCP tool: a replay must not run a recorded ``drop_table`` again).

    RecordingTool   runs the tool and writes its result to the transcript (``--record``)
    PlayedTool      answers with the result recorded for the call (a replay), else runs it

A :class:`ToolTable` wraps them as each turn's table is made, so the session, the turn and the
tool runner know nothing of recording.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iaccode.protocol.tool_calls import ToolCallContent
from iaccode.tool_result import ToolResult
from iaccode.tools.base import Tool, ToolContext, run_tool
from iaccode.tools.registry import builtin_tools

if TYPE_CHECKING:
    from iaccode.transcript.recorder import Recorder

_TOOL_ATTRIBUTES = (
    "name",
    "description",
    "kind",
    "input_type",
    "input_schema",
    "read_only",
    "always_asks",
    "machine_dependent",
    "gated",
    "subagents_use",
    "reads_what_it_names",
)
"""The Tool attributes a wrapper takes from the tool it wraps (they are per class)."""


class _Wrapper(Tool):
    """A tool that is another one to the model, the editor and the permissions."""

    def __init__(self, inner: Tool) -> None:
        self.inner = inner

    def definition(self) -> dict[str, Any]:
        return self.inner.definition()

    def title(self, args: Any) -> str:
        return self.inner.title(args)

    def paths(self, args: Any) -> list[str]:
        return self.inner.paths(args)

    def shown_paths(self, args: Any) -> list[str]:
        return self.inner.shown_paths(args)

    def command_line(self, args: Any) -> str | None:
        return self.inner.command_line(args)

    def address(self, args: Any) -> str | None:
        return self.inner.address(args)

    async def preview(self, args: Any, ctx: ToolContext) -> list[ToolCallContent] | None:
        return await self.inner.preview(args, ctx)

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return await self.inner.run(args, ctx)


def _wrap(wrapper: type[_Wrapper], inner: Tool, *args: Any) -> Tool:
    cls = type(
        f"{wrapper.__name__}_{inner.name}",
        (wrapper,),
        {attribute: getattr(inner, attribute) for attribute in _TOOL_ATTRIBUTES},
    )
    tool: Tool = cls(inner, *args)
    return tool


class RecordingTool(_Wrapper):
    """Runs the tool and records each result (what the model was told, failures included)."""

    def __init__(self, inner: Tool, recorder: Recorder) -> None:
        super().__init__(inner)
        self._recorder = recorder

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        result = await run_tool(self.inner, args, ctx)  # a cancelled call records nothing
        self._recorder.tool(ctx.tool_call_id, self.name, result)
        return result


class PlayedTool(_Wrapper):
    """Answers with the recorded result of the call; a call the transcript lacks runs."""

    def __init__(self, inner: Tool, results: Mapping[str, ToolResult]) -> None:
        super().__init__(inner)
        self._results = results

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        recorded = self._results.get(ctx.tool_call_id)
        return recorded if recorded is not None else await self.inner.run(args, ctx)


class ToolTable:
    """Each turn's tools: the built-in ones (``builtin``) and the MCP servers' as they join
    (``external``); as they are, or with the machine- and server-dependent ones playing the
    results recorded in the transcript ``played`` and/or recording into ``recorder``."""

    def __init__(self, recorder: Recorder | None = None, played: Path | None = None) -> None:
        self._recorder = recorder
        self._results: Mapping[str, ToolResult] | None = None
        if played is not None:
            from iaccode.transcript.playback import recorded_tool_results

            self._results = recorded_tool_results(played)

    def builtin(self) -> dict[str, Tool]:
        return {
            name: self._wrapped(tool) if tool.machine_dependent else tool
            for name, tool in builtin_tools().items()
        }

    def external(self, tools: Mapping[str, Tool]) -> dict[str, Tool]:
        """MCP tools: what they answer depends on their server, so each one is wrapped."""
        return {name: self._wrapped(tool) for name, tool in tools.items()}

    def _wrapped(self, tool: Tool) -> Tool:
        if self._results is not None:
            tool = _wrap(PlayedTool, tool, self._results)
        if self._recorder is not None:
            tool = _wrap(RecordingTool, tool, self._recorder)
        return tool
