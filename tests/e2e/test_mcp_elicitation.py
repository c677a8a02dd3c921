"""An MCP server's elicitation passed through to the editor: the real fake MCP server
(acp_conformance/fakes/mcp_server.py, its ``ask_user`` tool elicits a name with the ``mcp``
SDK), a real ``iaccode acp``, and this test as the editor answering ``elicitation/create``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp_conformance.fakes.mcp_server import acp_stdio_server, calls
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import reply

from tests.e2e.test_mcp import call, result_for, tool_updates
from tests.e2e.test_plan_gate import SLACK
from tests.support.agent_process import AgentConnection


@pytest.fixture
def calls_log(tmp_path: Path) -> Path:
    return tmp_path / "mcp-calls.jsonl"


async def open_session(
    agent: AgentConnection, workspace: Path, log: Path, **capabilities: Any
) -> str:
    await agent.initialize(**capabilities)
    result = await agent.call(
        "session/new", {"cwd": str(workspace), "mcpServers": [acp_stdio_server("db", log)]}
    )
    return str(result["sessionId"])


async def test_the_servers_form_reaches_the_editor_and_its_answer_the_server(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(
        call("mcp__db__ask_user", question="Which name for the table?"), reply("done")
    )
    session = await open_session(agent, workspace, calls_log, elicitation={"form": {}})
    forms: list[dict[str, Any]] = []

    def user(message: dict[str, Any]) -> dict[str, Any]:
        assert message["method"] == "elicitation/create"
        forms.append(message["params"])
        return {"action": "accept", "content": {"name": "orders"}}

    _, updates, _ = await agent.run_prompt(session, "ask", user, timeout=SLACK)
    (form,) = forms
    assert form["mode"] == "form"
    assert form["message"] == "The db MCP server asks: Which name for the table?"
    assert form["toolCallId"] == "toolu_1", "shown beside the MCP tool call"
    assert form["requestedSchema"]["properties"]["name"]["type"] == "string"
    assert result_for(model_server, 1)["content"] == "the user said orders"
    assert tool_updates(updates)[-1]["status"] == "completed"


async def test_an_editor_without_elicitation_declines_for_the_user(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__ask_user", question="Name?"), reply("done"))
    session = await open_session(agent, workspace, calls_log)
    _, _, asked = await agent.run_prompt(session, "ask", timeout=SLACK)
    assert asked == [], "nothing the editor cannot show"
    assert result_for(model_server, 1)["content"] == "the user did not answer (decline)"


async def test_a_cancel_while_the_form_is_open_withdraws_it(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, calls_log: Path
) -> None:
    model_server.enqueue(call("mcp__db__ask_user", question="Name?"))
    session = await open_session(agent, workspace, calls_log, elicitation={"form": {}})
    prompt = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "ask"}]}
    )
    while (message := await agent.receive(SLACK)).get("method") != "elicitation/create":
        pass
    await agent.notify("session/cancel", {"sessionId": session})
    withdrawn = None
    while True:
        message = await agent.receive(SLACK)
        if message.get("method") == "$/cancel_request":
            withdrawn = message["params"]["requestId"]
        if message.get("id") == prompt and "method" not in message:
            break
    assert message["result"]["stopReason"] == "cancelled"
    assert withdrawn is not None, "the open form is withdrawn ($/cancel_request)"
    assert calls(calls_log) == [], "the tool never got an answer"
