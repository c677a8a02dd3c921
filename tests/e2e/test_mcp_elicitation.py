"""An MCP server asks the user for input during its tool call (``elicitation/create``): the
question reaches the editor as an ACP elicitation on that tool call, naming the server, and
the editor's answer goes back to the server. A real MCP server (acp_conformance/fakes/
mcp_server.py, ``ask_user``), a real `iaccode acp`; the test plays the editor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.mcp_server import acp_stdio_server, calls
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import AgentConnection

FORM = {"elicitation": {"form": {}}}
BOTH = {"elicitation": {"form": {}, "url": {}}}


def ask(question: str = "Which region?") -> dict[str, Any]:
    return reply(tool_uses=[ToolUse("toolu_1", "mcp__db__ask_user", {"question": question})])


def open_page(message: str, url: str) -> dict[str, Any]:
    return reply(tool_uses=[ToolUse("toolu_1", "mcp__db__open_page",
                                    {"message": message, "url": url})])


def tool_result(server: FakeModelServer) -> str:
    for message in server.requests[1].body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block["content"]
                return content if isinstance(content, str) else "".join(
                    part.get("text", "") for part in content)
    raise AssertionError("no tool_result reached the model")


async def turn(agent: AgentConnection, workspace: Path, log: Path, capabilities: dict[str, Any],
               answer: Any, *extra: str) -> list[dict[str, Any]]:
    """Open a session with the server, prompt, answer each agent request with ``answer``;
    the agent's requests."""
    await agent.initialize(**capabilities)
    result = await agent.call("session/new", {"cwd": str(workspace),
                                              "mcpServers": [acp_stdio_server("db", log, *extra)]})
    response, _, requests = await agent.run_prompt(result["sessionId"], "ask me", answer)
    assert response["result"]["stopReason"] == "end_turn", response
    return requests


@pytest.mark.parametrize("legacy", [False, True], ids=["2026-07-28", "2025-11-25"])
async def test_a_form_reaches_the_editor_on_the_tool_call_and_the_answer_the_server(
        agent: AgentConnection, model_server: FakeModelServer, workspace: Path,
        tmp_path: Path, legacy: bool) -> None:
    model_server.enqueue(ask(), reply("Noted."))
    requests = await turn(agent, workspace, tmp_path / "calls.jsonl", FORM,
                          lambda message: {"action": "accept",
                                           "content": {"answer": "eu-west-1"}},
                          *(["--legacy"] if legacy else []))
    [asked] = [r for r in requests if r["method"] == "elicitation/create"]
    params = asked["params"]
    assert params["mode"] == "form"
    assert params["toolCallId"] == "toolu_1"
    assert params["message"] == "The db MCP server asks: Which region?"
    assert params["requestedSchema"]["properties"]["answer"]["type"] == "string"
    assert tool_result(model_server) == "user said eu-west-1"
    assert [c["tool"] for c in calls(tmp_path / "calls.jsonl")] == ["ask_user"]


async def test_a_declined_form_is_declined_to_the_server(
        agent: AgentConnection, model_server: FakeModelServer, workspace: Path,
        tmp_path: Path) -> None:
    model_server.enqueue(ask(), reply("Fine."))
    await turn(agent, workspace, tmp_path / "calls.jsonl", FORM,
               lambda message: {"action": "decline"})
    assert tool_result(model_server) == "user declined"


async def test_an_editor_without_elicitation_is_never_asked(
        agent: AgentConnection, model_server: FakeModelServer, workspace: Path,
        tmp_path: Path) -> None:
    """The server is told the client cannot elicit (no elicitation capability in MCP's
    handshake), so it answers the call with its own error, and nothing reaches the editor."""
    model_server.enqueue(ask(), reply("No answer."))
    requests = await turn(agent, workspace, tmp_path / "calls.jsonl", {},
                          lambda message: pytest.fail(f"asked: {message}"))
    assert requests == []
    assert "did not declare the form elicitation capability" in tool_result(model_server)


async def test_a_url_elicitation_needs_the_url_mode(
        agent: AgentConnection, model_server: FakeModelServer, workspace: Path,
        tmp_path: Path) -> None:
    page = "https://auth.example.com/device?code=XY12"
    model_server.enqueue(open_page("Sign in to the registry", page), reply("Signed in."))
    requests = await turn(agent, workspace, tmp_path / "calls.jsonl", BOTH,
                          lambda message: {"action": "accept"}, "--legacy")
    [asked] = [r for r in requests if r["method"] == "elicitation/create"]
    assert asked["params"]["mode"] == "url" and asked["params"]["url"] == page
    assert asked["params"]["message"] == "The db MCP server asks: Sign in to the registry"
    assert tool_result(model_server) == "user accepted"


async def test_a_url_elicitation_to_a_form_only_editor_is_declined(
        agent: AgentConnection, model_server: FakeModelServer, workspace: Path,
        tmp_path: Path) -> None:
    model_server.enqueue(open_page("Sign in", "https://auth.example.com/x"), reply("No."))
    requests = await turn(agent, workspace, tmp_path / "calls.jsonl", FORM,
                          lambda message: pytest.fail(f"asked: {message}"), "--legacy")
    assert requests == []
    assert tool_result(model_server) == "user declined"


async def test_a_cancel_while_the_form_is_open_withdraws_it(
        agent: AgentConnection, model_server: FakeModelServer, workspace: Path,
        tmp_path: Path) -> None:
    model_server.enqueue(ask(), reply("Not reached."))
    await agent.initialize(**FORM)
    result = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": [
        acp_stdio_server("db", tmp_path / "calls.jsonl")]})
    session = result["sessionId"]
    prompt_id = await agent.send_request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "ask me"}]})
    with trio.fail_after(60):
        while (asked := await agent.receive()).get("method") != "elicitation/create":
            pass
    await agent.notify("session/cancel", {"sessionId": session})
    withdrawn: list[Any] = []
    with trio.fail_after(60):
        while (message := await agent.receive()).get("id") != prompt_id:
            if message.get("method") == "$/cancel_request":
                withdrawn.append(message["params"]["requestId"])
    assert withdrawn == [asked["id"]], "the open form was not withdrawn"
    assert message["result"]["stopReason"] == "cancelled"
