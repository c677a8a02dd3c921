"""Agent-agnostic ACP conformance checks.

    nox -s conformance                          # checks `iaccode acp` with a scripted model
    nox -s conformance -- --agent "CMD ARGS"    # checks any ACP agent command

Each test spawns a fresh agent process, so one crash cannot cascade. Every message the agent
sends is validated against the official schema (npm `@agentclientprotocol/sdk`, pinned).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from iaccode.llm.script import dump_script, reply
from tests.support.acp_schema import WireChecker
from tests.support.agent_process import AgentProcess, agent_environment, spawn_agent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--agent", default=None,
                     help="agent command to check (default: iaccode acp with a scripted model)")


@pytest.fixture
def agent_command(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    given = request.config.getoption("--agent")
    if given:
        return shlex.split(given)
    script = tmp_path / "model-script.json"
    dump_script([reply("Conformance check answer.")] * 4, script)
    return [sys.executable, "-m", "iaccode", "acp", "--model-script", str(script)]


@pytest.fixture
async def agent(agent_command: list[str], tmp_path: Path) -> AsyncIterator[AgentProcess]:
    env = agent_environment(tmp_path / "home")
    async with spawn_agent(env, tmp_path / "agent.stderr", WireChecker(),
                           command=agent_command) as process:
        yield process
