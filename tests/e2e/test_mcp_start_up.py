"""An MCP server's start-up does not stop the agent: the ``mcp`` SDK (seconds to import on a
busy machine) is imported in a worker thread, so ``session/new`` with servers answers at once
and a cancel is answered while the SDK still loads.

The agent runs with a ``sitecustomize`` on its path that makes ``import mcp`` take 30 s (an
audit hook that sleeps on the ``import`` event for ``mcp``, which Python raises before it takes
any import lock): were the import on the trio thread, nothing would be answered for 30 s; the
tests allow the protocol's 5 s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from acp_conformance.fakes.mcp_server import acp_stdio_server
from acp_conformance.schema import WireChecker

from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent

SLOW_IMPORT = 30.0
"""Seconds ``import mcp`` takes in the agent under test."""

SITECUSTOMIZE = f"""
import sys, time


def slow_mcp(event, args):
    if event == "import" and args[0] == "mcp":
        time.sleep({SLOW_IMPORT})


sys.addaudithook(slow_mcp)
"""


@pytest.fixture
async def slow_mcp_agent(
    agent_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[AgentConnection]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**agent_env, "PYTHONPATH": str(site)}
    async with spawn_agent(
        env, tmp_path / "agent.stderr", WireChecker(aliases=METHOD_ALIASES)
    ) as agent:
        yield agent


async def test_session_new_with_a_server_answers_while_the_sdk_loads(
    slow_mcp_agent: AgentConnection, workspace: Path, tmp_path: Path
) -> None:
    agent = slow_mcp_agent
    await agent.initialize()
    server = acp_stdio_server("db", tmp_path / "calls.jsonl")
    result = await agent.call(
        "session/new", {"cwd": str(workspace), "mcpServers": [server]}, timeout=5
    )
    assert result["sessionId"]
    # The loop goes on answering: another session, and the listing that shows the server.
    other = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []}, timeout=5)
    assert other["sessionId"] != result["sessionId"]
    listed = await agent.call("session/list", {}, timeout=5)
    assert {s["sessionId"] for s in listed["sessions"]} >= {result["sessionId"]}


async def test_a_cancel_is_answered_while_the_sdk_loads(
    slow_mcp_agent: AgentConnection, workspace: Path, tmp_path: Path
) -> None:
    """The first prompt waits for the server still starting (``mcp_startup_timeout``); a
    cancel then ends it at once."""
    agent = slow_mcp_agent
    await agent.initialize()
    server = acp_stdio_server("db", tmp_path / "calls.jsonl")
    result = await agent.call(
        "session/new", {"cwd": str(workspace), "mcpServers": [server]}, timeout=5
    )
    session = result["sessionId"]
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "look it up"}]}
    )
    await agent.notify("session/cancel", {"sessionId": session})
    answer, _ = await agent.response(request_id, timeout=5)
    assert answer["result"]["stopReason"] == "cancelled"
