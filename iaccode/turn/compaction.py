"""Compaction: when the context fills up, the older part of the conversation is summarised by
the model and replaced by the summary; the recent turns stay whole.

A cut is only made where a user turn starts (a user message that is not tool results), so a
tool_use and its tool_result always stay together.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import trio

from iaccode.llm.base import Finished, ModelRequest, Provider, TextDelta
from iaccode.protocol.content import TextContent
from iaccode.protocol.messages import (
    AgentMessageChunk,
    CompactionStatus,
    CompactionUpdate,
    warning_chunk,
)

if TYPE_CHECKING:
    from iaccode.turn.env import EditorAccess

SHOW_TIMEOUT = 2.0
"""How long the last update of a cancelled compaction may wait for the editor."""

KEEP_SHARE = 0.25
"""Share of the context window the recent turns may keep, whole, after a compaction."""

SUMMARY_PROMPT = (
    "Summarise the conversation so far for your own later use: the user's goals and "
    "requests, decisions made, files read or changed (with paths), commands run and their "
    "outcomes, errors met, and what remains to be done. Be specific and complete; this "
    "summary replaces the conversation."
)

SUMMARY_MAX_TOKENS = 4_000


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A rough count (4 characters a token) for choosing a cut; the API's count decides when."""
    return len(json.dumps(messages, ensure_ascii=False)) // 4


def turn_starts(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes where a user turn starts: a user message holding no tool results."""
    return [
        i for i, m in enumerate(messages) if m.get("role") == "user" and not _has_tool_results(m)
    ]


def _has_tool_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def split(
    messages: list[dict[str, Any]], keep_tokens: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """(older, recent): recent is the longest run of whole turns within ``keep_tokens`` (at
    least the last turn). None when there is nothing older to summarise."""
    starts = [i for i in turn_starts(messages) if i > 0]
    if not starts:
        return None
    cut = starts[-1]
    for start in reversed(starts):
        if estimate_tokens(messages[start:]) > keep_tokens:
            break
        cut = start
    return messages[:cut], messages[cut:]


async def summarise(
    provider: Provider, model: str, older: list[dict[str, Any]], api_messages: Any
) -> tuple[str, Finished]:
    """Ask the model for a summary of ``older``. Raises ModelError like any request."""
    request = ModelRequest(
        model=model,
        messages=api_messages(
            [*older, {"role": "user", "content": [{"type": "text", "text": SUMMARY_PROMPT}]}]
        ),
        max_tokens=SUMMARY_MAX_TOKENS,
        thinking="off",
    )
    parts: list[str] = []
    finished: Finished | None = None
    async with provider.stream(request) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, Finished):
                finished = event
    assert finished is not None
    return "".join(parts).strip(), finished


def describe(older: list[dict[str, Any]], recent: list[dict[str, Any]], finished: Finished) -> str:
    """What a compaction did, in the user's words: "Summarised 12 earlier messages (40k
    tokens) into 1.2k tokens; the last 3 turns are kept as they were." The token counts are
    the summary request's (the API's count of what was summarised, and of the summary)."""
    summarised = finished.usage.context_tokens - finished.usage.output_tokens
    kept = len(turn_starts(recent))
    return (
        f"Summarised {_plural(len(older), 'earlier message')} "
        f"({_tokens(summarised or estimate_tokens(older))} tokens) into "
        f"{_tokens(finished.usage.output_tokens)} tokens; "
        + (
            "the last turn is kept as it was."
            if kept == 1
            else f"the last {kept} turns are kept as they were."
        )
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _tokens(count: int) -> str:
    """1234 -> "1.2k", 40000 -> "40k", 950 -> "950"."""
    if count < 1000:
        return str(count)
    thousands = count / 1000
    return f"{thousands:.1f}k".replace(".0k", "k") if thousands < 10 else f"{thousands:.0f}k"


class Shown:
    """How one compaction reaches the user: ``compaction_update``s under one id for a client
    with ``session.compaction`` (unstable schema), else a text message at its end (a failure's
    as a ``⚠`` line, a success's as ``[Context compacted: ...]``) and nothing before."""

    def __init__(self, editor: EditorAccess) -> None:
        self._editor = editor
        self._id = f"compaction_{uuid.uuid4().hex}" if editor.shows_compaction else None

    async def started(self) -> None:
        await self._update("in_progress")

    async def completed(self, text: str, summary: str) -> None:
        if self._id is None:
            await self._editor.send_update(AgentMessageChunk(TextContent(text)))
        else:  # the user can read what the model is left with
            await self._update(
                "completed", summary=[TextContent(f"{text.strip()}\n\n{summary}".strip())]
            )

    async def failed(self, failure: str) -> None:
        """The summary failed; ``failure`` says so and why."""
        if self._id is None:
            await self._editor.send_update(warning_chunk(failure))
        else:
            await self._update("failed", error=failure)

    async def cancelled(self) -> None:
        """The turn was cancelled mid-summary (shielded, bounded: the turn is ending)."""
        with trio.CancelScope(shield=True), trio.move_on_after(SHOW_TIMEOUT):
            await self._update("cancelled")

    async def _update(self, status: CompactionStatus, **fields: Any) -> None:
        if self._id is not None:
            await self._editor.send_update(CompactionUpdate(self._id, status, **fields))


def compacted(summary: str, recent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The new history: the summary as context, then the recent turns unchanged."""
    return [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": (
                        "<summary_of_earlier_conversation>\n"
                        + summary
                        + "\n</summary_of_earlier_conversation>"
                    ),
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": (
                        "Understood. I have the summary of our earlier conversation and will "
                        "continue from it."
                    ),
                }
            ],
        },
        *recent,
    ]
