"""Recording a live session: what ``iaccode acp --record PATH`` writes.

Every JSON-RPC message in both directions, every model exchange (the request, the raw events
received, or the error), the results of tools whose output depends on the machine, and the
workspace as it was when the first session opened, so a replay can rebuild it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

import iaccode
from iaccode.llm.base import ModelError, ModelEvent, ModelRequest, Provider, RawTap
from iaccode.protocol.convert import to_wire
from iaccode.tool_result import ToolResult
from iaccode.transcript.format import FORMAT, TranscriptWriter

log = logging.getLogger(__name__)

SNAPSHOT_MAX_BYTES = 2 * 1024 * 1024
"""Most bytes of workspace files kept in a transcript; larger workspaces are cut (logged)."""

SNAPSHOT_SKIP = {".git", "node_modules", ".venv", "__pycache__", ".terraform"}


class Recorder:
    def __init__(self, path: Path, *, model: str, home: Path, provider: str = "anthropic") -> None:
        self._writer = TranscriptWriter(path)
        self._start = time.monotonic()
        self._home = home
        self._snapshotted = False
        self._writer.write(
            {
                "type": "header",
                "format": FORMAT,
                "iaccode": iaccode.__version__,
                "protocolVersion": 1,
                "model": model,
                "provider": provider,
                "recordedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )

    def _t(self) -> float:
        return round(time.monotonic() - self._start, 4)

    def connection_tap(self, direction: str, line: bytes, is_json: bool) -> None:
        """For ``Connection(tap=...)``: "in" is the client speaking, "out" the agent.

        A JSON line goes in as it is (no second encoding: recording stays cheap while
        streaming); anything else is kept as text under ``raw``.
        """
        sender = "client" if direction == "in" else "agent"
        if is_json:
            self._writer.write_raw(
                f'{{"type":"wire","t":{self._t()},"from":"{sender}",'
                f'"message":{line.decode("utf-8", "replace")}}}'
            )
        else:
            self._writer.write(
                {
                    "type": "wire",
                    "t": self._t(),
                    "from": sender,
                    "raw": line.decode("utf-8", "replace"),
                }
            )

    def workspace(self, cwd: Path) -> None:
        """The project and the session store as they are now (once, at the first session)."""
        if self._snapshotted:
            return
        self._snapshotted = True
        # The data dir and the user's home too: a replay maps every recorded path to its own.
        self._writer.write(
            {
                "type": "workspace",
                "t": self._t(),
                "cwd": str(cwd),
                "dataDir": str(self._home),
                "userHome": os.path.expanduser("~"),
                "files": _snapshot(cwd),
                "home": _snapshot(self._home / "sessions", prefix="sessions/"),
            }
        )

    def tool(self, call_id: str, name: str, result: ToolResult) -> None:
        """A machine- or server-dependent tool's result (``RecordingTool``), for replays to
        play; ``model_content`` (an MCP tool's images) only when there is one."""
        recorded = {
            "text": result.text,
            "is_error": result.is_error,
            "raw_output": result.raw_output,
            "content": to_wire(result.content),
        }
        if result.model_content is not None:
            recorded["model_content"] = result.model_content
        self._writer.write(
            {
                "type": "tool",
                "t": self._t(),
                "toolCallId": call_id,
                "name": name,
                "result": recorded,
            }
        )

    def model(
        self,
        request: ModelRequest,
        events: list[dict[str, Any]],
        error: str | None,
        cancelled: bool,
    ) -> None:
        self._writer.write(
            {
                "type": "model",
                "t": self._t(),
                "request": to_wire(request),
                "events": events,
                "error": error,
                "cancelled": cancelled,
            }
        )

    def close(self) -> None:
        self._writer.close()


def _snapshot(root: Path, prefix: str = "") -> dict[str, str]:
    files: dict[str, str] = {}
    total = 0
    if not root.is_dir():
        return files
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SNAPSHOT_SKIP)
        for name in sorted(names):
            path = Path(folder) / name
            if not path.is_file() or path.is_symlink():
                continue
            try:
                data = path.read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # binary or unreadable: a replay does without it
            total += len(data)
            if total > SNAPSHOT_MAX_BYTES:
                log.warning("workspace snapshot cut at %d bytes", SNAPSHOT_MAX_BYTES)
                return files
            files[prefix + str(path.relative_to(root))] = text
    return files


class RecordingProvider:
    """Wraps a provider and records each exchange: request, raw events, error or cancel."""

    def __init__(self, inner: Provider, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def check_credentials(self) -> None:
        self._inner.check_credentials()

    def __getattr__(self, name: str) -> Any:  # preload and other optional extras
        return getattr(self._inner, name)

    @asynccontextmanager
    async def stream(
        self, request: ModelRequest, tap: RawTap | None = None
    ) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        events: list[dict[str, Any]] = []

        def record(event: dict[str, Any]) -> None:
            events.append(event)
            if tap is not None:
                tap(event)

        error: str | None = None
        cancelled = False
        try:
            async with self._inner.stream(request, record) as stream:
                yield stream
        except ModelError as exc:
            error = str(exc)
            raise
        except trio.Cancelled:
            cancelled = True
            raise
        finally:
            self._recorder.model(request, events, error, cancelled)
