"""Replay a transcript: a fresh agent, the recorded model, the recorded client, compared.

The agent runs in a scratch copy of the recorded workspace and data dir, its model is the
recorded model exchanges, and its machine- and server-dependent tools (bash, web_fetch, the MCP
servers' tools) give their recorded results; every other tool runs for real. The client's side
is played back in order: each client message is sent once the agent has sent everything that
came before it in the recording, and each agent message is compared with the recorded one
after normalising what legitimately varies (see ``normalize.py``).
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
from iaccode.redaction import Redactor
from iaccode.transcript.format import RecordedTranscript, TranscriptWriter, read_transcript
from iaccode.transcript.normalize import Normalizer, first_difference
from iaccode.transcript.paths import PathMap, check_inside, map_model_events, tool_inputs
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
    """A scratch project folder, data dir and home rebuilt from the transcript's snapshot, and
    the mapping of the recorded machine's paths onto them (see ``paths.py``)."""

    def __init__(self, transcript: RecordedTranscript) -> None:
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="iaccode-replay-")))
        self.project = self.root / "project"
        self.home = self.root / "home"
        self.user_home = self.root / "user-home"
        for folder in (self.project, self.home, self.user_home):
            folder.mkdir()
        snapshot = next(transcript.of_type("workspace"), {})
        self.recorded_cwd = str(snapshot.get("cwd", ""))
        recorded_home = str(snapshot.get("dataDir") or "")
        recorded_user_home = str(snapshot.get("userHome") or "")
        self.paths = PathMap(
            [
                (self.recorded_cwd, str(self.project)),
                (recorded_home, str(self.home)),
                (recorded_user_home, str(self.user_home)),
            ]
        )
        """Recorded paths -> this replay's (what the agent is fed)."""
        self.back = self.paths.reversed()
        """This replay's paths -> the recorded ones (what the agent sent, for --update)."""
        self.expected_paths = {
            self.recorded_cwd: "<cwd>",
            recorded_home: "<home>",
            recorded_user_home: "<user-home>",
        }
        self.actual_paths = {
            str(self.project): "<cwd>",
            str(self.home): "<home>",
            str(self.user_home): "<user-home>",
        }
        for base, files in (
            (self.project, snapshot.get("files")),
            (self.home, snapshot.get("home")),
        ):
            for relative, text in (files or {}).items():
                target = (base / relative).resolve()
                if base.resolve() not in target.parents:
                    continue  # a hostile transcript does not write outside the scratch dir
                target.parent.mkdir(parents=True, exist_ok=True)
                # The session store names the recorded folders too (meta.json, history).
                target.write_text(self.paths.text(text) if isinstance(text, str) else "")

    @property
    def roots(self) -> list[str]:
        """The folders a replayed agent may be told to touch: the scratch project and data
        dir (the scratch home only stands in for the recorded one in what is compared)."""
        return [str(self.project), str(self.home)]

    def to_scratch(self, message: dict[str, Any]) -> dict[str, Any]:
        """A recorded client message with the recorded paths pointing here; a session opened
        in a folder outside them is refused."""
        mapped: dict[str, Any] = self.paths(message)
        params = mapped.get("params")
        if (
            str(mapped.get("method", "")).startswith("session/")
            and isinstance(params, dict)
            and isinstance(params.get("cwd"), str)
        ):
            check_inside(
                f"the client's {mapped['method']}",
                params["cwd"],
                str(self.project),
                self.roots,
                str(self.user_home),
            )
        return mapped

    def to_recorded(self, message: Any, ids: dict[str, str]) -> Any:
        """An agent message of this run in the recording's terms (paths and session ids)."""
        text = json.dumps(message, ensure_ascii=False)
        for actual, recorded in ids.items():
            text = text.replace(actual, recorded)
        return self.back(json.loads(text))

    def model_script(
        self, transcript: RecordedTranscript, stream_seconds: float
    ) -> list[dict[str, Any]]:
        """The recorded model exchanges, mapped, after refusing any tool call that would
        work on a path outside the scratch folders."""
        from iaccode.protocol.convert import ParamsError, tool_input
        from iaccode.tools.registry import builtin_tools

        tools = builtin_tools()
        exchanges = model_exchanges(transcript, stream_seconds=stream_seconds)
        for number, exchange in enumerate(exchanges, 1):
            if not isinstance(exchange.get("events"), list):
                continue
            exchange["events"] = map_model_events(exchange["events"], self.paths)
            for call_id, name, raw_input in tool_inputs(exchange["events"]):
                tool = tools.get(name)
                if tool is None or tool.machine_dependent:
                    continue  # an MCP tool or a machine-dependent one: no paths of ours
                try:
                    args: Any = tool_input(raw_input, tool.input_type)
                except ParamsError:
                    continue  # refused by the agent without running
                for raw in tool.paths(args):
                    check_inside(
                        f"model answer {number}, tool call {call_id} ({name}),",
                        raw,
                        str(self.project),
                        self.roots,
                        str(self.user_home),
                    )
        return exchanges

    def tool_results(self, transcript: RecordedTranscript) -> Path:
        """The recorded results of machine-dependent tools, mapped, as a transcript file of
        their own (what ``IAC_CODE_RECORDED_TOOLS`` reads)."""
        path = self.root / "tools.jsonl"
        writer = TranscriptWriter(path, Redactor(()))
        writer.write(transcript.header)
        for record in transcript.of_type("tool"):
            writer.write(self.paths(record))
        writer.close()
        return path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


async def replay(
    path: Path,
    *,
    agent_command: list[str] | None = None,
    speed: float = 0.0,
    observe: Observer | None = None,
    update: bool = False,
) -> ReplayResult:
    """Replay ``path``. ``speed`` > 0 keeps the recorded pace scaled by it (the demo);
    0 goes as fast as the agent answers (tests, CI)."""
    transcript = read_transcript(path)
    workspace = _Workspace(transcript)
    try:
        return await _run(transcript, path, workspace, agent_command, speed, observe, update)
    finally:
        workspace.remove()


async def _run(
    transcript: RecordedTranscript,
    path: Path,
    workspace: _Workspace,
    agent_command: list[str] | None,
    speed: float,
    observe: Observer | None,
    update: bool,
) -> ReplayResult:
    stream_seconds = 0.0
    script = workspace.root / "model.json"
    if speed > 0:
        stream_seconds = 1.5 / speed  # each model answer streams over ~1.5 s at speed 1
    dump_script(workspace.model_script(transcript, stream_seconds), script)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))}
    env.update(
        IAC_CODE_HOME=str(workspace.home),
        IAC_CODE_MODEL_SCRIPT=str(script),
        IAC_CODE_RECORDED_TOOLS=str(workspace.tool_results(transcript)),
        IAC_CODE_MODEL=str(transcript.header.get("model") or ""),
        # The provider decides the models offered (older transcripts: Anthropic's).
        IAC_CODE_PROVIDER=str(transcript.header.get("provider") or "anthropic"),
        IAC_CODE_LOG_LEVEL="WARNING",
        HOME=str(workspace.user_home),
    )
    command = agent_command or [sys.executable, "-m", "iaccode", "acp"]
    expected_side = Normalizer(workspace.expected_paths)
    actual_side = Normalizer(workspace.actual_paths)
    result = ReplayResult()
    result.actual_records.append(transcript.header)
    # The agent's log goes to its log file in the scratch data dir, not here.
    process = await trio.lowlevel.open_process(
        command, stdin=-1, stdout=-1, stderr=subprocess.DEVNULL, env=env, cwd=str(workspace.project)
    )
    assert process.stdin is not None and process.stdout is not None
    lines = _AgentLines(process.stdout)
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
                result.divergence = (
                    f"agent message {result.compared + 1}: the agent "
                    f"stopped sending; expected {_describe(record)}"
                )
                return result
            if observe is not None:
                observe("agent", actual)
            problem = _compare(expected_side(record.get("message")), actual_side(actual))
            # Kept in the recording's terms (its paths and ids), as --update writes it.
            result.actual_records.append(
                {
                    **record,
                    "message": workspace.to_recorded(actual, actual_side.translate(expected_side)),
                }
            )
            result.compared += 1
            if problem and result.divergence is None:
                result.divergence = (
                    f"agent message {result.compared} ({_describe(record)}) differs:\n{problem}"
                )
                if not update:
                    return result  # what follows would only repeat the difference
        await process.stdin.aclose()
        with trio.move_on_after(EXIT_TIMEOUT):
            while (extra := await lines.receive()) is not None:
                result.actual_records.append({"type": "wire", "from": "agent", "message": extra})
                if result.divergence is None:
                    result.divergence = (
                        f"the agent sent more than was recorded: {json.dumps(extra)[:200]}"
                    )
    finally:
        with trio.CancelScope(shield=True):
            # Its end of input tells the agent to exit, also when the replay stops early (a
            # divergence, a refused record): else it waited EXIT_TIMEOUT to be killed.
            await process.stdin.aclose()
            if process.returncode is None:
                with trio.move_on_after(EXIT_TIMEOUT):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
    return result


async def _send(
    stdin: trio.abc.SendStream,
    record: dict[str, Any],
    workspace: _Workspace,
    ids: dict[str, str],
    observe: Observer | None,
) -> None:
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
        kind = (
            f" {update['sessionUpdate']}"
            if isinstance(update, dict) and "sessionUpdate" in update
            else ""
        )
        return f"{message['method']}{kind}"
    return f"the answer to request {message.get('id')!r}"


class _AgentLines:
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
    temporary = path.with_suffix(path.suffix + ".tmp")
    writer = TranscriptWriter(temporary)
    for record in records:
        writer.write(record)
    writer.close()
    temporary.replace(path)
