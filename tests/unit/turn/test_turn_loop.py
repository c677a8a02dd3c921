"""The agent loop in-process: ``Turn`` with the scripted model, the real tools and permissions,
and an in-test editor (``tests/support/fake_editor.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.script import ToolUse, error_status, reply, stream_error

from iaccode.llm.offline import ScriptedProvider
from iaccode.protocol.content import TextContent
from iaccode.protocol.messages import AgentMessageChunk, UsageUpdate
from iaccode.protocol.tool_calls import ToolCallProgress
from iaccode.turn.permissions import DENIED
from iaccode.turn.transcript import INTERRUPTED, Transcript
from iaccode.turn.turn import Turn
from tests.support.fake_editor import HANG, FakeEditor, turn_env

PROMPT = [{"type": "text", "text": "Do the thing"}]


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    path.mkdir()
    return path


def texts(editor: FakeEditor) -> str:
    return "".join(
        u.content.text
        for u in editor.updates
        if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContent)
    )


def tool_results(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["tool_use_id"]: b for b in message["content"] if b.get("type") == "tool_result"}


def write(call_id: str, path: str, content: str) -> ToolUse:
    return ToolUse(call_id, "write_file", {"path": path, "content": content})


async def run(turn: Turn, content: list[dict[str, Any]] = PROMPT) -> str:
    with trio.fail_after(10):
        return await turn.run(content)


async def test_a_plain_text_turn_streams_the_answer_and_keeps_it(cwd: Path) -> None:
    provider = ScriptedProvider([reply(["Hello", " there."], input_tokens=42)])
    editor = FakeEditor()
    transcript = Transcript()
    turn = Turn(turn_env(cwd, provider, editor), transcript)

    assert await run(turn) == "end_turn"

    assert texts(editor) == "Hello there."
    [usage] = [u for u in editor.updates if isinstance(u, UsageUpdate)]
    assert usage.used > 0 and usage.size == 200_000
    assert transcript.messages == [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello there."}]},
    ]
    [request] = provider.requests
    assert request.system == "You are a test."
    assert {tool["name"] for tool in request.tools or []} >= {"read_file", "write_file", "bash"}
    assert turn.usage.input_tokens == 42
    assert editor.questions == []


async def test_an_allowed_tool_call_runs_and_the_model_sees_its_result(cwd: Path) -> None:
    provider = ScriptedProvider(
        [reply("Writing.", tool_uses=[write("t1", "a.txt", "alpha\n")]), reply("Done.")]
    )
    editor = FakeEditor(["allow_once"])
    transcript = Transcript()
    turn = Turn(turn_env(cwd, provider, editor), transcript)

    assert await run(turn) == "end_turn"

    assert (cwd / "a.txt").read_text() == "alpha\n"
    [(question, options)] = editor.questions
    assert question.tool_call_id == "t1" and question.name == "write_file"
    assert [o.kind for o in options] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert editor.statuses("t1") == ["pending", "in_progress", "completed"]
    result = tool_results(provider.requests[1].messages[-1])["t1"]
    assert result["is_error"] is False
    assert texts(editor) == "Writing.Done."


async def test_a_rejected_tool_call_does_not_run(cwd: Path) -> None:
    provider = ScriptedProvider(
        [reply(tool_uses=[write("t1", "a.txt", "alpha\n")]), reply("Understood.")]
    )
    editor = FakeEditor(["reject_once"])
    remembered: dict[str, bool] = {}
    turn = Turn(turn_env(cwd, provider, editor, remembered=remembered), Transcript())

    assert await run(turn) == "end_turn"

    assert not (cwd / "a.txt").exists()
    assert editor.statuses("t1") == ["pending", "failed"]
    end = editor.tool_updates("t1")[-1]
    assert isinstance(end, ToolCallProgress) and end.raw_output == {"output": DENIED}
    result = tool_results(provider.requests[1].messages[-1])["t1"]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": DENIED,
        "is_error": True,
    }
    assert remembered == {}  # a one-off rejection is not remembered


async def test_allow_always_is_remembered_for_the_next_calls(cwd: Path) -> None:
    provider = ScriptedProvider(
        [
            reply(tool_uses=[write("t1", "a.txt", "one\n"), write("t2", "b.txt", "two\n")]),
            reply(tool_uses=[write("t3", "c.txt", "three\n")]),
            reply("All written."),
        ]
    )
    editor = FakeEditor(["allow_always"])  # one answer only: a second question fails the test
    remembered: dict[str, bool] = {}
    turn = Turn(turn_env(cwd, provider, editor, remembered=remembered), Transcript())

    assert await run(turn) == "end_turn"

    assert [q.tool_call_id for q, _ in editor.questions] == ["t1"]
    assert remembered == {"write_file": True}
    assert [(cwd / name).read_text() for name in ("a.txt", "b.txt", "c.txt")] == [
        "one\n",
        "two\n",
        "three\n",
    ]
    assert all(editor.statuses(i)[-1] == "completed" for i in ("t1", "t2", "t3"))


async def test_reject_always_refuses_later_calls_without_asking(cwd: Path) -> None:
    provider = ScriptedProvider(
        [
            reply(tool_uses=[write("t1", "a.txt", "one\n")]),
            reply(tool_uses=[write("t2", "b.txt", "two\n")]),
            reply("I will not write."),
        ]
    )
    editor = FakeEditor(["reject_always"])
    remembered: dict[str, bool] = {}
    turn = Turn(turn_env(cwd, provider, editor, remembered=remembered), Transcript())

    assert await run(turn) == "end_turn"

    assert len(editor.questions) == 1 and remembered == {"write_file": False}
    assert editor.statuses("t2") == ["pending", "failed"]
    assert not (cwd / "a.txt").exists() and not (cwd / "b.txt").exists()


async def test_a_cancel_while_the_user_is_asked_leaves_a_final_failed_update(cwd: Path) -> None:
    provider = ScriptedProvider(
        [
            reply(
                "Let me write.",
                tool_uses=[write("t1", "a.txt", "x\n"), write("t2", "b.txt", "y\n")],
            )
        ]
    )
    editor = FakeEditor([HANG])
    transcript = Transcript()
    turn = Turn(turn_env(cwd, provider, editor), transcript)
    scope = trio.CancelScope()

    async def run_turn() -> None:
        with scope:
            await turn.run(PROMPT)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_turn)
            await editor.asked.wait()
            scope.cancel()

    assert scope.cancelled_caught
    for call_id in ("t1", "t2"):  # the one asked about, and the one waiting its turn
        end = editor.tool_updates(call_id)[-1]
        assert isinstance(end, ToolCallProgress) and end.status == "failed"
        assert end.raw_output["output"].startswith("Cancelled: the turn ended")
    asked = editor.tool_updates("t1")[-1]
    assert isinstance(asked, ToolCallProgress)
    assert "asked for permission" in asked.raw_output["output"]
    assert not (cwd / "a.txt").exists()
    # The history stays valid for the API: each tool_use has its (synthetic) result.
    results = tool_results(transcript.messages[-1])
    assert {i: r["content"] for i, r in results.items()} == {"t1": INTERRUPTED, "t2": INTERRUPTED}


async def test_a_permission_answered_cancelled_cancels_the_turn(cwd: Path) -> None:
    provider = ScriptedProvider([reply(tool_uses=[write("t1", "a.txt", "x\n")])])
    editor = FakeEditor(["cancelled"])
    scope = trio.CancelScope()
    turn = Turn(turn_env(cwd, provider, editor, cancel_turn=scope.cancel), Transcript())

    with trio.fail_after(10), scope:
        await turn.run(PROMPT)

    assert scope.cancelled_caught
    assert editor.statuses("t1") == ["pending", "failed"]
    last = editor.tool_updates("t1")[-1]
    assert isinstance(last, ToolCallProgress)
    assert last.raw_output == {"output": "Cancelled by the user."}
    assert not (cwd / "a.txt").exists()


async def test_a_model_error_is_told_to_the_user_and_ends_the_turn(cwd: Path) -> None:
    provider = ScriptedProvider([error_status(529, "Overloaded")])
    editor = FakeEditor()
    transcript = Transcript()
    turn = Turn(turn_env(cwd, provider, editor), transcript)

    assert await run(turn) == "end_turn"

    [chunk] = [u for u in editor.updates if isinstance(u, AgentMessageChunk)]
    assert "Overloaded" in texts(editor) and "529" in texts(editor)
    assert chunk.meta is not None and "529" in chunk.meta["iaccode"]["error"]
    assert transcript.messages == [{"role": "user", "content": PROMPT}]


async def test_an_answer_broken_off_keeps_its_text(cwd: Path) -> None:
    provider = ScriptedProvider(
        [stream_error("Half an ans", message="Overloaded"), reply("Second try.")]
    )
    editor = FakeEditor()
    transcript = Transcript()
    turn = Turn(turn_env(cwd, provider, editor), transcript)

    assert await run(turn) == "end_turn"

    assert transcript.messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Half an ans"}],
    }
    assert "Overloaded" in texts(editor)
    # The next turn's request carries the partial answer: the history stayed valid.
    assert await run(turn, [{"type": "text", "text": "Again"}]) == "end_turn"
    assert provider.requests[1].messages[1]["content"] == [{"type": "text", "text": "Half an ans"}]


async def test_the_request_limit_ends_the_turn(cwd: Path) -> None:
    provider = ScriptedProvider(
        [
            reply(tool_uses=[write("t1", "a.txt", "x\n")]),
            reply(tool_uses=[write("t2", "b.txt", "y\n")]),
            reply("never asked for"),
        ]
    )
    editor = FakeEditor()
    transcript = Transcript()
    turn = Turn(turn_env(cwd, provider, editor, mode="bypass", max_turn_requests=2), transcript)

    assert await run(turn) == "max_turn_requests"

    assert len(provider.requests) == 2
    assert "t2" in tool_results(transcript.messages[-1])  # the history stays valid
