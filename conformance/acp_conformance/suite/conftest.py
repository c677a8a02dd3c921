"""Agent-agnostic ACP conformance suite (the pytest options, fixtures and result table).

    acp-conformance --agent "CMD ARGS"          # checks any ACP agent command (pip install)
        [--agent-env KEY=VALUE ...] [--tools auto|none|claude-code|PROFILE.json]
        [--report PATH] [--model-api messages|chat] [-n 2]
    acp-conformance --url http://127.0.0.1:PORT/acp --token T --model-port MPORT -n 0
                                                # checks a remote agent

Each test spawns fresh agent processes (one crash cannot cascade) in a clean home directory
(``HOME``), with ``ANTHROPIC_BASE_URL`` pointing at a fake Messages API run by the test and a
dummy ``ANTHROPIC_API_KEY`` (:mod:`acp_conformance.harness`). With ``--model-api chat`` the
fake is an OpenAI Chat Completions API instead (:mod:`acp_conformance.fakes.chat`), given as
``OPENAI_BASE_URL`` and a dummy ``OPENAI_API_KEY``. An agent that reads its settings elsewhere
is told with ``--agent-env`` (``{model_url}`` in a value is the fake's address). Requirement
ids, tiers and the result table: :mod:`acp_conformance.requirements`; what the suite checks:
the package's README.

A remote agent (``--url``, the ACP remote-transport RFD: Streamable HTTP or WebSocket) is
already running: each "spawn" is a new connection to it instead (:mod:`acp_conformance.remote`),
and ending stdin ends the connection (DELETE, or closing the socket). Its environment is not
ours, so start it with ``ANTHROPIC_BASE_URL=http://127.0.0.1:MPORT`` and a dummy key, and give
``--model-port MPORT``: each test's fake model listens there (so run the tests one at a time,
``-n 0``). Tests that need their own environment for the agent are n/a.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from acp_conformance.driver import AgentConnection
from acp_conformance.harness import MODEL_APIS, TOOLS, Checks, Harness
from acp_conformance.requirements import Recorder
from acp_conformance.scenarios import PROFILES, Model, ProfileError, tools_option

PLUGIN = "acp-conformance"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-conformance")
    group.addoption(
        "--agent", default=None, help="agent command to check (this or --url is needed)"
    )
    group.addoption(
        "--agent-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the agent (repeatable); {model_url} in a "
        "value is the fake model's base URL",
    )
    group.addoption(
        "--agent-debug-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="what makes the agent log verbosely, for the stdout check (repeatable; "
        "DEBUG=* and RUST_LOG=debug are set already)",
    )
    group.addoption(
        "--tools",
        default="auto",
        metavar="|".join(["auto", "none", *PROFILES, "PROFILE.json"]),
        help="the agent's tools for the tool scenarios: auto (from agentInfo.name), "
        "none, a built-in profile or a JSON profile file (see the README)",
    )
    group.addoption(
        "--model-api",
        default="messages",
        choices=sorted(MODEL_APIS),
        help="the fake model's API: messages (Anthropic Messages) or chat (OpenAI "
        "Chat Completions)",
    )
    group.addoption(
        "--agent-timeout",
        type=float,
        default=20.0,
        help="seconds to wait for any one answer from the agent",
    )
    group.addoption(
        "--report", default=None, help="JSON report path (default: .conformance/report.json)"
    )
    group.addoption(
        "--markdown",
        default=None,
        metavar="PATH",
        help="also write the results table as Markdown to PATH",
    )
    group.addoption(
        "--url",
        default=None,
        metavar="URL",
        help="check a remote agent at this endpoint (http://HOST:PORT/acp) instead of spawning one",
    )
    group.addoption("--token", default=None, help="bearer token for --url")
    group.addoption(
        "--transport",
        default="http2",
        choices=["http2", "http1", "websocket"],
        help="how to reach --url (default http2: h2c, or h2 over https)",
    )
    group.addoption(
        "--model-port",
        type=int,
        default=0,
        metavar="PORT",
        help="port of the fake model (127.0.0.1) that a remote agent talks to",
    )
    group.addoption(
        "--all-transcripts",
        action="store_true",
        help="keep the wire transcript of every test in the report, not only of failures",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not (config.getoption("--agent") or config.getoption("--url") or config.getoption("--help")):
        raise pytest.UsageError('give the agent to check: --agent "CMD ARGS" (or --url URL)')
    try:
        config.stash[TOOLS] = tools_option(
            str(config.getoption("--tools")), config.invocation_params.dir
        )
    except ProfileError as exc:
        raise pytest.UsageError(f"--tools: {exc}") from exc
    config.addinivalue_line(
        "markers",
        "requirement(id, tier, summary): the ACP requirement a conformance test "
        "checks; tier is MUST, CAPABILITY or SHOULD",
    )
    if not config.pluginmanager.has_plugin(PLUGIN):
        config.pluginmanager.register(Recorder(config), PLUGIN)


@pytest.fixture
def model(request: pytest.FixtureRequest) -> Iterator[Model]:
    server_class = MODEL_APIS[str(request.config.getoption("--model-api"))][0]
    with server_class(port=int(request.config.getoption("--model-port"))) as server:
        yield Model(server)


@pytest.fixture
def harness(request: pytest.FixtureRequest, tmp_path: Path, model: Model) -> Iterator[Harness]:
    harness = Harness(request.node, tmp_path, model)
    yield harness
    harness.finish()


@pytest.fixture
def workspace(harness: Harness) -> Path:
    return harness.workspace


@pytest.fixture
def check(request: pytest.FixtureRequest, harness: Harness) -> Checks:
    return Checks(request.node, harness)


@pytest.fixture
async def agent(harness: Harness) -> AsyncIterator[AgentConnection]:
    """A fresh agent process, not yet initialized."""
    async with harness.spawn() as connection:
        yield connection
