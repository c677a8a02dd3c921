"""Fixtures of every suite, the ``process`` mark, and the Hypothesis profiles.

An agent runs in the test's own process unless the test is marked ``@pytest.mark.process``
(``tests/README.md``); ``--agent-processes`` spawns every agent, as the suite did before the
in-process tier.

Hypothesis: the ``ci`` profile (derandomised: the same examples on every run and machine, no
example database) is loaded unless ``--hypothesis-profile`` names another; ``fuzz`` (``nox -s
fuzz``) draws new random examples on every run (1000 where a test sets no count of its own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from hypothesis import settings

from tests.support import agent_process
from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent
from tests.support.environment import agent_environment

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, max_examples=1000, print_blob=True)
settings.load_profile("ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--agent-processes",
        action="store_true",
        default=False,
        help="spawn every agent as a process (default: in the test's process "
        "unless the test is marked process)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "process: the test's agents are spawned processes "
        "(signals, exit codes, stdio, process trees, start-up)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The process tier first (stable: the order within each tier stays): its tests are the
    long ones (up to a minute each), so two workers (``-n 2``) start them early and end on the
    short in-process ones instead of one worker finishing a long test alone."""
    items.sort(key=lambda item: item.get_closest_marker("process") is None)


@pytest.fixture(autouse=True)
def _agent_kind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Whether ``spawn_agent`` (and the ``agent`` fixture) spawn a process in this test."""
    agent_process.SPAWN_BY_DEFAULT = bool(
        request.node.get_closest_marker("process") or request.config.getoption("--agent-processes")
    )
    yield
    agent_process.SPAWN_BY_DEFAULT = False


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
    return agent_environment(
        tmp_path / "home",
        {
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": model_server.base_url,
            "IAC_CODE_MAX_RETRIES": "2",
        },
    )


@pytest.fixture
async def agent(agent_env: dict[str, str], tmp_path: Path) -> AsyncIterator[AgentConnection]:
    """The agent (in the test's process, or spawned for a test marked ``process``: see
    ``spawn_agent``), its every message checked against the official schema."""
    checker = WireChecker(aliases=METHOD_ALIASES)
    async with spawn_agent(agent_env, tmp_path / "agent.stderr", checker) as process:
        yield process
