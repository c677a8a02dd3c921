"""Replay a transcript: a fresh agent, the recorded model, the recorded client, compared.

The agent runs in a scratch copy of the recorded workspace and data dir, its model is the
recorded model exchanges, and its machine-dependent tools (bash, web_fetch) give their recorded
results; every other tool runs for real. The client's side is played back in order: each
client message is sent once the agent has sent everything that came before it in the
recording, and each agent message is compared with the recorded one after normalising what
legitimately varies (see ``normalize.py``).
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from attrs import define, field

from iaccode.llm.script import dump_script
from iaccode.transcript.format import Transcript, TranscriptWriter, read_transcript
from iaccode.transcript.normalize import Normalizer, first_difference
from iaccode.transcript.playback import model_exchanges

RECEIVE_TIMEOUT = 30.0
EXIT_TIMEOUT = 5.0

Observer = Callable[[str, dict[str, Any]], None]
"""Sees each message as it passes: ("client" | "agent", message). The demo renders them."""


@define
class ReplayResult:
    compared: int = 0
    divergence: str | None = None
    """A readable account of the first message that differed, or None."""
    actual_records: list[dict[str, Any]] = field(factory=list)
    """The transcript as this run produced it (what ``--update`` writes)."""


class _Workspace:
    """A scratch project folder and data dir rebuilt from the transcript's snapshot."""

    def __init__(self, transcript: Transcript) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="iaccode-replay-"))
        self.project = self.root / "project"
        self.home = self.root / "home"
        self.project.mkdir()
        self.home.mkdir()
        snapshot = next(transcript.of_type("workspace"), {})
        self.recorded_cwd = str(snapshot.get("cwd", ""))
        for base, files in ((self.project, snapshot.get("files")),
                            (self.home, snapshot.get("home"))):
            for relative, text in (files or {}).items():
                target = (base / relative).resolve()
                if base.resolve() not in target.parents:
                    continue  # a hostile transcript does not write outside the scratch dir
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)

    def to_scratch(self, message: dict[str, Any]) -> dict[str, Any]:
        """A recorded client message with the recorded project path pointing here."""
        if not self.recorded_cwd:
            return message
        text = json.dumps(message, ensure_ascii=False)
        loaded: dict[str, Any] = json.loads(text.replace(self.recorded_cwd, str(self.project)))
        return loaded

    def to_recorded(self, message: Any, ids: dict[str, str]) -> Any:
        """An agent message of this run in the recording's terms (paths and session ids)."""
        text = json.dumps(message, ensure_ascii=False)
        for actual, recorded in ids.items():
            text = text.replace(actual, recorded)
        if self.recorded_cwd:
            text = text.replace(str(self.project), self.recorded_cwd)
        return json.loads(text)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


async def replay(path: Path, *, agent_command: list[str] | None = None, speed: float = 0.0,
                 observe: Observer | None = None, update: bool = False) -> ReplayResult:
    """Replay ``path``. ``speed`` > 0 keeps the recorded pace scaled by it (the demo);
    0 goes as fast as the agent answers (tests, CI)."""
    transcript = read_transcript(path)
    workspace = _Workspace(transcript)
    try:
        return await _run(transcript, path, workspace, agent_command, speed, observe, update)
    finally:
        workspace.remove()


async def _run(transcript: Transcript, path: Path, workspace: _Workspace,
               agent_command: list[str] | None, speed: float,
               observe: Observer | None, update: bool) -> ReplayResult:
    stream_seconds = 0.0
    script = workspace.root / "model.json"
    if speed > 0:
        stream_seconds = 1.5 / speed  # each model answer streams over ~1.5 s at speed 1
    dump_script(model_exchanges(transcript, stream_seconds=stream_seconds), script)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))}
    env.update(IAC_CODE_HOME=str(workspace.home), IAC_CODE_MODEL_SCRIPT=str(script),
               IAC_CODE_RECORDED_TOOLS=os.path.abspath(path),  # noqa: ASYNC240 - no I/O
               IAC_CODE_MODEL=str(transcript.header.get("model") or ""),
               # The provider decides the models offered (older transcripts: Anthropic's).
               IAC_CODE_PROVIDER=str(transcript.header.get("provider") or "anthropic"),
               IAC_CODE_LOG_LEVEL="WARNING")
    command = agent_command or [sys.executable, "-m", "iaccode", "acp"]
    expected_side = Normalizer({workspace.recorded_cwd: "<cwd>"})
    actual_side = Normalizer({str(workspace.project): "<cwd>", str(workspace.home): "<home>"})
    result = ReplayResult()
    result.actual_records.append(transcript.header)
    # The agent's log goes to its log file in the scratch data dir, not here.
    process = await trio.lowlevel.open_process(
        command, stdin=-1, stdout=-1, stderr=subprocess.DEVNULL, env=env,
        cwd=str(workspace.project))
    assert process.stdin is not None and process.stdout is not None
    lines = _Lines(process.stdout)
    try:
        last_t = 0.0
        for record in transcript.records:
            if record.get("type") != "wire":
                result.actual_records.append(record)
                continue
            if speed > 0 and record["from"] == "client":
                await trio.sleep(max(0.0, float(record.get("t", 0)) - last_t) / speed)
            last_t = float(record.get("t", last_t))
            if record["from"] == "client":
                ids = expected_side.translate(actual_side)  # recorded -> this run's
                await _send(process.stdin, record, workspace, ids, observe)
                result.actual_records.append(record)
                continue
            actual = await lines.receive()
            if actual is None:
                result.divergence = (f"agent message {result.compared + 1}: the agent "
                                     f"stopped sending; expected {_describe(record)}")
                return result
            if observe is not None:
                observe("agent", actual)
            problem = _compare(expected_side(record.get("message")), actual_side(actual))
            # Kept in the recording's terms (its paths and ids), as --update writes it.
            result.actual_records.append({**record, "message": workspace.to_recorded(
                actual, actual_side.translate(expected_side))})
            result.compared += 1
            if problem and result.divergence is None:
                result.divergence = (f"agent message {result.compared} "
                                     f"({_describe(record)}) differs:\n{problem}")
                if not update:
                    return result  # what follows would only repeat the difference
        await process.stdin.aclose()
        with trio.move_on_after(EXIT_TIMEOUT):
            while (extra := await lines.receive()) is not None:
                result.actual_records.append({"type": "wire", "from": "agent",
                                              "message": extra})
                if result.divergence is None:
                    result.divergence = ("the agent sent more than was recorded: "
                                         f"{json.dumps(extra)[:200]}")
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                with trio.move_on_after(EXIT_TIMEOUT):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
    return result


async def _send(stdin: trio.abc.SendStream, record: dict[str, Any], workspace: _Workspace,
                ids: dict[str, str], observe: Observer | None) -> None:
    if "raw" in record:
        await stdin.send_all(str(record["raw"]).encode() + b"\n")
        return
    message = workspace.to_scratch(record["message"])
    if ids:
        text = json.dumps(message, ensure_ascii=False)
        for recorded, actual in ids.items():
            text = text.replace(recorded, actual)
        message = json.loads(text)
    if observe is not None:
        observe("client", message)
    await stdin.send_all(json.dumps(message, ensure_ascii=False).encode() + b"\n")


def _compare(expected: Any, actual: Any) -> str | None:
    where = first_difference(expected, actual)
    if where is None:
        return None
    old = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    new = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    diff = list(difflib.unified_diff(old, new, "recorded", "replayed", lineterm="", n=2))
    return f"  at {where}\n" + "\n".join("  " + line for line in diff[:40])


def _describe(record: dict[str, Any]) -> str:
    message = record.get("message") or {}
    if "method" in message:
        update = (message.get("params") or {}).get("update") or {}
        kind = f" {update['sessionUpdate']}" if isinstance(update, dict) and \
            "sessionUpdate" in update else ""
        return f"{message['method']}{kind}"
    return f"the answer to request {message.get('id')!r}"


class _Lines:
    """Messages from the agent's stdout, one JSON line at a time."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def receive(self) -> dict[str, Any] | None:
        with trio.fail_after(RECEIVE_TIMEOUT):
            while b"\n" not in self._buffer:
                chunk = await self._stream.receive_some(1 << 16)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        message: dict[str, Any] = json.loads(line)
        return message


def write_updated(path: Path, records: list[dict[str, Any]]) -> None:
    """``--update``: the transcript as the current build behaves (secrets still scrubbed)."""
    from iaccode.transcript.format import secret_values

    temporary = path.with_suffix(path.suffix + ".tmp")
    writer = TranscriptWriter(temporary, secret_values())
    for record in records:
        writer.write(record)
    writer.close()
    temporary.replace(path)
