"""A stored session as the ``session/update``s that show it again (``session/load``).

The user sees what they saw: their prompts, the answers and thinking, every tool call in its
final state, and the notices we gave. A tool call a crash interrupted shows as failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from iaccode.protocol.content import TextContent
from iaccode.protocol.convert import to_wire
from iaccode.protocol.messages import AgentMessageChunk, AgentThoughtChunk
from iaccode.protocol.tool_calls import ContentToolCallContent, ToolCallProgress, ToolCallStart
from iaccode.turn.transcript import INTERRUPTED


def replay_updates(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Wire-form ``update`` objects, in the order the user first saw them; then the last plan
    (each plan replaces the one before, so the last is the one the user had)."""
    shown_calls = {r["start"].get("toolCallId") for r in records
                   if r.get("type") == "tool_call" and isinstance(r.get("start"), dict)}
    for record in records:
        kind = record.get("type")
        if kind == "message":
            yield from _message(record, shown_calls)
        elif kind == "tool_call":
            if isinstance(record.get("start"), dict):
                yield record["start"]
            if isinstance(record.get("end"), dict):
                yield record["end"]
        elif kind == "notice" and isinstance(record.get("text"), str):
            yield to_wire(AgentMessageChunk(TextContent(record["text"])))
    plans = [r["entries"] for r in records
             if r.get("type") == "plan" and isinstance(r.get("entries"), list)]
    if plans:
        yield {"sessionUpdate": "plan", "entries": plans[-1]}


def _message(record: dict[str, Any], shown_calls: set[Any]) -> Iterator[dict[str, Any]]:
    message = record.get("message") or {}
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    if message.get("role") == "user":
        prompt = record.get("prompt")
        if isinstance(prompt, list):
            for block in prompt:
                yield {"sessionUpdate": "user_message_chunk", "content": block}
        return
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            yield to_wire(AgentMessageChunk(TextContent(block["text"])))
        elif kind == "thinking" and block.get("thinking"):
            yield to_wire(AgentThoughtChunk(TextContent(block["thinking"])))
        elif kind == "tool_use" and block.get("id") not in shown_calls:
            # Interrupted before it finished: show it, failed, as the model will see it.
            yield to_wire(ToolCallStart(str(block.get("id")), str(block.get("name")), "other",
                                        "pending", raw_input=block.get("input")))
            yield to_wire(ToolCallProgress(
                str(block.get("id")), status="failed",
                content=[ContentToolCallContent(TextContent(INTERRUPTED))]))
