"""MCP servers that do not play fair: real MCP servers on the official SDK
(``acp_conformance/fakes/mcp_server.py --hostile MODE``) against a real ``iaccode acp``.

- A ``tools/list`` that never stops paging, and one with 3,000 tools: the agent takes what fits
  (a bounded number of pages, tools and bytes of definitions), goes on with it, and tells the
  user once what it left out; the model request stays small.
- A re-listing after ``list_changed`` that never answers: it times out, and the server's next
  change is still picked up.
- Tool and prompt names and titles with newlines, terminal escapes, bidirectional overrides and
  zero-width characters: the editor is shown one line of printable text; the tool still runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.mcp_server import HOSTILE_NAME, acp_stdio_server, calls
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from iaccode.mcp.names import tool_name
from tests.adversarial.conftest import Figures
from tests.adversarial.support import allow, http_agent, rss_kib

CATEGORY = "mcp_servers"
MAX_ITEMS, MAX_PAGES, MAX_DEFINITION_BYTES, LIST_TIMEOUT = 200, 20, 256 * 1024, 20.0
"""The bounds docs/mcp.md promises: tools per server, pages of one list, bytes of a
server's tool definitions, seconds a list may take."""
BIDI_AND_INVISIBLE = set(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200e\u200f\u061c\ufeff"
)


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


def hostile(name: str, log: Path, mode: str) -> dict[str, Any]:
    return acp_stdio_server(name, log, "--hostile", mode)


async def open_with(agent: Any, workspace: Path, servers: list[dict[str, Any]]) -> str:
    await agent.initialize()
    result = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": servers})
    return str(result["sessionId"])


def mcp_tools(body: dict[str, Any], server: str) -> list[dict[str, Any]]:
    return [t for t in body.get("tools") or [] if t["name"].startswith(f"mcp__{server}__")]


def told(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["params"]["update"]["content"].get("text", "")
        for u in updates
        if u.get("method") == "session/update"
        and u["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def listings(log: Path) -> list[dict[str, Any]]:
    return [c for c in calls(log) if c["tool"] == "tools/list"]


async def listed(log: Path, count: int, seconds: float) -> None:
    """Until the server has answered (or started) ``count`` tools/list requests."""
    for _ in range(int(seconds * 5)):
        if len(listings(log)) >= count:
            return
        await trio.sleep(0.2)
    raise AssertionError(f"{len(listings(log))} tools/list requests, not {count}")


@pytest.mark.parametrize("mode", ["endless", "many"])
async def test_a_listing_that_does_not_end_is_bounded(
    mode: str, tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    log = tmp_path / "mcp.jsonl"
    model_server.enqueue(reply("first"), reply("second"))
    async with http_agent(tmp_path, model_server.base_url) as agent:
        session = await open_with(agent, workspace, [hostile("flood", log, mode)])
        _, first, _ = await agent.run_prompt(session, "hello", timeout=90)
        _, second, _ = await agent.run_prompt(session, "again", timeout=90)
        rss = rss_kib(agent.process.pid)
    body = model_server.requests[0].body
    tools = mcp_tools(body, "flood")
    assert 0 < len(tools) <= MAX_ITEMS, f"{len(tools)} tools of the server reached the model"
    assert len(json.dumps(tools)) <= MAX_DEFINITION_BYTES * 1.2
    assert len(model_server.requests[0].raw_body) < 1024 * 1024
    assert len(listings(log)) <= MAX_PAGES
    notice = told(first)
    assert "MCP server flood listed more than the agent takes" in notice, notice
    assert "listed more" not in told(second), "the user was told twice"
    assert rss < 300 * 1024, f"the agent holds {rss} KiB"  # with the SDK: ~130 MiB
    figures.add(CATEGORY, f"{mode}_tools_kept", len(tools))
    figures.add(CATEGORY, "cases", 1)


async def test_a_relisting_that_never_answers_times_out(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    """The first listing after a change hangs: the agent gives up on it after LIST_TIMEOUT and
    takes the server's next change (before, the hung listing held the change stream for good)."""
    log = tmp_path / "mcp.jsonl"
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_1", "mcp__db__add_tool", {"name": "first"})]),
        reply("added"),
        reply(tool_uses=[ToolUse("toolu_2", "mcp__db__add_tool", {"name": "second"})]),
        reply("added"),
        reply("listed"),
    )
    async with http_agent(tmp_path, model_server.base_url) as agent:
        session = await open_with(agent, workspace, [hostile("db", log, "hang-relist")])
        await agent.run_prompt(session, "add one", allow, timeout=60)
        await listed(log, 2, 30)  # the listing that hangs has started
        await agent.run_prompt(session, "add another", allow, timeout=60)
        await listed(log, 3, LIST_TIMEOUT + 30)  # given up on, and listed again
        await trio.sleep(1)
        await agent.run_prompt(session, "what is there", timeout=60)
    names = {t["name"] for t in model_server.requests[-1].body["tools"]}
    assert {"mcp__db__first", "mcp__db__second"} <= names, sorted(names)
    figures.add(CATEGORY, "hung_listings_given_up", 1)
    figures.add(CATEGORY, "cases", 1)


def unsafe(text: str) -> list[str]:
    return [hex(ord(c)) for c in text if not c.isprintable() or c in BIDI_AND_INVISIBLE]


async def test_hostile_names_and_titles_are_shown_as_printable_text(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    log = tmp_path / "mcp.jsonl"
    name = tool_name("evil", HOSTILE_NAME)
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_h", name, {})]), reply("ok"), reply("listed")
    )
    async with http_agent(tmp_path, model_server.base_url) as agent:
        session = await open_with(agent, workspace, [hostile("evil", log, "names")])
        _, updates, _ = await agent.run_prompt(session, "run it", allow, timeout=60)
        _, listing, _ = await agent.run_prompt(session, "/mcp", timeout=60)
        received = list(agent.received)
    shown: list[str] = []
    for message in received:
        update = (message.get("params") or {}).get("update") or {}
        if update.get("toolCallId") == "toolu_h" and "title" in update:
            shown.append(update["title"])
        for command in update.get("availableCommands") or []:
            shown += [
                command["name"],
                command.get("description", ""),
                (command.get("input") or {}).get("hint", ""),
            ]
        if message.get("method") == "session/request_permission":
            shown.append(message["params"]["toolCall"].get("title") or "")
    shown += told(listing).splitlines()  # /mcp: a line per server
    assert "evil toolexe.txt (evil MCP server)" in shown, shown  # there, made readable
    assert any(text.startswith("evil:audit-SYSTEM:") for text in shown), shown
    problems = {text: unsafe(text) for text in shown if unsafe(text)}
    assert problems == {}, f"shown raw: {problems}"
    assert {"tool": "hostile", "arguments": {}} in calls(log)  # the tool still runs
    figures.add(CATEGORY, "hostile_names_shown", len(shown))
    figures.add(CATEGORY, "cases", 1)


async def test_huge_tool_definitions_do_not_grow_the_agent(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    """After its own tools, the server pages on with one tool a page whose description is
    24 MiB: every page under the line limit, twenty of them. The agent kept each until the
    listing ended (near 500 MiB of descriptions at once) before it dropped them for their size;
    it drops each as it comes now, and the server's own tools work."""
    log = tmp_path / "mcp.jsonl"
    model_server.enqueue(
        reply("hello"),
        reply(tool_uses=[ToolUse("toolu_l", "mcp__big__lookup", {"key": "k"})]),
        reply("ok"),
    )
    async with http_agent(tmp_path, model_server.base_url) as agent:
        session = await open_with(agent, workspace, [hostile("big", log, "huge")])
        # The listing takes its time: the first prompt waits for it a while, so the user is
        # told what was dropped with the first prompt or, on a slow machine, with the second.
        _, first, _ = await agent.run_prompt(session, "hello", timeout=60)
        await listed(log, MAX_PAGES, 600)  # a stall's deadline: 180 s was short when busy
        _, updates, _ = await agent.run_prompt(session, "look it up", allow, timeout=120)
        peak = peak_rss_kib(agent.process.pid)
    result = model_server.requests[2].body["messages"][-1]["content"][0]
    assert result["content"] == "value of k", result
    tools = mcp_tools(model_server.requests[1].body, "big")
    assert tools and not any(t["name"].startswith("mcp__big__huge") for t in tools)
    said = told(first) + told(updates)
    assert said.count("listed more than the agent takes") == 1, said
    assert peak < 400 * 1024, f"the agent grew to {peak // 1024} MiB"
    figures.add(CATEGORY, "huge_definitions_dropped", len(listings(log)) - 1)
    figures.add(CATEGORY, "cases", 1)


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")
