"""Prompt caching through a real ``iaccode acp``: the breakpoints of a tool loop, and the cache
tokens the (fake) API computes from them reported in the prompt's usage."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import AgentConnection


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    with FakeModelServer(prompt_cache=True) as server:
        yield server


def breakpoints(body: dict) -> list[str]:
    """Where the request's cache_control marks are: "system", "tools", or "message N"."""
    where = []
    system = body.get("system")
    for block in system if isinstance(system, list) else []:
        if "cache_control" in block:
            where.append("system")
    where += ["tools" for tool in body.get("tools", []) if "cache_control" in tool]
    for number, message in enumerate(body["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        for index, block in enumerate(content):
            if "cache_control" in block:
                last = index == len(content) - 1
                where.append(f"message {number}" + ("" if last else f" block {index}"))
    return where


async def test_a_tool_loop_reads_each_previous_request_from_cache(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    for name in ("a", "b", "c"):
        (workspace / f"{name}.tf").write_text(f'resource "null_resource" "{name}" {{}}\n' * 50)
    model_server.enqueue(
        *[
            reply(tool_uses=[ToolUse(f"toolu_{n}", "read_file", {"path": f"{n}.tf"})])
            for n in "abc"
        ],
        reply("All three read."),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    response, updates = await agent.prompt(session, "read the three files")
    assert response["result"]["stopReason"] == "end_turn"

    bodies = [request.body for request in model_server.requests]
    assert len(bodies) == 4
    for body in bodies:
        assert json.dumps(body).count('"cache_control"') <= 4
        assert breakpoints(body) == ["system", f"message {len(body['messages']) - 1}"]
    usage = model_server.cache_usage
    assert usage[0]["cache_read_input_tokens"] == 0 and usage[0]["cache_creation_input_tokens"]
    for before, now in zip(usage, usage[1:], strict=False):
        # each request reads all of the one before it (its prefix up to its last breakpoint)
        assert now["cache_read_input_tokens"] == (
            before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        )
        assert now["cache_creation_input_tokens"] > 0
    reported = response["result"]["usage"]
    assert reported["cachedReadTokens"] == sum(u["cache_read_input_tokens"] for u in usage)
    assert reported["cachedWriteTokens"] == sum(u["cache_creation_input_tokens"] for u in usage)
    assert reported["inputTokens"] == sum(sum(u.values()) for u in usage)


async def test_the_next_prompt_reads_the_conversation_so_far(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply("first answer"), reply("second answer"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    await agent.prompt(session, "first")
    await agent.prompt(session, "second")
    first, second = model_server.cache_usage
    assert second["cache_read_input_tokens"] == (
        first["cache_read_input_tokens"] + first["cache_creation_input_tokens"]
    )
