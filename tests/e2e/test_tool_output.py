"""Over-long tool output: the model gets head and tail and a file holding all of it, which it
may read back without a question; the file goes with its session."""

from __future__ import annotations

import json
from pathlib import Path

from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import AgentConnection


def result(server: FakeModelServer, index: int, call_id: str) -> dict:
    return next(
        b
        for m in server.requests[index].messages
        for b in m["content"]
        if b.get("type") == "tool_result" and b["tool_use_id"] == call_id
    )


async def test_oversized_output_is_saved_and_readable(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    lines = [f"line {n:05d} " + "x" * 90 for n in range(1, 1801)]
    (workspace / "big.log").write_text("\n".join(lines) + "\n")
    await agent.initialize()
    session = await agent.new_session(workspace)
    saved = tmp_path / "home" / "tool-output" / session / "toolu_big.txt"
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_big", "read_file", {"path": "big.log"})]),
        reply(
            tool_uses=[
                ToolUse("toolu_back", "read_file", {"path": str(saved), "offset": 900, "limit": 2})
            ]
        ),
        reply("Line 900 is there."),
    )
    response, _, requests = await agent.run_prompt(session, "read the log")
    assert response["result"]["stopReason"] == "end_turn"
    assert requests == []  # reading our own saved output asks nothing

    first = result(model_server, 1, "toolu_big")["content"]
    assert len(first) < 31_000
    assert "line 00001" in first and "line 01800" in first and "line 00900" not in first
    assert "characters cut" in first
    assert f"is saved in {saved}" in first
    assert "line 00900" in saved.read_text() and "line 01800" in saved.read_text()
    back = result(model_server, 2, "toolu_back")
    assert back["is_error"] is False
    assert "line 00900" in back["content"] and "line 00901" in back["content"]

    await agent.call("session/close", {"sessionId": session})
    await agent.call("session/delete", {"sessionId": session})
    assert not saved.parent.exists()


async def test_another_sessions_output_is_not_ours(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "home" / "tool-output" / ("sess_" + "0" * 32)
    other.mkdir(parents=True)
    (other / "x.txt").write_text("secret\n")
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_x", "read_file", {"path": str(other / "x.txt")})]),
        reply("ok"),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    _, _, requests = await agent.run_prompt(
        session, "peek", lambda m: {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
    )
    assert [r["method"] for r in requests] == ["session/request_permission"]


async def test_a_fork_has_its_own_copy_of_the_saved_output(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    lines = [f"line {n:05d} {'x' * 90}\n" for n in range(1, 1801)]
    (workspace / "big.log").write_text("".join(lines))
    await agent.initialize()
    source = await agent.new_session(workspace)
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_big", "read_file", {"path": "big.log"})]), reply("Read it.")
    )
    await agent.run_prompt(source, "read the log")
    fork = (await agent.call("session/fork", {"sessionId": source, "cwd": str(workspace)}))[
        "sessionId"
    ]
    await agent.call("session/close", {"sessionId": source})
    await agent.call("session/delete", {"sessionId": source})
    outputs = tmp_path / "home" / "tool-output"
    assert not (outputs / source).exists()
    copy = outputs / fork / "toolu_big.txt"

    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_back", "read_file", {"path": str(copy), "offset": 900, "limit": 1})
            ]
        ),
        reply("Line 900 is there."),
    )
    response, _, requests = await agent.run_prompt(fork, "what is on line 900?")
    assert response["result"]["stopReason"] == "end_turn"
    assert requests == []  # the copy is the fork's own: no question
    history = model_server.requests[2].messages
    assert f"is saved in {copy}" in result(model_server, 2, "toolu_big")["content"]
    assert source not in json.dumps(history)  # the fork's history names its own copy
    back = result(model_server, 3, "toolu_back")
    assert back["is_error"] is False and "line 00900" in back["content"]

    await agent.call("session/close", {"sessionId": fork})
    await agent.call("session/delete", {"sessionId": fork})
    assert not copy.parent.exists()
