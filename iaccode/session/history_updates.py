"""A session's history sent back to the editor: the ``session/update``s that show a stored
session again (``session/load``). (Playing a recorded transcript against the agent is
:mod:`iaccode.transcript.replay`.)

The user sees what they saw: their prompts (``/compact``, ``/clear`` and ``/mcp`` too), the
answers and thinking, every tool call in its final state (a sub-agent's under the call that
ran it, right after that call's start, as they came live), and the notices we gave, a
compaction's or a ``/clear``'s where it happened, the ``/mcp`` listing. A tool call a crash
interrupted shows as failed. A command that ran in the editor's terminal shows its output as
text: the terminal is gone by then.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from iaccode.protocol.content import TextContent
from iaccode.protocol.convert import to_wire
from iaccode.protocol.messages import AgentMessageChunk, AgentThoughtChunk
from iaccode.protocol.tool_calls import ContentToolCallContent, ToolCallProgress, ToolCallStart
from iaccode.turn.transcript import INTERRUPTED


def history_updates(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Wire-form ``update`` objects, in the order the user first saw them; then the last plan
    (each plan replaces the one before, so the last is the one the user had)."""
    calls = [
        r for r in records if r.get("type") == "tool_call" and isinstance(r.get("start"), dict)
    ]
    shown_calls = {r["start"].get("toolCallId") for r in calls}
    children = _children(calls)
    nested = {id(child) for family in children.values() for child in family}
    for index, record in enumerate(records):
        kind = record.get("type")
        if kind == "message":
            yield from _message(record, shown_calls, index)
        elif kind == "tool_call" and id(record) not in nested:
            yield from _tool_call(record, children)
        elif kind == "prompt" and isinstance(record.get("prompt"), list):
            for block in record["prompt"]:
                yield {"sessionUpdate": "user_message_chunk", "content": block}
        elif kind == "notice" and isinstance(record.get("text"), str):
            yield to_wire(AgentMessageChunk(TextContent(record["text"])))
        elif kind == "compaction":
            notice = record.get("notice")
            if not isinstance(notice, str):
                following = records[index + 1] if index + 1 < len(records) else {}
                # Older sessions told of a compaction in a notice record right after it.
                notice = None if following.get("type") == "notice" else CONTEXT_REPLACED
            if notice:
                yield to_wire(AgentMessageChunk(TextContent(notice)))

    plans = [
        r["entries"]
        for r in records
        if r.get("type") == "plan" and isinstance(r.get("entries"), list)
    ]
    if plans:
        yield {"sessionUpdate": "plan", "entries": plans[-1]}


CONTEXT_REPLACED = (
    "\n\n[The context was compacted or cleared here: the model sees only a "
    "summary of what came before, or nothing of it.]\n"
)
"""Shown for a compaction record of an older session, which kept no notice of its own."""


def _children(calls: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    """A sub-agent's calls (``_meta.iaccode.parentToolCallId``) by the call that ran them, for
    those whose parent is recorded: a child finishes, and is saved, before its parent."""
    ids = {call["start"].get("toolCallId") for call in calls}
    found: dict[Any, list[dict[str, Any]]] = {}
    for call in calls:
        meta = call["start"].get("_meta")
        parent = (
            (meta.get("iaccode") or {}).get("parentToolCallId")
            if isinstance(meta, dict) and isinstance(meta.get("iaccode"), dict)
            else None
        )
        if parent is not None and parent in ids and parent != call["start"].get("toolCallId"):
            found.setdefault(parent, []).append(call)
    return found


def _tool_call(
    record: dict[str, Any], children: dict[Any, list[dict[str, Any]]], depth: int = 0
) -> Iterator[dict[str, Any]]:
    """A finished call: its start, the calls it ran (a sub-agent's), its end."""
    start = record.get("start")
    if isinstance(start, dict):
        yield start
    # A sub-agent runs no sub-agent: the depth bound only guards against a damaged history.
    if isinstance(start, dict) and depth < 8:
        for child in children.get(start.get("toolCallId"), []):
            yield from _tool_call(child, children, depth + 1)
    if isinstance(record.get("end"), dict):
        yield _without_terminals(record["end"])


def _without_terminals(end: dict[str, Any]) -> dict[str, Any]:
    """A finished call's update with each terminal (a process long gone, which the client
    can no longer show) replaced by the command's output as text."""
    content = end.get("content")
    if not isinstance(content, list) or not any(
        isinstance(c, dict) and c.get("type") == "terminal" for c in content
    ):
        return end
    raw = end.get("rawOutput")
    output = raw.get("output") if isinstance(raw, dict) else None
    text = output if isinstance(output, str) and output else "(no output)"
    status = _exit_line(raw) if isinstance(raw, dict) else None
    if status:
        text = f"{text.rstrip(chr(10))}\n{status}" if text != "(no output)" else status
    shown = to_wire(ContentToolCallContent(TextContent(text)))
    return {
        **end,
        "content": [
            shown if isinstance(c, dict) and c.get("type") == "terminal" else c for c in content
        ],
    }


def _exit_line(raw: dict[str, Any]) -> str | None:
    if raw.get("timed_out") is True:
        return "[timed out]"
    if isinstance(raw.get("signal"), str):
        return f"[killed by {raw['signal']}]"
    code = raw.get("exit_code")
    return f"[exit code {code}]" if isinstance(code, int) and code != 0 else None


def _message(record: dict[str, Any], shown_calls: set[Any], index: int) -> Iterator[dict[str, Any]]:
    message = record.get("message") or {}
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    if message.get("role") == "user":
        prompt = record.get("prompt")
        if isinstance(prompt, list):
            for block in prompt:
                yield {"sessionUpdate": "user_message_chunk", "content": block}
        return
    # The id the chunks carried live; a message saved before ids were kept gets one made of
    # its place in the history, the same at every load.
    saved = record.get("message_id")
    message_id = saved if isinstance(saved, str) and saved else f"msg_record_{index}"
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            yield to_wire(AgentMessageChunk(TextContent(block["text"]), message_id=message_id))
        elif kind == "thinking" and block.get("thinking"):
            yield to_wire(AgentThoughtChunk(TextContent(block["thinking"]), message_id=message_id))
        elif kind == "tool_use" and block.get("id") not in shown_calls:
            # Interrupted before it finished: show it, failed, as the model will see it.
            name = block.get("name") if isinstance(block.get("name"), str) else None
            yield to_wire(
                ToolCallStart(
                    str(block.get("id")),
                    str(block.get("name")),
                    "other",
                    "pending",
                    raw_input=block.get("input"),
                    name=name,
                )
            )
            yield to_wire(
                ToolCallProgress(
                    str(block.get("id")),
                    status="failed",
                    content=[ContentToolCallContent(TextContent(INTERRUPTED))],
                    name=name,
                )
            )
