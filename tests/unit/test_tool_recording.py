"""Tools recorded and played as wrappers (``iaccode.transcript.tools``): a recording keeps the
results of the machine-dependent tools, and a replay of it answers with them without running
anything; the other tools are left as they are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from iaccode.host.local_files import LocalFiles
from iaccode.protocol.convert import tool_input
from iaccode.protocol.tool_calls import ToolCallProgress
from iaccode.tool_result import ToolResult
from iaccode.tools.base import Tool, ToolContext, ToolLimits, run_tool
from iaccode.tools.registry import builtin_tools
from iaccode.transcript.format import read_transcript
from iaccode.transcript.recorder import Recorder
from iaccode.transcript.tools import ToolTable


async def report(update: ToolCallProgress) -> None:
    await trio.lowlevel.checkpoint()


def context(cwd: Path, call_id: str) -> ToolContext:
    return ToolContext(
        cwd=cwd,
        limits=ToolLimits(kill_grace=0.5),
        files=LocalFiles(max_bytes=1_000_000),
        tool_call_id=call_id,
        report=report,
    )


async def bash(tool: Tool, cwd: Path, call_id: str, command: str) -> str:
    with trio.fail_after(20):
        result = await run_tool(
            tool, tool_input({"command": command}, tool.input_type), context(cwd, call_id)
        )
    return result.text


def test_without_recording_or_playback_the_tools_are_the_builtins() -> None:
    table = ToolTable()
    assert {name: type(tool) for name, tool in table.builtin().items()} == {
        name: type(tool) for name, tool in builtin_tools().items()
    }


def test_only_machine_dependent_tools_are_wrapped_and_look_the_same(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "t.jsonl", model="m", home=tmp_path)
    wrapped, plain = ToolTable(recorder).builtin(), builtin_tools()
    recorder.close()
    for name, tool in wrapped.items():
        assert (type(tool) is type(plain[name])) is (not plain[name].machine_dependent)
        assert tool.definition() == plain[name].definition()
        assert (tool.name, tool.kind, tool.read_only, tool.input_type) == (
            plain[name].name,
            plain[name].kind,
            plain[name].read_only,
            plain[name].input_type,
        )


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    path.mkdir()
    return path


async def test_a_recorded_result_is_played_back_without_running(tmp_path: Path, cwd: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    recorder = Recorder(path, model="m", home=tmp_path)
    recording = ToolTable(recorder).builtin()["bash"]
    assert await bash(recording, cwd, "c1", "echo recorded; touch ran-1") == "recorded\n"
    assert "exit code 3" in await bash(recording, cwd, "c2", "exit 3")
    recorder.close()
    [first, second] = read_transcript(path).of_type("tool")
    assert (first["toolCallId"], first["name"], first["result"]["text"]) == (
        "c1",
        "bash",
        "recorded\n",
    )
    assert second["result"]["is_error"] is True

    (cwd / "ran-1").unlink()
    played = ToolTable(played=path).builtin()["bash"]
    assert await bash(played, cwd, "c1", "echo recorded; touch ran-1") == "recorded\n"
    assert not (cwd / "ran-1").exists()  # answered from the transcript, not run
    # A call the transcript does not have runs for real.
    assert await bash(played, cwd, "c9", "echo live") == "live\n"


class ServerTool(Tool):
    """An MCP-like tool: what it answers depends on a server (here: how often it ran)."""

    name = "mcp__db__drop_table"
    description = "Drop a table."
    kind = "other"
    input_type = dict
    input_schema = {"type": "object", "properties": {}}
    read_only = False

    def __init__(self) -> None:
        self.runs = 0

    def title(self, args: dict) -> str:
        return "drop_table (db MCP server)"

    async def run(self, args: dict, ctx: ToolContext) -> ToolResult:
        await trio.lowlevel.checkpoint()
        self.runs += 1
        return ToolResult(
            f"dropped ({self.runs})",
            model_content=[
                {"type": "text", "text": f"dropped ({self.runs})"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
            ],
        )


async def test_every_external_tool_is_recorded_and_played_with_what_the_model_saw(
    tmp_path: Path, cwd: Path
) -> None:
    path = tmp_path / "transcript.jsonl"
    recorder = Recorder(path, model="m", home=tmp_path)
    server = ServerTool()
    recording = ToolTable(recorder).external({server.name: server})[server.name]
    assert recording.definition() == server.definition()
    result = await run_tool(recording, {}, context(cwd, "c1"))
    recorder.close()
    assert server.runs == 1

    played = ToolTable(played=path).external({server.name: server})[server.name]
    again = await run_tool(played, {}, context(cwd, "c1"))
    assert server.runs == 1  # the server was not asked again
    assert (again.text, again.model_content) == (result.text, result.model_content)
