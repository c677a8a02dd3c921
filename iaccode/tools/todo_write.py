"""todo_write: the model's plan for multi-step work, shown to the user as an ACP ``plan``.

Each call gives the whole list; the editor replaces its view of the plan with it. It changes
nothing on disk, so it never asks (kind ``think``). The session keeps the last plan with the
history and shows it again on ``session/load``.
"""

from __future__ import annotations

from typing import Literal

from attrs import frozen

from iaccode.protocol.messages import PlanEntry
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext

MAX_TODOS = 100


@frozen
class Todo:
    content: str
    status: Literal["pending", "in_progress", "completed"]
    priority: Literal["high", "medium", "low"] = "medium"


@frozen
class TodoWriteInput:
    todos: list[Todo]


class TodoWrite(Tool):
    name = "todo_write"
    kind = "think"
    read_only = True
    subagents_use = False
    reads_what_it_names = False  # a plan's item may name a file it does not read
    input_type = TodoWriteInput
    description = (
        "Record your plan for multi-step work and show it to the user. Give the whole list "
        "every time (it replaces the previous one): each item's content, its status (pending, "
        "in_progress, completed) and optionally its priority (high, medium, low; default "
        "medium). Keep exactly one item in_progress while you work and mark items completed "
        "as soon as they are done. Skip it for a single simple step."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "maxItems": MAX_TODOS,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {
                            "type": "string",
                            "minLength": 1,
                            "description": "What the step does, in a few words.",
                        },
                        "status": {
                            "type": "string",
                            "enum": ["pending", "in_progress", "completed"],
                        },
                        "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                    },
                    "required": ["content", "status"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["todos"],
        "additionalProperties": False,
    }

    def title(self, args: TodoWriteInput) -> str:
        done = sum(todo.status == "completed" for todo in args.todos)
        return f"Update plan ({done}/{len(args.todos)} done)"

    async def run(self, args: TodoWriteInput, ctx: ToolContext) -> ToolResult:
        if ctx.show_plan is None:
            raise ToolFailure("There is no plan to update here (a sub-agent has none).")
        if len(args.todos) > MAX_TODOS:
            raise ToolFailure(f"A plan holds at most {MAX_TODOS} items; merge some.")
        empty = [i for i, todo in enumerate(args.todos) if not todo.content.strip()]
        if empty:
            raise ToolFailure(f"Item {empty[0]} has no content; every item needs one.")
        entries = [
            PlanEntry(todo.content.strip(), todo.priority, todo.status) for todo in args.todos
        ]
        await ctx.show_plan(entries)
        counts = {
            status: sum(t.status == status for t in args.todos)
            for status in ("completed", "in_progress", "pending")
        }
        summary = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items())
        return ToolResult(
            f"Plan recorded and shown to the user ({summary}).",
            raw_output={"todos": len(args.todos), **counts},
        )
