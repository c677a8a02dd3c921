"""What a tool is asked about, gated by, checked by and recorded by follows what the tool says
of itself (its hooks on ``Tool``), never its name: an MCP server's or a plugin's tool that
happens to be called ``bash`` or ``write_file`` is not treated as ours, and ours keep their
behaviour when a recording or a replay wraps them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio
from attrs import frozen

from iaccode.gate.channel import GatePolicy
from iaccode.llm.offline import ScriptedProvider
from iaccode.protocol.convert import tool_input
from iaccode.protocol.tool_calls import DiffContent
from iaccode.tool_result import ToolResult
from iaccode.tools.base import Tool, ToolContext
from iaccode.tools.registry import builtin_tools
from iaccode.transcript.recorder import Recorder
from iaccode.transcript.tools import ToolTable
from iaccode.turn import permissions
from iaccode.turn.permissions import Decision
from iaccode.turn.subagent import SubAgent
from iaccode.turn.tool_runner import ToolRunner
from iaccode.turn.transcript import Transcript
from tests.support.fake_editor import FakeEditor, turn_env

INFRA_LINE = "aws cloudformation delete-stack --stack-name shop"
BROKEN_HCL = 'resource "aws_s3_bucket" "logs" {\n'


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    path.mkdir()
    return path


@frozen
class CommandInput:
    command: str


class ServerBash(Tool):
    """A tool of another server's named ``bash``: its ``command`` is its own business (it
    runs nowhere here), so it is asked about as any tool that changes something."""

    name = "bash"
    description = "Runs a command on the server"
    kind = "other"
    input_type = CommandInput
    input_schema = {"type": "object", "properties": {"command": {"type": "string"}}}
    read_only = False

    def __init__(self) -> None:
        self.gates: list[GatePolicy | None] = []

    def title(self, args: CommandInput) -> str:
        return f"server: {args.command}"

    async def run(self, args: CommandInput, ctx: ToolContext) -> ToolResult:
        await trio.lowlevel.checkpoint()
        self.gates.append(ctx.gate)
        return ToolResult("done on the server")


@frozen
class PathInput:
    path: str


class ServerWriteFile(Tool):
    """A tool named ``write_file`` that writes nothing here: it shows a diff of a file it
    changed elsewhere. No IaC check of ours runs on it."""

    name = "write_file"
    description = "Writes a file on the server"
    kind = "edit"
    input_type = PathInput
    input_schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    read_only = False

    def title(self, args: PathInput) -> str:
        return f"server: write {args.path}"

    async def run(self, args: PathInput, ctx: ToolContext) -> ToolResult:
        await trio.lowlevel.checkpoint()
        return ToolResult(
            "written on the server",
            content=[
                DiffContent(path=str(ctx.cwd / args.path), old_text=None, new_text=BROKEN_HCL)
            ],
        )


def decide(tool: Tool, mode: str, cwd: Path, **args: Any) -> permissions.Verdict:
    return permissions.decide(
        tool,
        tool_input(args, tool.input_type),
        mode=mode,
        cwd=cwd,
        remembered={},
        gates=Path("/nonexistent/iaccode-gates/bin"),
    )


def test_another_tool_named_bash_is_not_read_as_a_shell_line(cwd: Path) -> None:
    ours = decide(builtin_tools()["bash"], "bypass", cwd, command=INFRA_LINE)
    assert ours.decision is Decision.ASK and ours.infra_change
    theirs = decide(ServerBash(), "bypass", cwd, command=INFRA_LINE)
    assert theirs.decision is Decision.RUN and theirs.infra_change is None
    assert decide(ServerBash(), "default", cwd, command=INFRA_LINE).remember


async def test_another_tool_named_bash_runs_without_the_gates(cwd: Path) -> None:
    tool = ServerBash()
    env = turn_env(cwd, ScriptedProvider([]), FakeEditor(), mode="bypass", tools={"bash": tool})
    with trio.fail_after(10):
        [result] = await ToolRunner(env.calls, {}, Transcript()).run_all(
            [{"type": "tool_use", "id": "b1", "name": "bash", "input": {"command": "ls"}}]
        )
    assert result["content"] == "done on the server"
    assert tool.gates == [None]


async def test_a_write_is_checked_by_the_write_tool_not_by_its_name(cwd: Path) -> None:
    env = turn_env(
        cwd,
        ScriptedProvider([]),
        FakeEditor(),
        mode="bypass",
        tools={"write_file": ServerWriteFile()},
    )
    with trio.fail_after(10):
        [theirs] = await ToolRunner(env.calls, {}, Transcript()).run_all(
            [{"type": "tool_use", "id": "w1", "name": "write_file", "input": {"path": "main.tf"}}]
        )
    assert theirs["content"] == "written on the server"

    env = turn_env(cwd, ScriptedProvider([]), FakeEditor(), mode="bypass")
    with trio.fail_after(30):
        [ours] = await ToolRunner(env.calls, {}, Transcript()).run_all(
            [
                {
                    "type": "tool_use",
                    "id": "w2",
                    "name": "write_file",
                    "input": {"path": "main.tf", "content": BROKEN_HCL},
                }
            ]
        )
    assert "IaC check of main.tf (Terraform) found 1 problem" in ours["content"]


def test_a_recorded_or_played_tool_keeps_the_hooks_of_the_one_it_wraps(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "t.jsonl", model="m", home=tmp_path)
    recorded = ToolTable(recorder).builtin()
    recorder.close()
    bash = recorded["bash"]
    assert type(bash) is not type(builtin_tools()["bash"])  # wrapped: its results are kept
    args: Any = tool_input({"command": INFRA_LINE}, bash.input_type)
    assert bash.command_line(args) == INFRA_LINE and bash.gated and bash.machine_dependent
    assert decide(bash, "bypass", tmp_path, command=INFRA_LINE).decision is Decision.ASK
    assert [name for name, tool in builtin_tools().items() if tool.machine_dependent] == [
        "bash",
        "web_fetch",
    ]


def test_a_sub_agent_gets_the_read_only_tools_but_the_plan_and_itself() -> None:
    tools = builtin_tools()
    tools["agent"] = SubAgent(tools)
    assert sorted(SubAgent(tools).tools()) == [
        "glob",
        "grep",
        "list_files",
        "read_file",
        "web_fetch",
    ]
