from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from acp_conformance.environment import agent_environment
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker

from tests.support.agent_process import SEED_ALIASES, AgentConnection, spawn_agent


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer) -> dict[str, str]:
    """An agent that talks to the fake model server, with quick retries."""
    return agent_environment(tmp_path / "home", {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": model_server.base_url,
        "IAC_CODE_MAX_RETRIES": "2",
    })


@pytest.fixture
async def agent(agent_env: dict[str, str], tmp_path: Path) -> AsyncIterator[AgentConnection]:
    """A spawned ``iaccode acp`` whose every message is checked against the official schema."""
    checker = WireChecker(aliases=SEED_ALIASES)
    async with spawn_agent(agent_env, tmp_path / "agent.stderr", checker) as process:
        yield process
