"""A transcript as an offline model and as recorded tool results (what a replay runs on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iaccode.tool_result import ToolResult
from iaccode.transcript.format import RecordedTranscript, read_transcript


def model_exchanges(
    transcript: RecordedTranscript, *, stream_seconds: float = 0.0
) -> list[dict[str, Any]]:
    """The recorded model answers as a model script, in order.

    ``stream_seconds`` spreads each answer's events over that long (the demo's pacing);
    0 plays them at once.
    """
    exchanges: list[dict[str, Any]] = []
    for record in transcript.of_type("model"):
        events = list(record.get("events") or [])
        if record.get("error"):
            exchanges.append({"model_error": str(record["error"])})
            continue
        exchange: dict[str, Any] = {"events": events}
        if stream_seconds and events:
            exchange["delay"] = stream_seconds / len(events)
        if record.get("cancelled"):
            exchange["then_hang"] = True  # the user cancelled here: wait for the same cancel
        exchanges.append(exchange)
    return exchanges


def recorded_tool_results(path: Path) -> dict[str, ToolResult]:
    """Tool-call id -> the result recorded for a machine- or server-dependent tool."""
    from iaccode.protocol.convert import converter
    from iaccode.protocol.tool_calls import ToolCallContent

    results: dict[str, ToolResult] = {}
    for record in read_transcript(path).of_type("tool"):
        result = record.get("result") or {}
        content = result.get("content")
        results[str(record.get("toolCallId"))] = ToolResult(
            text=str(result.get("text", "")),
            is_error=bool(result.get("is_error")),
            raw_output=result.get("raw_output"),
            content=(
                converter.structure(content, list[ToolCallContent])
                if isinstance(content, list)
                else None
            ),
            model_content=(
                result["model_content"] if isinstance(result.get("model_content"), list) else None
            ),
        )
    return results
