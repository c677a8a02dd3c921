"""Raw Anthropic stream events (dicts) -> provider events, assembling the assistant message.

Both the Anthropic provider (events parsed from the SSE stream) and the offline provider
(events read from a script) feed this, so they behave the same by construction.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from iaccode.checks import deeper_than
from iaccode.llm.base import (
    Finished,
    ModelError,
    ModelEvent,
    RawTap,
    TextDelta,
    ThinkingDelta,
    TokenUsage,
)

log = logging.getLogger(__name__)


def _usage(raw: Any, previous: TokenUsage) -> TokenUsage:
    """Merge a usage object; fields the event leaves out keep their earlier value."""
    if not isinstance(raw, dict):
        return previous

    def pick(key: str, old: int) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else old

    return TokenUsage(
        pick("input_tokens", previous.input_tokens),
        pick("output_tokens", previous.output_tokens),
        pick("cache_read_input_tokens", previous.cache_read_input_tokens),
        pick("cache_creation_input_tokens", previous.cache_creation_input_tokens),
        # The API's breakdown of output tokens: ``output_tokens_details.thinking_tokens``.
        _pick_in(raw.get("output_tokens_details"), "thinking_tokens", previous.thought_tokens),
    )


def _pick_in(raw: Any, key: str, old: int) -> int:
    value = raw.get(key) if isinstance(raw, dict) else None
    return value if isinstance(value, int) else old


MAX_INPUT_DEPTH = 64
"""Tool inputs nested deeper than this are refused like invalid JSON (no tool takes more than a
few levels, and deeper ones would exhaust the stack wherever they are copied or encoded)."""


def _string(part: dict[str, Any], key: str) -> str:
    """``part[key]`` when it is text ("" when absent). Anything else (a null, a number) is an
    event we cannot read: a TypeError, which the provider turns into a readable ModelError,
    rather than a non-string passed on to the editor or into the history."""
    value = part.get(key, "")
    if not isinstance(value, str):
        raise TypeError(f"{part.get('type')!r} has a {key} that is not text: {value!r:.40}")
    return value


class StreamAssembler:
    """Feed raw events in order; get back the events the turn cares about."""

    def __init__(self, tap: RawTap | None = None) -> None:
        self._tap = tap
        self._blocks: dict[int, dict[str, Any]] = {}
        self._partial_json: dict[int, list[str]] = {}
        self._pieces: dict[tuple[int, str], list[str]] = {}
        """(index, "text" | "thinking") -> the block's text so far, in pieces (see _append)."""
        self._stop_reason: str | None = None
        self._usage = TokenUsage()
        self.finished = False
        self.invalid_tool_inputs: dict[str, str] = {}
        """Tool-use id -> the input text that was not valid JSON."""

    def feed(self, event: dict[str, Any]) -> ModelEvent | None:
        if self._tap is not None:
            self._tap(event)
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event.get("index", 0), event.get("delta") or {})
        if kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            index = event.get("index", 0)
            self._blocks[index] = block
            self._pieces.pop((index, "text"), None)
            self._pieces.pop((index, "thinking"), None)
            if block.get("type") == "tool_use":
                self._partial_json[index] = []
            text = _string(block, "text") or _string(block, "thinking")
            if text:  # the API starts blocks empty, but a start may carry text
                return TextDelta(text) if block.get("type") == "text" else ThinkingDelta(text)
        elif kind == "content_block_stop":
            self._finish_block(event.get("index", 0))
        elif kind == "message_start":
            self._usage = _usage((event.get("message") or {}).get("usage"), self._usage)
        elif kind == "message_delta":
            stop = (event.get("delta") or {}).get("stop_reason")
            if isinstance(stop, str):
                self._stop_reason = stop
            self._usage = _usage(event.get("usage"), self._usage)
        elif kind == "message_stop":
            self.finished = True
            return Finished(
                self._stop_reason or "end_turn",
                self.content(),
                self._usage,
                dict(self.invalid_tool_inputs),
            )
        elif kind == "error":
            error = event.get("error") or {}
            raise ModelError(
                f"The model API reported an error: "
                f"{error.get('type', 'error')}: {error.get('message', '')}".rstrip()
            )
        return None

    def _delta(self, index: int, delta: dict[str, Any]) -> ModelEvent | None:
        block = self._blocks.get(index)
        if block is None:  # (not setdefault: it would build a dict for every delta)
            block = self._blocks[index] = {"type": "text", "text": ""}
        kind = delta.get("type")
        if kind == "text_delta":
            text = _string(delta, "text")
            self._append(index, block, "text", text)
            return TextDelta(text)
        if kind == "thinking_delta":
            text = _string(delta, "thinking")
            self._append(index, block, "thinking", text)
            return ThinkingDelta(text)
        if kind == "signature_delta":
            block["signature"] = block.get("signature", "") + _string(delta, "signature")
        elif kind == "input_json_delta":
            self._partial_json.setdefault(index, []).append(_string(delta, "partial_json"))
        return None

    def _append(self, index: int, block: dict[str, Any], key: str, text: str) -> None:
        """Collect a delta's text; ``content`` joins the pieces into the block. (Adding the
        strings up one by one copies the whole text each time: quadratic in a long answer.)"""
        pieces = self._pieces.get((index, key))
        if pieces is None:
            pieces = self._pieces[index, key] = [block.get(key, "")]
        pieces.append(text)

    def _finish_block(self, index: int) -> None:
        block = self._blocks.get(index)
        if block is None or block.get("type") != "tool_use":
            return
        raw = "".join(self._partial_json.pop(index, []))
        try:
            block["input"] = json.loads(raw) if raw else {}
            if not isinstance(block["input"], dict):  # "[1]" or "5": valid JSON, no input
                raise ValueError("not an object")
            if deeper_than(block["input"], MAX_INPUT_DEPTH):
                raise ValueError("nested too deeply")
        except (ValueError, RecursionError):
            # Kept as the model sent it; the tool loop answers it with an error, never runs it.
            block["input"] = {}
            self.invalid_tool_inputs[str(block.get("id"))] = raw

    def content(self) -> list[dict[str, Any]]:
        """The assistant content so far, fit to keep in the history.

        Empty text and thinking blocks are rejected by the API and left out. Thinking without
        a signature (an OpenAI-compatible model's reasoning, or a hostile stream) is kept for
        replay; the Anthropic provider leaves it out of its requests.
        """
        for (index, key), pieces in self._pieces.items():
            joined = "".join(pieces)
            pieces[:] = [joined]
            self._blocks[index][key] = joined
        blocks = []
        tool_ids: set[str] = set()
        for _, block in sorted(self._blocks.items()):
            kind = block.get("type")
            if kind == "thinking" and not block.get("thinking") and not block.get("signature"):
                continue
            if kind == "text" and not block.get("text"):
                continue
            if kind == "tool_use" and "input" not in block:
                continue  # its input never finished streaming
            if kind == "tool_use":
                tool_id = block.get("id")
                if not isinstance(tool_id, str) or not tool_id or tool_id in tool_ids:
                    continue  # no id, or one already used: it could never be answered
                tool_ids.add(tool_id)
            blocks.append(block)
        return blocks

    @property
    def usage(self) -> TokenUsage:
        return self._usage
