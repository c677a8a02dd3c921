"""Chat Completions stream chunks -> the Anthropic stream events our assembler reads.

The OpenAI-compatible provider translates every chunk into Anthropic Messages events and feeds
them to the same :class:`~iaccode.llm.assemble.StreamAssembler` as the Anthropic and the offline
providers, so all three produce the same provider events by construction (and invalid tool
JSON, over-deep input and duplicate ids are handled in one place). A transcript records the
translated events, so a recorded OpenAI session replays on the offline provider unchanged.

- ``delta.content`` -> a text block; ``delta.reasoning_content`` (DeepSeek, Qwen) or
  ``delta.reasoning`` (OpenRouter, Ollama) -> a thinking block with no signature: kept in the
  history (``session/load`` replays it), sent back only where an API wants it (DeepSeek);
- ``delta.tool_calls`` are gathered by ``index`` (several in parallel, arguments in pieces)
  and become ``tool_use`` blocks when the answer ends;
- ``finish_reason``: stop -> end_turn, length -> max_tokens, tool_calls -> tool_use,
  content_filter -> refusal;
- ``usage`` (the last chunk, with ``stream_options.include_usage``): prompt tokens less the
  cached ones -> input, ``prompt_tokens_details.cached_tokens`` (DeepSeek:
  ``prompt_cache_hit_tokens``) -> cache read, completion tokens -> output,
  ``completion_tokens_details.reasoning_tokens`` -> thought tokens (as the Messages API's
  ``output_tokens_details.thinking_tokens``);
- a chunk ``{"error": {...}}`` -> an ``error`` event (a ModelError with the API's message).
"""

from __future__ import annotations

import uuid
from typing import Any

from iaccode.checks import is_int

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def _text(value: Any, what: str) -> str:
    """Text of a delta field ("" for null/absent; anything else is an unreadable event)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{what} is not text: {value!r:.40}")
    return value


def _count(value: Any) -> int:
    return value if is_int(value) else 0


def usage_fields(usage: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions usage object in the Messages API's terms."""
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    cached = _count(prompt.get("cached_tokens")) or _count(usage.get("prompt_cache_hit_tokens"))
    return {
        "input_tokens": max(0, _count(usage.get("prompt_tokens")) - cached),
        "output_tokens": _count(usage.get("completion_tokens")),
        "cache_read_input_tokens": cached,
        "output_tokens_details": {"thinking_tokens": _count(completion.get("reasoning_tokens"))},
    }


class ChunkTranslator:
    """Feed chunks (dicts) in order; each call returns the Anthropic events they make."""

    def __init__(self) -> None:
        self._started = False
        self._blocks = 0
        """Anthropic blocks started so far (the next one's index)."""
        self._open: tuple[str, int] | None = None
        """The text or thinking block being written: (kind, index)."""
        self._calls: dict[int, dict[str, Any]] = {}
        """Tool-call index -> {"id", "name", "arguments": [pieces]}."""
        self.finish_reason: str | None = None
        self._usage: dict[str, Any] = {}

    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if not self._started:
            self._started = True
            events.append(
                {
                    "type": "message_start",
                    "message": {
                        "id": chunk.get("id"),
                        "type": "message",
                        "role": "assistant",
                        "model": chunk.get("model"),
                        "content": [],
                        "usage": {},
                    },
                }
            )
        error = chunk.get("error")
        if error is not None:
            error = error if isinstance(error, dict) else {"message": str(error)}
            events.append(
                {
                    "type": "error",
                    "error": {
                        "type": str(error.get("type") or error.get("code") or "error"),
                        "message": str(error.get("message", "")),
                    },
                }
            )
            return events
        if isinstance(chunk.get("usage"), dict):
            self._usage = usage_fields(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue  # we ask for one choice; a server sending more is ignored for them
            delta = choice.get("delta") or {}
            reasoning = _text(delta.get("reasoning_content"), "reasoning_content") or _text(
                delta.get("reasoning"), "reasoning"
            )
            if reasoning:
                self._write("thinking", reasoning, events)
            content = _text(delta.get("content"), "content")
            if content:
                self._write("text", content, events)
            for call in delta.get("tool_calls") or []:
                self._gather(call)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return events

    def _write(self, kind: str, text: str, events: list[dict[str, Any]]) -> None:
        if self._open is None or self._open[0] != kind:
            self._close(events)
            self._open = (kind, self._blocks)
            self._blocks += 1
            block = (
                {"type": "text", "text": ""}
                if kind == "text"
                else {"type": "thinking", "thinking": ""}
            )
            events.append(
                {"type": "content_block_start", "index": self._open[1], "content_block": block}
            )
        delta = (
            {"type": "text_delta", "text": text}
            if kind == "text"
            else {"type": "thinking_delta", "thinking": text}
        )
        events.append({"type": "content_block_delta", "index": self._open[1], "delta": delta})

    def _close(self, events: list[dict[str, Any]]) -> None:
        if self._open is not None:
            events.append({"type": "content_block_stop", "index": self._open[1]})
            self._open = None

    def _gather(self, call: dict[str, Any]) -> None:
        index = call.get("index", len(self._calls))
        if not isinstance(index, int):
            raise TypeError(f"a tool call's index is not a number: {index!r:.40}")
        gathered = self._calls.setdefault(index, {"id": "", "name": "", "arguments": []})
        function = call.get("function") or {}
        # The id and name come whole in the call's first piece; some servers repeat them.
        gathered["id"] = gathered["id"] or _text(call.get("id"), "a tool call's id")
        gathered["name"] = gathered["name"] or _text(function.get("name"), "a tool's name")
        gathered["arguments"].append(_text(function.get("arguments"), "a tool's arguments"))

    def finish(self) -> list[dict[str, Any]]:
        """The events that end the message: the tool uses, the stop reason and usage."""
        events: list[dict[str, Any]] = []
        self._close(events)
        for _, call in sorted(self._calls.items()):
            index = self._blocks
            self._blocks += 1
            # A server that sends no id (some local ones): one we make, so it can be answered.
            call_id = call["id"] or f"call_{uuid.uuid4().hex[:24]}"
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": call_id,
                        "name": call["name"],
                        "input": {},
                    },
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": "".join(call["arguments"]),
                    },
                }
            )
            events.append({"type": "content_block_stop", "index": index})
        stop = STOP_REASONS.get(self.finish_reason or "stop", "end_turn")
        if self._calls and stop == "end_turn":
            stop = "tool_use"  # some servers say "stop" after tool calls
        events.append(
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": self._usage}
        )
        events.append({"type": "message_stop"})
        return events
