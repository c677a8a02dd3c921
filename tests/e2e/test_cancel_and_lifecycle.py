"""Cancel, close and shutdown of a real ``iaccode acp`` process."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, error_status, hang, reply

from tests.support.agent_process import AgentConnection

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
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
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
