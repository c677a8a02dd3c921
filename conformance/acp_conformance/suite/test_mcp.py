"""MCP servers passed in ``session/new`` (ACP ``mcpServers``), for agents that advertise
``mcpCapabilities``: the agent connects them, offers their tools to the model, runs a call on
the server, and ends a stdio server when it exits.

The servers are real MCP servers written with the official SDK
(``acp_conformance/fakes/mcp_server.py``: stdio, streamable HTTP and SSE on 127.0.0.1); each
logs the tool calls it runs, so what the agent did is seen from the server's side. Tool names
are the agent's own: the suite takes the name the agent offered the model for the server's
``lookup`` tool, and asks for that.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from acp_conformance.driver import AgentConnection, deadline
from acp_conformance.fakes.mcp_server import RemoteServer, acp_stdio_server, calls
from acp_conformance.harness import Checks, Harness
from acp_conformance.processes import pid_alive
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import Model, capability_or_na
from acp_conformance.script import ToolUse, reply

SERVER = "conformance-db"
PROMPTS_TO_CONNECT = 3
"""Prompts an agent may take before it offers the server's tools (it may connect lazily)."""


@pytest.fixture
def calls_log(harness: Harness) -> Path:
    return harness.root / "mcp-calls.jsonl"


@pytest.fixture
def http_server(calls_log: Path) -> Iterator[RemoteServer]:
    server = RemoteServer("http", calls_log)
    yield server
    server.close()


@pytest.fixture
def sse_server(calls_log: Path) -> Iterator[RemoteServer]:
    server = RemoteServer("sse", calls_log)
    yield server
    server.close()


async def open_with(
    agent: AgentConnection, workspace: Path, capability: str | None, server: dict[str, Any]
) -> str:
    """initialize, check the capability (else n/a), and open a session with ``server``."""
    await agent.initialize()
    if agent.capability("mcpCapabilities") is None:
        not_applicable("agent does not advertise mcpCapabilities")
    if capability is not None:
        capability_or_na(agent, capability)
    created = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": [server]})
    return str(created["sessionId"])


async def offered_tool(
    agent: AgentConnection, model: Model, session: str, tool: str = "lookup"
) -> str:
    """The name the agent offers the model for the server's ``tool``."""
    for _ in range(PROMPTS_TO_CONNECT):
        await agent.prompt(session, "Which tools do you have?")
        names = model.offered_tool_names()
        found = [n for n in names if n.endswith(tool) and n != tool] or [
            n for n in names if n == tool
        ]
        if found:
            return found[0]
    raise AssertionError(
        f"after {PROMPTS_TO_CONNECT} prompts the model was not offered the "
        f"MCP server's tool {tool!r} (tools offered: {names})"
    )


async def tool_runs_on_the_server(
    agent: AgentConnection, model: Model, session: str, log: Path
) -> None:
    tool = await offered_tool(agent, model, session)
    start = model.request_count()
    model.plan(
        reply(tool_uses=[ToolUse("toolu_conformance_mcp", tool, {"key": "conformance"})]),
        reply("Looked up."),
    )
    answer, _ = await agent.prompt(session, "Look the key up")
    assert "result" in answer, f"the prompt answered {answer}"
    assert {"tool": "lookup", "arguments": {"key": "conformance"}} in calls(log), (
        f"the MCP server did not run lookup (it logged {calls(log)})"
    )
    assert "value of conformance" in model.asked_text(start), (
        "the tool's result did not reach the model"
    )


@requirement(
    "MCP-STDIO",
    "CAPABILITY",
    "with mcpCapabilities: a stdio server from session/new (env given as a list) is "
    "started, its tools are offered to the model, and a call runs on the server",
)
async def test_stdio_server(
    agent: AgentConnection, model: Model, workspace: Path, calls_log: Path
) -> None:
    session = await open_with(agent, workspace, None, acp_stdio_server(SERVER, calls_log))
    await tool_runs_on_the_server(agent, model, session, calls_log)


@requirement(
    "MCP-HTTP",
    "CAPABILITY",
    "with mcpCapabilities.http: a streamable HTTP server from session/new is "
    "connected, its tools are offered to the model, and a call runs on the server",
)
async def test_http_server(
    agent: AgentConnection,
    model: Model,
    workspace: Path,
    calls_log: Path,
    http_server: RemoteServer,
) -> None:
    session = await open_with(agent, workspace, "mcpCapabilities.http", http_server.acp(SERVER))
    await tool_runs_on_the_server(agent, model, session, calls_log)


@requirement(
    "MCP-SSE",
    "CAPABILITY",
    "with mcpCapabilities.sse: an SSE server from session/new is connected, its tools "
    "are offered to the model, and a call runs on the server",
)
async def test_sse_server(
    agent: AgentConnection, model: Model, workspace: Path, calls_log: Path, sse_server: RemoteServer
) -> None:
    session = await open_with(agent, workspace, "mcpCapabilities.sse", sse_server.acp(SERVER))
    await tool_runs_on_the_server(agent, model, session, calls_log)


@requirement(
    "MCP-STDIO-EXIT",
    "CAPABILITY",
    "with mcpCapabilities: when its input ends the agent exits and the stdio server "
    "it started is gone",
)
async def test_stdio_server_ends_with_the_agent(
    agent: AgentConnection,
    model: Model,
    workspace: Path,
    calls_log: Path,
    harness: Harness,
    check: Checks,
) -> None:
    pid_file = harness.root / "mcp-pids"
    session = await open_with(
        agent, workspace, None, acp_stdio_server(SERVER, calls_log, "--spawn-child", str(pid_file))
    )
    await offered_tool(agent, model, session)  # it is running now
    server_pid, child_pid = (int(p) for p in pid_file.read_text().split())
    await agent.close_stdin()
    await agent.wait_exit(15)
    with deadline(10, f"the stdio MCP server (pid {server_pid}) outlived the agent"):
        while pid_alive(server_pid):  # noqa: ASYNC110 - another process
            await trio.sleep(0.05)
    # As long again for the daemon: a remote agent (iaccode serve) ends the connection's
    # servers while the test goes on (no process exit to wait for), the daemon last.
    with trio.move_on_after(10):
        while pid_alive(child_pid):  # noqa: ASYNC110 - another process
            await trio.sleep(0.05)
    check.should(
        "MCP-STDIO-EXIT-TREE",
        "a process the stdio server started in a session of its own (a daemon) is gone too",
        not pid_alive(child_pid),
        f"pid {child_pid} is still running",
    )


@requirement(
    "MCP-ELICITATION",
    "SHOULD",
    "with clientCapabilities.elicitation.form: a form an MCP server asks for during "
    "its tool call reaches the client as elicitation/create on that session (mode "
    "form, the server's schema), and the client's answer reaches the server",
)
async def test_an_mcp_servers_form_reaches_the_client(
    agent: AgentConnection, model: Model, workspace: Path, calls_log: Path
) -> None:
    assert agent.services is not None
    agent.services.elicitation = lambda _: {"action": "accept", "content": {"name": "conformance"}}
    await agent.initialize(elicitation={"form": {}})
    if agent.capability("mcpCapabilities") is None:
        not_applicable("agent does not advertise mcpCapabilities")
    created = await agent.call(
        "session/new", {"cwd": str(workspace), "mcpServers": [acp_stdio_server(SERVER, calls_log)]}
    )
    session = str(created["sessionId"])
    tool = await offered_tool(agent, model, session, "ask_user")
    start = model.request_count()
    model.plan(
        reply(tool_uses=[ToolUse("toolu_conformance_ask", tool, {"question": "Which region?"})]),
        reply("Noted."),
    )
    answer, _ = await agent.prompt(session, "Ask me")
    assert "result" in answer, f"the prompt answered {answer}"
    asked = [r for r in agent.agent_requests if r["method"] == "elicitation/create"]
    assert asked, "no elicitation/create reached the client"
    params = asked[0]["params"]
    assert params.get("sessionId") == session and params.get("mode") == "form", params
    assert "name" in (params.get("requestedSchema") or {}).get("properties", {}), params
    assert "Which region?" in params.get("message", ""), params
    assert "said conformance" in model.asked_text(start), (
        "the client's answer did not reach the MCP server (or its result the model)"
    )
