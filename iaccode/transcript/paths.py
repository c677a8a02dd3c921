"""The recorded machine's paths, mapped onto a replay's scratch folders, and back.

A real model names files by absolute path, so a recorded session is full of the recorded
project folder, data dir and home: in the model's tool inputs, in recorded tool results, in the
client's messages. A replay maps each of them to its scratch counterpart everywhere it feeds
the agent, and maps the agent's messages back before comparing them with the recording.

What the replayed agent would be told to touch is checked after mapping (:func:`check_inside`):
a path outside the scratch folders (the recorded session read ``/etc/hosts``, or a hostile
transcript names ``/home/you/.ssh``) is refused, never followed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

from iaccode.transcript.format import TranscriptError


class PathMap:
    """Replace whole paths (not ``/tmp/a`` inside ``/tmp/ab``) in every string of a value."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.pairs = sorted(
            (
                (old.rstrip("/") or old, new.rstrip("/") or new)
                for old, new in pairs
                if old and new and old != new
            ),
            key=lambda pair: len(pair[0]),
            reverse=True,
        )
        self._to = dict(self.pairs)
        self._pattern = (
            re.compile("(?:" + "|".join(re.escape(old) for old, _ in self.pairs) + r")(?![\w.-])")
            if self.pairs
            else None
        )

    def reversed(self) -> PathMap:
        return PathMap((new, old) for old, new in self.pairs)

    def text(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda match: self._to[match.group(0)], text)

    def __call__(self, value: Any) -> Any:
        """``value`` (JSON data) with every string mapped; keys too (path-keyed snapshots)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, dict):
            return {self.text(key): self(item) for key, item in value.items()}
        return value


def map_model_events(events: list[dict[str, Any]], paths: PathMap) -> list[dict[str, Any]]:
    """Recorded API events with their paths mapped. A tool input streams as JSON in pieces
    that may split a path, so each tool input is joined into its first delta before mapping
    (the agent only uses it whole); text and thinking are mapped piece by piece, as the
    replay's comparison maps them back."""
    joined: dict[int, dict[str, Any]] = {}
    mapped: list[dict[str, Any]] = []
    for event in events:
        delta = event.get("delta") if event.get("type") == "content_block_delta" else None
        if (
            isinstance(delta, dict)
            and delta.get("type") == "input_json_delta"
            and isinstance(delta.get("partial_json"), str)
        ):
            index = event.get("index")
            first = joined.get(index) if isinstance(index, int) else None
            if first is not None:
                first["delta"]["partial_json"] += delta["partial_json"]
                continue
            event = {**event, "delta": dict(delta)}
            if isinstance(index, int):
                joined[index] = event
        mapped.append(event)
    whole = {id(event) for event in joined.values()}
    for event in joined.values():
        event["delta"]["partial_json"] = paths.text(event["delta"]["partial_json"])
    return [event if id(event) in whole else paths(event) for event in mapped]


def tool_inputs(events: list[dict[str, Any]]) -> Iterable[tuple[str, str, Any]]:
    """(call id, tool name, input) of each tool call the events ask for, when readable."""
    starts: dict[int, dict[str, Any]] = {}
    parts: dict[int, list[str]] = {}
    for event in events:
        index = event.get("index")
        if not isinstance(index, int):
            continue
        block = event.get("content_block")
        if (
            event.get("type") == "content_block_start"
            and isinstance(block, dict)
            and block.get("type") == "tool_use"
        ):
            starts[index] = block
            parts[index] = []
        delta = event.get("delta")
        if (
            index in parts
            and isinstance(delta, dict)
            and isinstance(delta.get("partial_json"), str)
        ):
            parts[index].append(delta["partial_json"])
    for index, block in starts.items():
        text = "".join(parts[index])
        try:
            value = json.loads(text) if text.strip() else block.get("input")
        except ValueError:
            continue  # the agent refuses it without running anything
        yield str(block.get("id")), str(block.get("name")), value


def check_inside(where: str, raw: str, cwd: str, roots: list[str], home: str) -> None:
    """Refuse (TranscriptError, exit 2) a path that would take the replay outside ``roots``.

    ``raw`` is resolved as the agent would (relative to ``cwd``; ``~`` is the scratch home),
    without following symlinks: the scratch folders hold none the transcript did not make.
    """
    expanded = home + raw[1:] if raw == "~" or raw.startswith("~/") else raw
    path = os.path.normpath(os.path.join(cwd, expanded))
    if any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots):
        return
    raise TranscriptError(
        f"{where} names {raw!r}, which is outside the recorded project folder and data dir; "
        "a replay only works in its scratch copies of those, so it is refused"
    )
