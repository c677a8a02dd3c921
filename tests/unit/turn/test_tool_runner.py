"""``ToolRunner`` in-process: every announced call gets its final update, calls it cannot run
are answered without running, free reads run side by side, results come back in order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from iaccode.llm.offline import ScriptedProvider
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext
from iaccode.turn.tool_runner import ToolRunner
from iaccode.turn.transcript import Transcript
from tests.support.fake_editor import FakeEditor, turn_env


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    path.mkdir()
    (path / "a.txt").write_text("alpha\n")
    (path / "b.txt").write_text("beta\n")
    return path


def runner(
    cwd: Path,
    editor: FakeEditor,
    *,
    mode: str = "default",
    invalid: dict[str, str] | None = None,
    tools: dict[str, Tool] | None = None,
    transcript: Transcript | None = None,
) -> ToolRunner:
    env = turn_env(cwd, ScriptedProvider([]), editor, mode=mode, tools=tools)
    return ToolRunner(env.calls, invalid or {}, transcript or Transcript())


def use(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


async def run_all(runner: ToolRunner, uses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with trio.fail_after(10):
        return await runner.run_all(uses)


async def test_reads_inside_the_project_run_without_a_question_in_order(cwd: Path) -> None:
    editor = FakeEditor()
    results = await run_all(
        runner(cwd, editor),
        [use("r1", "read_file", path="b.txt"), use("r2", "read_file", path="a.txt")],
    )
    assert [r["tool_use_id"] for r in results] == ["r1", "r2"]
    assert "beta" in results[0]["content"] and "alpha" in results[1]["content"]
    assert editor.questions == []
    # Every call is announced before the first one runs.
    assert [type(u).__name__ for u in editor.updates[:2]] == ["ToolCallStart"] * 2
    assert editor.statuses("r1") == ["pending", "in_progress", "completed"]


async def test_a_read_outside_the_project_asks(cwd: Path) -> None:
    outside = cwd.parent / "outside.txt"
    outside.write_text("far away\n")
    editor = FakeEditor(["allow_once"])
    [result] = await run_all(runner(cwd, editor), [use("r1", "read_file", path=str(outside))])
    assert "far away" in result["content"]
    [(question, _)] = editor.questions
    assert question.locations is not None and question.locations[0].path == str(outside)


async def test_calls_that_cannot_run_are_answered_without_running(cwd: Path) -> None:
    editor = FakeEditor()
    transcript = Transcript()
    results = await run_all(
        runner(cwd, editor, invalid={"w1": "cut off"}, transcript=transcript),
        [
            use("u1", "no_such_tool"),
            use("w1", "write_file", path="x.txt", content="x"),
            use("b1", "read_file", pathh="a.txt"),
        ],
    )
    assert [r["is_error"] for r in results] == [True, True, True]
    assert "Unknown tool 'no_such_tool'" in results[0]["content"]
    assert "not valid JSON" in results[1]["content"]
    assert "Invalid input for read_file" in results[2]["content"]
    assert not (cwd / "x.txt").exists()
    for call_id in ("u1", "w1", "b1"):
        assert editor.statuses(call_id) == ["pending", "failed"]


async def test_plan_mode_refuses_a_write_with_the_reason(cwd: Path) -> None:
    editor = FakeEditor()
    [result] = await run_all(
        runner(cwd, editor, mode="plan"), [use("w1", "write_file", path="a.txt", content="changed")]
    )
    assert result["is_error"] and "Plan mode is on" in result["content"]
    assert (cwd / "a.txt").read_text() == "alpha\n"
    assert editor.questions == []


class Failing(Tool):
    name = "failing"
    description = "fails"
    kind = "other"
    input_type = dict
    input_schema = {"type": "object"}
    read_only = True

    def __init__(self, error: Exception) -> None:
        self._error = error

    def title(self, args: Any) -> str:
        return "Fail"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        await trio.lowlevel.checkpoint()
        raise self._error


@pytest.mark.parametrize(
    ("error", "told"),
    [
        (ToolFailure("No such thing."), "No such thing."),
        (KeyError("bug"), "The tool failed unexpectedly: KeyError: 'bug'"),
    ],
)
async def test_a_failing_tool_is_an_error_result_not_a_crash(
    cwd: Path, error: Exception, told: str
) -> None:
    editor = FakeEditor()
    [result] = await run_all(
        runner(cwd, editor, tools={"failing": Failing(error)}), [use("f1", "failing")]
    )
    assert result == {"type": "tool_result", "tool_use_id": "f1", "content": told, "is_error": True}
    assert editor.statuses("f1") == ["pending", "in_progress", "failed"]
