"""Agent-agnostic ACP conformance suite.

    nox -s conformance                          # checks `iaccode acp` against the fake model
    nox -s conformance -- --agent "CMD ARGS"    # checks any ACP agent command
        [--agent-env KEY=VALUE ...] [--tools auto|none|iaccode|claude-code] [--report PATH]
        [--model-api messages|chat]
    pytest conformance --url http://127.0.0.1:PORT/acp --token T --model-port MPORT -n 0
                                                # checks a remote agent (nox -s conformance_remote)

Each test spawns fresh agent processes (one crash cannot cascade) in a clean home directory
(``HOME`` and ``IAC_CODE_HOME``), with ``ANTHROPIC_BASE_URL`` pointing at a fake Messages API
run by the test and a dummy ``ANTHROPIC_API_KEY``. With ``--model-api chat`` the fake is an
OpenAI Chat Completions API instead (``tests/fakes/chat_server.py``), and the agent is told of it
the way iac-code's OpenAI-compatible provider reads it (``IAC_CODE_PROVIDER=openai``,
``IAC_CODE_BASE_URL``, a dummy ``OPENAI_API_KEY``): ``nox -s conformance_openai``. Requirement
ids, tiers and the result
table: ``conformance/requirements.py``; what the suite checks: ``docs/conformance.md``.

A remote agent (``--url``, the ACP remote-transport RFD: Streamable HTTP or WebSocket) is
already running: each "spawn" is a new connection to it instead (``tests/support/
remote_agent.py``), and ending stdin ends the connection (DELETE, or closing the socket). Its
environment is not ours, so start it with ``ANTHROPIC_BASE_URL=http://127.0.0.1:MPORT`` and a
dummy key, and give ``--model-port MPORT``: each test's fake model listens there (so run the
tests one at a time, ``-n 0``). Tests that need their own environment for the agent are n/a.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from conformance.driver import AgentConnection, Transcript, connect_remote, spawn
from conformance.requirements import EVIDENCE, Recorder, WireViolation, not_applicable, note
from conformance.scenarios import (
    PROFILES,
    Model,
    PaddedChatServer,
    PaddedModelServer,
    ToolProfile,
    profile_for,
)
from tests.support.agent_process import agent_environment

DEFAULT_COMMAND = [sys.executable, "-m", "iaccode", "acp"]
PLUGIN = "acp-conformance"

WIRE_ROWS = {
    "schema": ("WIRE-SCHEMA", "every message the agent sends validates against the official "
               "v1 schema (the unstable one for unstable methods it advertises)"),
    "stdout": ("WIRE-STDOUT", "stdout carries only newline-terminated JSON-RPC objects"),
    "caps": ("WIRE-CLIENT-CAPS", "the agent calls fs/* and terminal/* only when the client "
             "advertised them"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-conformance")
    group.addoption("--agent", default=None,
                    help="agent command to check (default: iaccode acp)")
    group.addoption("--agent-env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the agent (repeatable)")
    group.addoption("--tools", default="auto", choices=["auto", "none", *PROFILES],
                    help="tool profile for tool scenarios (auto: from agentInfo.name)")
    group.addoption("--model-api", default="messages", choices=sorted(MODEL_APIS),
                    help="the fake model's API: messages (Anthropic) or chat (OpenAI Chat "
                    "Completions, for iac-code's OpenAI-compatible provider)")
    group.addoption("--agent-timeout", type=float, default=20.0,
                    help="seconds to wait for any one answer from the agent")
    group.addoption("--report", default=None,
                    help="JSON report path (default: .conformance/report.json)")
    group.addoption("--markdown", default=None, metavar="PATH",
                    help="also write the results table as Markdown to PATH")
    group.addoption("--url", default=None, metavar="URL",
                    help="check a remote agent at this endpoint (http://HOST:PORT/acp) "
                    "instead of spawning one")
    group.addoption("--token", default=None, help="bearer token for --url")
    group.addoption("--transport", default="http2", choices=["http2", "http1", "websocket"],
                    help="how to reach --url (default http2: h2c, or h2 over https)")
    group.addoption("--model-port", type=int, default=0, metavar="PORT",
                    help="port of the fake model (127.0.0.1) that a remote agent talks to")
    group.addoption("--all-transcripts", action="store_true",
                    help="keep the wire transcript of every test in the report, not only "
                    "of failures")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requirement(id, tier, summary): the ACP requirement a conformance test "
        "checks; tier is MUST, CAPABILITY or SHOULD")
    if not config.pluginmanager.has_plugin(PLUGIN):
        config.pluginmanager.register(Recorder(config), PLUGIN)


def _absolute(command: list[str], base: Path) -> list[str]:
    """The agent runs in the test's workspace: make relative paths in its command absolute
    (the program when it has a slash, and arguments naming existing files)."""
    out = []
    for number, arg in enumerate(command):
        path = base / arg
        relative = not Path(arg).is_absolute() and not arg.startswith("-")
        if relative and (("/" in arg and number == 0) or (number > 0 and path.exists())):
            arg = str(path)
        out.append(arg)
    return out


MODEL_APIS = {
    "messages": (PaddedModelServer, lambda url: {
        "ANTHROPIC_API_KEY": "conformance-dummy-key", "ANTHROPIC_BASE_URL": url}),
    "chat": (PaddedChatServer, lambda url: {
        "IAC_CODE_PROVIDER": "openai", "IAC_CODE_BASE_URL": url,
        "OPENAI_API_KEY": "conformance-dummy-key"}),
}
"""--model-api -> (the fake model server, the environment that points an agent at it)."""


class Harness:
    """Spawns the agent under test (as often as a test needs) and watches the wire."""

    def __init__(self, item: pytest.Item, root: Path, model: Model) -> None:
        config = item.config
        self.item = item
        self.model = model
        self.home = root / "home"
        self.workspace = root / "workspace"
        self.workspace.mkdir(parents=True)
        self.root = root
        given = config.getoption("--agent")
        self.command = (_absolute(shlex.split(given), config.invocation_params.dir)
                        if given else DEFAULT_COMMAND)
        self.extra_env = dict(kv.split("=", 1) for kv in config.getoption("--agent-env"))
        self.timeout = float(config.getoption("--agent-timeout"))
        self.tools_choice = str(config.getoption("--tools"))
        self.model_env = MODEL_APIS[str(config.getoption("--model-api"))][1](model.base_url)
        self.credential_variables = (
            ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
            if "ANTHROPIC_API_KEY" in self.model_env else ("OPENAI_API_KEY",))
        """What to leave out of the environment for an agent without credentials."""
        self.url: str | None = config.getoption("--url")
        self.token: str | None = config.getoption("--token")
        self.transport = str(config.getoption("--transport"))
        self.transcripts: list[Transcript] = []
        self.connections: list[AgentConnection] = []
        item.stash.setdefault(EVIDENCE, []).append(
            lambda: [t.dump() for t in self.transcripts])

    def environment(self, extra: dict[str, str] | None = None,
                    without: tuple[str, ...] = ()) -> dict[str, str]:
        env = agent_environment(self.home, {"HOME": str(self.home), **self.model_env})
        env.update(self.extra_env)
        env.update(extra or {})
        for name in without:
            env.pop(name, None)
        return env

    @contextlib.asynccontextmanager
    async def spawn(self, extra_env: dict[str, str] | None = None,
                    without: tuple[str, ...] = ()) -> AsyncIterator[AgentConnection]:
        number = len(self.transcripts) + 1
        if self.url is not None:
            if extra_env or without:
                not_applicable("the test sets the agent's environment; a remote agent's is "
                               "not ours to set")
            transcript = Transcript(f"connection#{number}", [self.url, self.transport])
            self.transcripts.append(transcript)
            async with connect_remote(self.url, self.token, self.transport, transcript,
                                      self.timeout) as connection:
                self.connections.append(connection)
                yield connection
            return
        transcript = Transcript(f"agent#{number}", self.command)
        self.transcripts.append(transcript)
        self.home.mkdir(exist_ok=True)
        async with spawn(self.command, self.environment(extra_env, without), self.workspace,
                         transcript,
                         self.root / f"agent{number}.stderr", self.timeout) as connection:
            self.connections.append(connection)
            yield connection

    def maybe_tools(self, connection: AgentConnection) -> ToolProfile | None:
        """The agent's tool profile (``--tools``, or found from its agentInfo), if known."""
        return profile_for(self.tools_choice, connection.init_result)

    def tools(self, connection: AgentConnection) -> ToolProfile:
        """The agent's tool profile, or end the test as n/a."""
        profile = self.maybe_tools(connection)
        if profile is None:
            name = (connection.init_result.get("agentInfo") or {}).get("name")
            not_applicable(f"no tool profile for agentInfo.name {name!r} (give --tools)")
        assert profile is not None
        return profile

    def finish(self) -> None:
        """Record the whole-wire rows; raise WireViolation when the agent broke one."""
        if not self.connections:
            return
        found = {
            "schema": [v for c in self.connections for v in c.schema_violations],
            "stdout": [v for c in self.connections for v in c.stdout_violations],
            "caps": [v for c in self.connections for v in c.services.violations],
        }
        evidence = [t.dump() for t in self.transcripts] if any(found.values()) else []
        for key, (req_id, summary) in WIRE_ROWS.items():
            problems = found[key]
            status = "fail" if problems else "pass"
            reason = problems[0] if problems else "ok"
            if len(problems) > 1:
                reason = f"{len(problems)} violations; first: {reason}"
            note(self.item.user_properties, req_id, "MUST", summary, self.item.nodeid, status,
                 reason, "\n".join(problems[:50]), evidence if problems else [])
        broken = [f"{WIRE_ROWS[k][0]}: {v[0]}" for k, v in found.items() if v]
        if broken:
            raise WireViolation("; ".join(broken))


class Checks:
    """SHOULD-level sub-checks inside a test: recorded in the table, never failing it."""

    def __init__(self, item: pytest.Item, harness: Harness) -> None:
        self.item = item
        self.harness = harness

    def should(self, req_id: str, summary: str, ok: bool, reason: str = "") -> bool:
        evidence = [] if ok else [t.dump() for t in self.harness.transcripts]
        note(self.item.user_properties, req_id, "SHOULD", summary, self.item.nodeid,
             "pass" if ok else "fail", "ok" if ok else (reason or summary), evidence=evidence)
        return ok


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

