"""Usage end to end: thinking tokens where the API reports them, and the cost of known models."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from acp_conformance.script import reply

from iaccode.llm.prices import PRICES
from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent

PRICED = "claude-sonnet-4-5"


@pytest.fixture
def agent_env(agent_env: dict[str, str]) -> dict[str, str]:
    return {**agent_env, "IAC_CODE_MODEL": PRICED}


def thinking_reply(thought_tokens: int, **tokens: Any) -> dict:
    exchange = reply("answer", thinking="hmm", **tokens)
    for event in exchange["events"]:
        if event["type"] == "message_delta":
            event["usage"]["output_tokens_details"] = {"thinking_tokens": thought_tokens}
    return exchange


def spawn(
    env: dict[str, str], tmp_path: Path, name: str
) -> AbstractAsyncContextManager[AgentConnection]:
    return spawn_agent(env, tmp_path / f"{name}.stderr", WireChecker(aliases=METHOD_ALIASES))


def usage_updates(messages: list[dict]) -> list[dict]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "usage_update"
    ]


async def test_thought_tokens_and_cost_of_a_priced_model(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        thinking_reply(
            30,
            input_tokens=1000,
            output_tokens=50,
            cache_read_input_tokens=10_000,
            cache_creation_input_tokens=2000,
        ),
        thinking_reply(5, input_tokens=10, output_tokens=20),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    response, before = await agent.prompt(session, "one")
    assert response["result"]["usage"]["thoughtTokens"] == 30
    price = PRICES[PRICED]
    first = (
        1000 * price.input
        + 50 * price.output
        + 10_000 * price.input * 0.1
        + 2000 * price.input * 1.25
    ) / 1e6
    [update] = usage_updates(before)
    assert update["cost"]["currency"] == "USD"
    assert update["cost"]["amount"] == pytest.approx(first, abs=1e-6)
    response, before = await agent.prompt(session, "two")
    [update] = usage_updates(before)
    second = (10 * price.input + 20 * price.output) / 1e6
    assert update["cost"]["amount"] == pytest.approx(first + second, abs=1e-6)  # cumulative
    assert response["result"]["usage"]["thoughtTokens"] == 5


async def test_no_cost_once_a_model_we_do_not_price_was_used(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply("a"), reply("b"), reply("c"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    _, before = await agent.prompt(session, "one")
    assert "cost" in usage_updates(before)[0]
    await agent.call(
        "session/set_config_option",
        {"sessionId": session, "configId": "model", "value": "claude-sonnet-5-5"},
    )
    for text in ("two", "three"):
        response, before = await agent.prompt(session, text)
        [update] = usage_updates(before)
        assert "cost" not in update
        assert "thoughtTokens" not in response["result"]["usage"]  # the API said nothing


async def test_a_loaded_session_shows_and_goes_on_counting_its_cost(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply("a", input_tokens=1000, output_tokens=50),
        reply("b", input_tokens=2000, output_tokens=10),
    )
    price = PRICES[PRICED]
    first = (1000 * price.input + 50 * price.output) / 1e6
    async with spawn(agent_env, tmp_path, "first") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        await agent.prompt(session, "one")
    async with spawn(agent_env, tmp_path, "second") as agent:  # a new process: the disk remembers
        await agent.initialize()
        await agent.call(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        shown = await agent.receive_update("usage_update")
        update = shown["params"]["update"]
        assert update["used"] == 1000 + 50 and update["size"] == 200_000
        assert update["cost"]["amount"] == pytest.approx(first, abs=1e-6)

        _, before = await agent.prompt(session, "two")
        [update] = usage_updates(before)
        second = (2000 * price.input + 10 * price.output) / 1e6
        assert update["cost"]["amount"] == pytest.approx(first + second, abs=1e-6)

        fork = (
            await agent.call(
                "session/fork", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
            )
        )["sessionId"]
        shown = await agent.receive_update("usage_update")
        assert shown["params"]["sessionId"] == fork
        assert shown["params"]["update"]["used"] == 2000 + 10  # the same context
        assert shown["params"]["update"]["cost"]["amount"] == 0  # its own spending

        await agent.call(
            "session/resume", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        shown = await agent.receive_update("usage_update")
        assert shown["params"]["sessionId"] == session
        assert shown["params"]["update"]["cost"]["amount"] == pytest.approx(
            first + second, abs=1e-6
        )


async def test_a_new_session_shows_no_usage_before_its_first_request(
    agent: AgentConnection, workspace: Path
) -> None:
    await agent.initialize()
    session = await agent.new_session(workspace)
    assert usage_updates(await agent.late_updates(session)) == []
