"""Cancel, close and shutdown of a real ``iaccode acp`` process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, error_status, hang, reply

from iaccode.host.scratch import remove_folder
from tests.support.agent_process import AgentConnection, spawn_agent

SLOW_STREAM = reply([f"word{i} " for i in range(100)], delay=0.05)


async def start_prompt(agent: AgentConnection, session: str) -> int:
    return await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
    )


async def assert_no_more_updates(agent: AgentConnection, session: str) -> None:
    """Nothing for the session arrives after its prompt was answered (a round trip later)."""
    _, before = await agent.response(
        await agent.send_request("session/new", {"cwd": "/", "mcpServers": []})
    )
    assert [m for m in before if m.get("params", {}).get("sessionId") == session] == []


async def test_cancel_while_streaming(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    await agent.initialize()
    session = await agent.new_session(workspace)
    latencies = []
    for _ in range(3):
        model_server.enqueue(SLOW_STREAM)
        request_id = await start_prompt(agent, session)
        await agent.receive_update("agent_message_chunk")
        sent_at = trio.current_time()
        await agent.notify("session/cancel", {"sessionId": session})
        response, before = await agent.response(request_id)
        latencies.append(trio.current_time() - sent_at)
        assert response["result"]["stopReason"] == "cancelled"
        assert all(m["method"] == "session/update" for m in before)
        chunks = [
            m for m in before if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert len(chunks) < 99  # the stream really stopped
        await assert_no_more_updates(agent, session)
    # The protocol's bound (CANCEL-STREAMING); `nox -s bench` measures the real figure.
    assert max(latencies) < 5, latencies
    # The session goes on: the next prompt sees what was streamed before the cancel.
    model_server.enqueue(reply("after"))
    response, _ = await agent.prompt(session, "again")
    assert response["result"]["stopReason"] == "end_turn"
    history = model_server.requests[-1].body["messages"]
    assert history[1]["role"] == "assistant"
    assert history[1]["content"][0]["text"].startswith("word0 ")


async def test_cancel_during_retry_wait(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(error_status(429, retry_after=30))
    await agent.initialize()
    session = await agent.new_session(workspace)
    request_id = await start_prompt(agent, session)
    await trio.to_thread.run_sync(model_server.wait_for_requests, 1, 30)
    await trio.sleep(0.2)  # let the agent start its retry wait
    await agent.notify("session/cancel", {"sessionId": session})
    response, _ = await agent.response(request_id, timeout=2)
    assert response["result"]["stopReason"] == "cancelled"
    assert len(model_server.requests) == 1


async def test_cancel_before_the_model_answers(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(hang())
    await agent.initialize()
    session = await agent.new_session(workspace)
    request_id = await start_prompt(agent, session)
    await agent.notify("session/cancel", {"sessionId": session})  # right behind the prompt
    response, before = await agent.response(request_id, timeout=3)
    assert response["result"] == {
        "stopReason": "cancelled",
        "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
    }
    # At most the title (set from the prompt, if the cancel came after it); nothing from
    # the model.
    assert {m["params"]["update"]["sessionUpdate"] for m in before} <= {
        "available_commands_update",
        "session_info_update",
    }


async def test_cancel_request_for_an_in_flight_prompt(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(hang())
    await agent.initialize()
    session = await agent.new_session(workspace)
    request_id = await start_prompt(agent, session)
    await trio.to_thread.run_sync(model_server.wait_for_requests, 1, 30)
    await agent.notify("$/cancel_request", {"requestId": request_id})
    response, _ = await agent.response(request_id, timeout=3)
    assert response["error"]["code"] == -32800
    # The session is free again.
    model_server.enqueue(reply("ok"))
    response, _ = await agent.prompt(session, "again")
    assert response["result"]["stopReason"] == "end_turn"


async def test_close_cancels_the_turn_and_forgets_the_session(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(hang())
    await agent.initialize()
    session = await agent.new_session(workspace)
    prompt_id = await start_prompt(agent, session)
    await trio.to_thread.run_sync(model_server.wait_for_requests, 1, 30)
    close_id = await agent.send_request("session/close", {"sessionId": session})
    answers: dict[Any, dict[str, Any]] = {}
    with trio.fail_after(5):
        while len(answers) < 2:
            message = await agent.receive()
            if message.get("id") in (prompt_id, close_id):
                answers[message["id"]] = message
    assert answers[prompt_id]["result"]["stopReason"] == "cancelled"
    assert answers[close_id]["result"] == {}
    for method, params in [
        ("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}),
        ("session/close", {"sessionId": session}),
    ]:
        error = (await agent.request(method, params))["error"]
        assert error["code"] == -32602
        assert "not found" in error["data"]["params.sessionId"]


@pytest.mark.process  # the exit: its status, within LIFE-EOF-BUSY's bound
async def test_end_of_input_cancels_turns_and_exits(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(hang())
    await agent.initialize()
    session = await agent.new_session(workspace)
    request_id = await start_prompt(agent, session)
    await trio.to_thread.run_sync(model_server.wait_for_requests, 1, 30)
    closed_at = trio.current_time()
    await agent.close_stdin()
    rest = await agent.read_until_eof(timeout=5)
    assert await agent.wait_exit(timeout=5) == 0
    assert trio.current_time() - closed_at < 5  # LIFE-EOF-BUSY's bound
    answer = [m for m in rest if m.get("id") == request_id]
    assert answer and answer[0]["result"]["stopReason"] == "cancelled"


@pytest.mark.process
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["TERM", "INT", "HUP"]
)
async def test_signal_shuts_down_cleanly(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, signum: signal.Signals
) -> None:
    model_server.enqueue(hang())
    await agent.initialize()
    session = await agent.new_session(workspace)
    request_id = await start_prompt(agent, session)
    await trio.to_thread.run_sync(model_server.wait_for_requests, 1, 30)
    agent.process.send_signal(signum)
    rest = await agent.read_until_eof(timeout=2)
    assert await agent.wait_exit(timeout=2) == 0
    assert [m["result"]["stopReason"] for m in rest if m.get("id") == request_id] == ["cancelled"]


@pytest.mark.process
async def test_an_agent_started_with_hangups_ignored_keeps_serving_after_one(
    agent_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    """``nohup iaccode acp``: the hang-up the user asked to ignore does not end the agent."""
    command = ["sh", "-c", "trap '' HUP; exec \"$0\" -m iaccode acp", sys.executable]
    async with spawn_agent(agent_env, tmp_path / "agent.stderr", command=command) as agent:
        await agent.initialize()
        agent.process.send_signal(signal.SIGHUP)
        assert await agent.new_session(workspace)
        await agent.close_stdin()
        await agent.read_until_eof(timeout=5)
        assert await agent.wait_exit(timeout=5) == 0
    assert "SIGHUP" not in (tmp_path / "agent.stderr").read_text()


@pytest.mark.process
async def test_idle_agent_exits_at_end_of_input(agent: AgentConnection) -> None:
    await agent.initialize()
    await agent.close_stdin()
    assert await agent.read_until_eof(timeout=2) == []
    assert await agent.wait_exit(timeout=2) == 0


async def test_a_late_answer_to_a_question_the_cancel_withdrew_is_no_warning(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """Cancelling a turn that asks withdraws the question (``$/cancel_request``); an editor
    that answers it anyway is expected to, so the log says so at debug level only."""
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_1", "write_file", {"path": "a.tf", "content": "x"})])
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    prompt = await start_prompt(agent, session)
    question = await agent.receive()
    while question.get("method") != "session/request_permission":
        question = await agent.receive()
    await agent.notify("session/cancel", {"sessionId": session})
    withdrawn = await agent.receive()
    while withdrawn.get("method") != "$/cancel_request":
        withdrawn = await agent.receive()
    assert withdrawn["params"] == {"requestId": question["id"]}
    answer, _ = await agent.response(prompt)
    assert answer["result"]["stopReason"] == "cancelled"
    await agent.reply(
        question["id"], {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    )
    await assert_no_more_updates(agent, session)  # a round trip: the answer was read
    assert "WARNING" not in agent.stderr, agent.stderr_tail()


def gates_of(scratch: Path, pid: int) -> set[Path]:
    return set(scratch.glob(f"iaccode-gates-{pid}-*"))


def entries(folder: Path) -> set[Path]:
    return set(folder.iterdir())


async def _run_command(agent: AgentConnection, session: str, started: Path) -> None:
    """Start a prompt whose command (allowed) is still running once ``started`` exists."""
    await start_prompt(agent, session)
    while (message := await agent.receive()).get("method") != "session/request_permission":
        pass
    await agent.reply(message["id"], {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    with trio.fail_after(10):
        while not started.exists():  # noqa: ASYNC110, ASYNC240 - another process writes it
            await trio.sleep(0.05)


@pytest.mark.process  # kill -9, then another agent
async def test_the_next_agent_removes_the_folders_a_killed_one_left(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    """An agent killed with SIGKILL cannot remove its gates from the temporary folder; the next
    agent that runs a command does, and touches nothing else there."""
    # Short: pytest's tmp_path under xdist is too long for the gates' sockets (see the next).
    scratch = Path(tempfile.mkdtemp(prefix="sweep-"))
    try:
        await _killed_then_next(scratch, agent_env, model_server, workspace, tmp_path)
    finally:
        remove_folder(scratch)


async def _killed_then_next(
    scratch: Path,
    agent_env: dict[str, str],
    model_server: FakeModelServer,
    workspace: Path,
    tmp_path: Path,
) -> None:
    env = {**agent_env, "TMPDIR": str(scratch)}
    gone = subprocess.run(  # noqa: ASYNC221 - a process that ended: its id is free
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(gone.stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept").write_text("")
    kept = {
        scratch / f"iaccode-gates-{os.getpid()}-alive",  # a live process's
        scratch / f"iaccode-gates-{dead_pid}-link",  # a link, named as a gone agent's folder
        scratch / f"iaccode-gates-{dead_pid}-file",  # not a folder
        scratch / f"iaccode-other-{dead_pid}-kind",  # not the gates' kind
        scratch / "iaccode-gates-unnamed",  # no process in its name (an older agent's)
    }
    for path in kept:
        if path.name.endswith("link"):
            path.symlink_to(elsewhere)
        elif path.name.endswith("file"):
            path.write_text("")
        else:
            path.mkdir()
    command = {"command": "touch started; sleep 30"}
    model_server.enqueue(  # the first agent is killed in its command, the next ends in it
        reply(tool_uses=[ToolUse("toolu_1", "bash", command)]),
        reply(tool_uses=[ToolUse("toolu_2", "bash", command)]),
    )
    async with spawn_agent(env, tmp_path / "killed.stderr", process=True) as agent:
        await agent.initialize()
        await _run_command(agent, await agent.new_session(workspace), workspace / "started")
        left = gates_of(scratch, agent.process.pid)
        agent.process.send_signal(signal.SIGKILL)
        await agent.process.wait()
    assert len(left) == 1 and all(path.is_dir() for path in left)
    (workspace / "started").unlink()
    async with spawn_agent(env, tmp_path / "next.stderr", process=True) as agent:
        await agent.initialize()
        await _run_command(agent, await agent.new_session(workspace), workspace / "started")
        assert not any(path.exists() for path in left)
        assert entries(scratch) - kept == gates_of(scratch, agent.process.pid)
        await agent.close_stdin()
        await agent.read_until_eof(timeout=5)
        assert await agent.wait_exit(timeout=5) == 0
    assert entries(scratch) == kept  # its own at its exit
    assert entries(elsewhere) == {elsewhere / "kept"}
