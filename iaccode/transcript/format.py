"""The transcript file: JSON lines, a header first, then records in the order things happened.

    {"type": "header", "format": "1.0", "iaccode": "0.1.0", "protocolVersion": 1,
     "model": "...", "provider": "anthropic", "recordedAt": "..."}
    {"type": "workspace", "t": 0.01, "cwd": "/abs/project", "files": {"main.tf": "..."},
     "home": {"sessions/sess_.../history.jsonl": "..."}}
    {"type": "wire", "t": 0.02, "from": "client" | "agent", "message": {...}}  (or "raw": "...")
    {"type": "model", "t": 0.5, "request": {...}, "events": [...], "error": null,
     "cancelled": false}
    {"type": "tool", "t": 0.7, "toolCallId": "...", "name": "bash", "result": {...}}

``t`` is seconds since the recording started. ``format`` is MAJOR.MINOR: readers accept any
minor version of their major and refuse a newer major with a clear message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attrs import frozen

from iaccode.private_files import open_private, private_dir
from iaccode.redaction import Redactor, current

FORMAT = "1.0"
MAJOR = 1


class TranscriptError(Exception):
    """A transcript we cannot read; the message says why."""


@frozen
class RecordedTranscript:
    """A transcript file as read (``--record`` wrote it): its header and its records. (A
    session's conversation is :class:`iaccode.turn.transcript.Transcript`.)"""

    header: dict[str, Any]
    records: list[dict[str, Any]]

    def of_type(self, kind: str) -> Iterator[dict[str, Any]]:
        return (r for r in self.records if r.get("type") == kind)


def read_transcript(path: Path) -> RecordedTranscript:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TranscriptError(f"cannot read {path}: {exc}") from exc
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise TranscriptError(f"{path}:{number}: not JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise TranscriptError(f"{path}:{number}: a record must be an object")
        records.append(record)
    if not records or records[0].get("type") != "header":
        raise TranscriptError(f"{path}: not a transcript (no header line)")
    check_version(records[0], path)
    return RecordedTranscript(records[0], records[1:])


def is_transcript(path: Path) -> bool:
    """Whether the file starts like a transcript (used to accept one as a model script)."""
    try:
        with path.open(encoding="utf-8") as file:
            first = json.loads(file.readline() or "null")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and first.get("type") == "header"


def check_version(header: dict[str, Any], path: Path) -> None:
    version = str(header.get("format", ""))
    try:
        major = int(version.split(".")[0])
    except ValueError:
        raise TranscriptError(f"{path}: unreadable format version {version!r}") from None
    if major > MAJOR:
        raise TranscriptError(
            f"{path} was written in transcript format {version}, newer than this iaccode "
            f"reads ({FORMAT}); upgrade iaccode to replay it"
        )


class TranscriptWriter:
    """Appends records as JSON lines, flushed as written, with every secret value we hold
    replaced by ``[secret NAME]`` (:mod:`iaccode.redaction`; ``redactor``: another set, or
    none). The file is readable by its owner only (0600), its new folders 0700."""

    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        private_dir(path.parent)
        fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        self._redact = redactor if redactor is not None else current()

    def write(self, record: dict[str, Any]) -> None:
        self.write_raw(json.dumps(record, ensure_ascii=False, separators=(",", ":")))

    def write_raw(self, line: str) -> None:
        """One record already encoded as a JSON object on one line."""
        line = self._redact(line)
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
