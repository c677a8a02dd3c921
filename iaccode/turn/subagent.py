"""The ``agent`` tool: a sub-agent with its own context, inside the parent's turn.

It gets a fresh history with the task as its only message and the parent's read-only tools,
the MCP servers' among them (it can look, not touch). Its tool calls are shown to the editor as
children of the parent call (``_meta.iaccode.parentToolCallId``); its text is not streamed to
the user, its final answer is the tool result. It runs in the parent turn's cancel scope, so a
cancel stops it too.
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import frozen

from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent, ToolCallContent, ToolKind
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext, truncate
from iaccode.turn.env import TurnEnv
from iaccode.turn.transcript import SubAgentTranscript, Transcript


@frozen
class AgentInput:
    prompt: str
    description: str | None = None


class SubAgent(Tool):
    name: ClassVar[str] = "agent"
    description: ClassVar[str] = (
        "Start a sub-agent for a self-contained research task: it has its own context and the "
        "read-only tools (read_file, list_files, glob, grep, web_fetch, and the MCP servers' "
        "read-only ones), and returns one final answer. Give it a complete, specific task; it "
        "cannot see this conversation."
    )
    kind: ClassVar[ToolKind] = "execute"
    input_type: ClassVar[type] = AgentInput
    read_only: ClassVar[bool] = False
    subagents_use: ClassVar[bool] = False
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The complete task for the sub-agent."},
            "description": {
                "type": "string",
                "description": "A 3-5 word summary shown to the user.",
            },
        },
        "required": ["prompt"],
        "additionalProperties": False,
    }

    def __init__(
        self, parent_tools: dict[str, Tool], parent_transcript: Transcript | None = None
    ) -> None:
        """``parent_tools``: the parent turn's table, read when a sub-agent starts (the MCP
        servers' tools join it once they are ready, after the turn was built);
        ``parent_transcript``: where its tool calls are saved (for a replay)."""
        self._parent_tools = parent_tools
        self._parent_transcript = parent_transcript
        self._parent: TurnEnv | None = None

    def tools(self) -> dict[str, Tool]:
        """What a sub-agent may call: the parent's read-only tools but the plan (it is the
        parent's) and itself (``Tool.subagents_use``)."""
        return {
            name: tool
            for name, tool in self._parent_tools.items()
            if tool.read_only and tool.subagents_use
        }

    def bind(self, parent: TurnEnv) -> None:
        """Attach the parent turn's environment (built after its tool set, which holds us)."""
        self._parent = parent

    def title(self, args: AgentInput) -> str:
        return f"Sub-agent: {args.description or args.prompt[:60]}"

    async def preview(self, args: AgentInput, ctx: ToolContext) -> list[ToolCallContent]:
        """Its task, for the question (the title has the first words only)."""
        return [
            ContentToolCallContent(
                TextContent(
                    truncate(f"The sub-agent's task:\n\n{args.prompt}", ctx.limits.output_chars)
                )
            )
        ]

    async def run(self, args: AgentInput, ctx: ToolContext) -> ToolResult:
        from iaccode.turn.turn import Turn  # the loop runs tools, tools run the loop

        if self._parent is None:
            raise ToolFailure("The sub-agent is not attached to a turn.")
        env = self._parent.nested(tools=self.tools(), parent_tool_call_id=ctx.tool_call_id)
        transcript = (
            SubAgentTranscript(self._parent_transcript)
            if self._parent_transcript is not None
            else Transcript()
        )
        turn = Turn(env, transcript, stream_text=False)  # its own context, kept in memory
        stop_reason = await turn.run([{"type": "text", "text": args.prompt}])
        usage = {"input_tokens": turn.usage.input_tokens, "output_tokens": turn.usage.output_tokens}
        answer = turn.final_text.strip()
        if not answer:
            return ToolResult(
                f"The sub-agent ended ({stop_reason}) without an answer.",
                is_error=True,
                raw_output={"stop_reason": stop_reason, **usage},
            )
        return ToolResult(
            answer, raw_output={"stop_reason": stop_reason, "answer": answer, **usage}
        )
