"""Tools recorded and played as wrappers (``iaccode.transcript.tools``): a recording keeps the
results of the machine-dependent tools, and a replay of it answers with them without running
anything; the other tools are left as they are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from iaccode.protocol.convert import tool_input
from iaccode.protocol.tool_calls import ToolCallProgress
from iaccode.tools.base import MACHINE_DEPENDENT, Tool, ToolContext, ToolLimits, run_tool
from iaccode.tools.local_files import LocalFiles
from iaccode.tools.registry import builtin_tools
from iaccode.transcript.format import read_transcript
from iaccode.transcript.recorder import Recorder
from iaccode.transcript.tools import tool_table


async def report(update: ToolCallProgress) -> None:
    await trio.lowlevel.checkpoint()


def context(cwd: Path, call_id: str) -> ToolContext:
    return ToolContext(cwd=cwd, limits=ToolLimits(kill_grace=0.5),
                       files=LocalFiles(max_bytes=1_000_000), tool_call_id=call_id,
                       report=report)


async def bash(tool: Tool, cwd: Path, call_id: str, command: str) -> str:
    with trio.fail_after(20):
        result = await run_tool(tool, tool_input({"command": command}, tool.input_type),
                                context(cwd, call_id))
    return result.text


def test_without_recording_or_playback_the_tools_are_the_builtins() -> None:
    make = tool_table(None, None)
    assert {name: type(tool) for name, tool in make().items()} == {
        name: type(tool) for name, tool in builtin_tools().items()}


def test_only_machine_dependent_tools_are_wrapped_and_look_the_same(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "t.jsonl", model="m", home=tmp_path)
    wrapped, plain = tool_table(recorder, None)(), builtin_tools()
    recorder.close()
    for name, tool in wrapped.items():
        assert (type(tool) is type(plain[name])) is (name not in MACHINE_DEPENDENT)
        assert tool.definition() == plain[name].definition()
        assert (tool.name, tool.kind, tool.read_only, tool.input_type) == (
            plain[name].name, plain[name].kind, plain[name].read_only, plain[name].input_type)


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    path.mkdir()
    return path


async def test_a_recorded_result_is_played_back_without_running(tmp_path: Path,
                                                                cwd: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    recorder = Recorder(path, model="m", home=tmp_path)
    recording = tool_table(recorder, None)()["bash"]
    assert await bash(recording, cwd, "c1", "echo recorded; touch ran-1") == "recorded\n"
    assert "exit code 3" in await bash(recording, cwd, "c2", "exit 3")
    recorder.close()
    [first, second] = read_transcript(path).of_type("tool")
    assert (first["toolCallId"], first["name"], first["result"]["text"]) == (
        "c1", "bash", "recorded\n")
    assert second["result"]["is_error"] is True

    (cwd / "ran-1").unlink()
    played = tool_table(None, path)()["bash"]
    assert await bash(played, cwd, "c1", "echo recorded; touch ran-1") == "recorded\n"
    assert not (cwd / "ran-1").exists()  # answered from the transcript, not run
    # A call the transcript does not have runs for real.
    assert await bash(played, cwd, "c9", "echo live") == "live\n"
