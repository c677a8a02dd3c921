"""todo_write end to end: the plan reaches the editor, never asks, and comes back on load."""

from __future__ import annotations

from pathlib import Path

from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import METHOD_ALIASES, spawn_agent

PLAN = [
    {"content": "Read the module", "status": "completed", "priority": "high"},
    {"content": "Add the variable", "status": "in_progress"},
    {"content": "Run terraform validate", "status": "pending", "priority": "low"},
]
SHOWN = [
    {"content": "Read the module", "priority": "high", "status": "completed"},
    {"content": "Add the variable", "priority": "medium", "status": "in_progress"},
    {"content": "Run terraform validate", "priority": "low", "status": "pending"},
]


def plans(messages: list[dict]) -> list[list[dict]]:
    return [
        m["params"]["update"]["entries"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "plan"
    ]


async def test_plan_is_shown_kept_and_replayed_on_load(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    first_plan = [{"content": "Read the module", "status": "in_progress"}]
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_p1", "todo_write", {"todos": first_plan})]),
        reply(tool_uses=[ToolUse("toolu_p2", "todo_write", {"todos": PLAN})]),
        reply("Working on it."),
    )
    checker = WireChecker(aliases=METHOD_ALIASES)
    async with spawn_agent(agent_env, tmp_path / "first.stderr", checker) as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        response, updates, requests = await agent.run_prompt(session, "add a variable")
        assert response["result"]["stopReason"] == "end_turn"
        assert requests == []  # never asks
        assert plans(updates) == [
            [{"content": "Read the module", "priority": "medium", "status": "in_progress"}],
            SHOWN,
        ]
        start = next(
            u["params"]["update"]
            for u in updates
            if u["params"]["update"].get("toolCallId") == "toolu_p2"
        )
        assert start["kind"] == "think" and start["title"] == "Update plan (1/3 done)"
        result = next(
            b
            for m in model_server.requests[2].messages
            for b in m["content"]
            if b.get("type") == "tool_result" and b["tool_use_id"] == "toolu_p2"
        )
        assert result["is_error"] is False
        assert result["content"].startswith("Plan recorded and shown to the user")
        await agent.close_stdin()
        assert await agent.wait_exit(5) == 0

    async with spawn_agent(
        agent_env, tmp_path / "second.stderr", WireChecker(aliases=METHOD_ALIASES)
    ) as agent:
        await agent.initialize()
        request_id = await agent.send_request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        _, replay = await agent.response(request_id)
        assert plans(replay) == [SHOWN]  # only the last plan, the one the user had
        assert replay[-1]["params"]["update"]["sessionUpdate"] == "plan"


async def test_a_bad_plan_is_refused_and_the_model_told(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_bad", "todo_write", {"todos": [{"content": "x", "status": "done"}]})
            ]
        ),
        reply("sorry"),
    )
    async with spawn_agent(
        agent_env, tmp_path / "a.stderr", WireChecker(aliases=METHOD_ALIASES)
    ) as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        _, updates, _ = await agent.run_prompt(session, "plan")
        assert plans(updates) == []
        result = next(
            b
            for m in model_server.requests[1].messages
            for b in m["content"]
            if b.get("type") == "tool_result"
        )
        assert result["is_error"] is True and "status" in result["content"]
