"""What third-party clients (Toad, Zed, acplint, dashboards) rely on: a tool's name on every
update of its call, the diff in the permission question, a final update for every call
whatever ends the turn. A real ``iaccode acp``, the fake model, the test as the editor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iaccode.llm.script import ToolUse, reply
from tests.e2e.test_tools import call, choose, start, tool_updates
from tests.fakes.model_server import FakeModelServer
from tests.support.agent_process import AgentProcess

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def load(agent: AgentProcess, session: str, cwd: Path) -> list[dict[str, Any]]:
    """``session/load``; the replayed ``session/update`` messages."""
    request_id = await agent.send_request("session/load", {
        "sessionId": session, "cwd": str(cwd), "mcpServers": []})
    answer, before = await agent.response(request_id)
    assert "result" in answer, answer
    return [m for m in before if m.get("method") == "session/update"]


async def test_every_update_of_a_call_names_its_tool(
    agent: AgentProcess, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text('resource "x" "y" {}\n')
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_r", "read_file", {"path": "main.tf"}),
                         ToolUse("toolu_b", "bash", {"command": "make plan"}),
                         ToolUse("toolu_x", "no_such_tool", {})]),
        reply("ok"))
    session = await start(agent, workspace, terminal=True)

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        return {
            "session/request_permission": ALLOW,
            "terminal/create": {"terminalId": "term-1"},
            "terminal/wait_for_exit": {"exitCode": 0},
            "terminal/output": {"output": "ok\n", "truncated": False},
            "terminal/release": {},
        }[message["method"]]

    _, updates, requests = await agent.run_prompt(session, "go", editor)
    for call_id, name in (("toolu_r", "read_file"), ("toolu_b", "bash"),
                          ("toolu_x", "no_such_tool")):
        lifecycle = tool_updates(updates, call_id)
        assert lifecycle and all(u.get("name") == name for u in lifecycle), lifecycle
    # The terminal's live update (sent by the tool itself) is named too.
    assert any(c.get("type") == "terminal" for u in tool_updates(updates, "toolu_b")
               for c in u.get("content") or [])
    question = next(r for r in requests if r["method"] == "session/request_permission")
    assert question["params"]["toolCall"]["name"] == "bash"
    # And a reload shows the names again.
    replayed = await load(agent, session, workspace)
    assert tool_updates(replayed, "toolu_r")
    assert all(u.get("name") == "read_file" for u in tool_updates(replayed, "toolu_r"))


async def test_the_permission_question_shows_the_edit_as_a_diff(
    agent: AgentProcess, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text('region = "eu-west-1"\n')
    model_server.enqueue(call("edit_file", path="main.tf", old_string="eu-west-1",
                              new_string="us-east-1"), reply("ok"))
    session = await start(agent, workspace)
    seen_on_disk: list[str] = []

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        # While the user is asked, nothing is written yet.
        seen_on_disk.append((workspace / "main.tf").read_text())
        return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}

    _, _, requests = await agent.run_prompt(session, "move it", editor)
    assert seen_on_disk == ['region = "eu-west-1"\n']
    assert requests[0]["params"]["toolCall"]["content"] == [{
        "type": "diff", "path": str(workspace / "main.tf"),
        "oldText": 'region = "eu-west-1"\n', "newText": 'region = "us-east-1"\n'}]
    assert (workspace / "main.tf").read_text() == 'region = "eu-west-1"\n'


async def test_a_new_file_diff_says_old_text_null_in_the_question_and_the_result(
    agent: AgentProcess, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(call("write_file", path="out/new.tf", content="x = 1\n"), reply("ok"))
    session = await start(agent, workspace)
    seen: list[bool] = []

    def editor(message: dict[str, Any]) -> dict[str, Any]:
        seen.append((workspace / "out").exists())
        return ALLOW

    _, updates, requests = await agent.run_prompt(session, "write", editor)
    diff = {"type": "diff", "path": str(workspace / "out" / "new.tf"), "oldText": None,
            "newText": "x = 1\n"}
    assert seen == [False]  # not even the folder was made before the answer
    assert requests[0]["params"]["toolCall"]["content"] == [diff]
    assert tool_updates(updates, "toolu_write_file")[-1]["content"] == [diff]
    assert (workspace / "out" / "new.tf").read_text() == "x = 1\n"


async def test_an_edit_that_cannot_apply_asks_without_a_diff_and_fails_when_run(
    agent: AgentProcess, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text("a\n")
    model_server.enqueue(call("edit_file", path="main.tf", old_string="zzz",
                              new_string="b"), reply("ok"))
    session = await start(agent, workspace)
    _, updates, requests = await agent.run_prompt(session, "edit", choose("allow_once"))
    assert "content" not in requests[0]["params"]["toolCall"]
    assert tool_updates(updates, "toolu_edit_file")[-1]["status"] == "failed"
