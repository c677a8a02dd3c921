"""The harness of one conformance test: it spawns the agent under test (as often as the
test needs) in a clean home, pointed at the test's fake model, and watches the wire.

The agent's environment: ours without real model-API credentials
(:mod:`acp_conformance.environment`), ``HOME`` a fresh folder, the fake model's address and a
dummy key in the variables of its API (:data:`MODEL_APIS`), then ``--agent-env`` (where
``{model_url}`` in a value is the fake model's address, for agents that read it elsewhere).
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from acp_conformance.client import ClientServices
from acp_conformance.driver import (
    SUITE_CLIENT,
    AgentConnection,
    ConnectionTranscript,
    SchemaRouter,
    connect_remote,
    spawn,
)
from acp_conformance.environment import agent_environment
from acp_conformance.requirements import EVIDENCE, WireViolation, not_applicable, note
from acp_conformance.scenarios import (
    Model,
    PaddedChatServer,
    PaddedModelServer,
    ToolProfile,
    profile_for,
)

TOOLS: pytest.StashKey[ToolProfile | str] = pytest.StashKey()
"""The ``--tools`` choice, resolved once (a profile file read) when the suite starts."""

MODEL_URL = "{model_url}"
"""In an ``--agent-env`` value: the fake model's base URL."""

WIRE_ROWS = {
    "schema": (
        "WIRE-SCHEMA",
        "every message the agent sends validates against the official "
        "v1 schema (the unstable one for unstable methods it advertises)",
    ),
    "stdout": ("WIRE-STDOUT", "stdout carries only newline-terminated JSON-RPC objects"),
    "caps": (
        "WIRE-CLIENT-CAPS",
        "the agent calls fs/* and terminal/* only when the client advertised them",
    ),
}


def _absolute(command: list[str], base: Path) -> list[str]:
    """The agent runs in the test's workspace: make relative paths in its command absolute.

    A path is the program when it has a slash (``.venv/bin/agent``), an argument with a slash
    that exists (``examples/agent.js``), or an argument naming an existing file
    (``agent.py``). A folder named like a word is left alone: in ``python -m iaccode acp``,
    run where an ``iaccode/`` folder is, ``iaccode`` is a module's name."""
    out = []
    for number, arg in enumerate(command):
        path = base / arg
        relative = not Path(arg).is_absolute() and not arg.startswith("-")
        after_module_flag = number > 0 and command[number - 1] == "-m"
        if (
            relative
            and not after_module_flag
            and (("/" in arg and (number == 0 or path.exists())) or (number > 0 and path.is_file()))
        ):
            arg = str(path)
        out.append(arg)
    return out


MODEL_APIS: dict[
    str, tuple[type[PaddedModelServer | PaddedChatServer], Callable[[str], dict[str, str]]]
] = {
    "messages": (
        PaddedModelServer,
        lambda url: {"ANTHROPIC_API_KEY": "conformance-dummy-key", "ANTHROPIC_BASE_URL": url},
    ),
    "chat": (
        PaddedChatServer,
        lambda url: {"OPENAI_API_KEY": "conformance-dummy-key", "OPENAI_BASE_URL": url},
    ),
}
"""--model-api -> (the fake model server, the environment that points an agent at it: the
variables the API's official SDKs read)."""

DEBUG_ENV = {"DEBUG": "*", "RUST_LOG": "debug"}
"""What turns on verbose logging in many agents (LIFE-STDOUT); ``--agent-debug-env`` adds."""


def _settings(pairs: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` options as a dict."""
    if bad := [pair for pair in pairs if "=" not in pair]:
        raise pytest.UsageError(f"{option} takes KEY=VALUE, not {bad[0]!r}")
    return dict(pair.split("=", 1) for pair in pairs)


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
        self.command = _absolute(shlex.split(given), config.invocation_params.dir) if given else []
        self.extra_env = {
            key: value.replace(MODEL_URL, model.base_url)
            for key, value in _settings(config.getoption("--agent-env"), "--agent-env").items()
        }
        self.debug_env = {
            **DEBUG_ENV,
            **_settings(config.getoption("--agent-debug-env"), "--agent-debug-env"),
        }
        self.timeout = float(config.getoption("--agent-timeout"))
        self.tools_choice = config.stash[TOOLS]
        self.model_env = MODEL_APIS[str(config.getoption("--model-api"))][1](model.base_url)
        self.credential_variables = (
            ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
            if "ANTHROPIC_API_KEY" in self.model_env
            else ("OPENAI_API_KEY",)
        )
        """What to leave out of the environment for an agent without credentials."""
        self.url: str | None = config.getoption("--url")
        self.token: str | None = config.getoption("--token")
        self.transport = str(config.getoption("--transport"))
        self.transcripts: list[ConnectionTranscript] = []
        self.connections: list[AgentConnection] = []
        item.stash.setdefault(EVIDENCE, []).append(lambda: [t.dump() for t in self.transcripts])

    def environment(
        self, extra: dict[str, str] | None = None, without: tuple[str, ...] = ()
    ) -> dict[str, str]:
        env = agent_environment({"HOME": str(self.home), **self.model_env})
        env.update(self.extra_env)
        env.update(extra or {})
        for name in without:
            env.pop(name, None)
        return env

    @contextlib.asynccontextmanager
    async def spawn(
        self, extra_env: dict[str, str] | None = None, without: tuple[str, ...] = ()
    ) -> AsyncIterator[AgentConnection]:
        number = len(self.transcripts) + 1
        if self.url is not None:
            if extra_env or without:
                not_applicable(
                    "the test sets the agent's environment; a remote agent's is not ours to set"
                )
            transcript = ConnectionTranscript(f"connection#{number}", [self.url, self.transport])
            self.transcripts.append(transcript)
            async with connect_remote(
                self.url, self.token, self.transport, transcript, self.timeout
            ) as connection:
                self.connections.append(connection)
                yield connection
            return
        transcript = ConnectionTranscript(f"agent#{number}", self.command)
        self.transcripts.append(transcript)
        self.home.mkdir(exist_ok=True)
        async with spawn(
            self.command,
            self.environment(extra_env, without),
            self.root / f"agent{number}.stderr",
            cwd=self.workspace,
            checker=SchemaRouter(),
            transcript=transcript,
            timeout=self.timeout,
            services=ClientServices(),
            record_violations=True,
            client_info=SUITE_CLIENT,
        ) as connection:
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
            "caps": [v for c in self.connections if c.services for v in c.services.violations],
        }
        evidence = [t.dump() for t in self.transcripts] if any(found.values()) else []
        for key, (req_id, summary) in WIRE_ROWS.items():
            problems = found[key]
            status = "fail" if problems else "pass"
            reason = problems[0] if problems else "ok"
            if len(problems) > 1:
                reason = f"{len(problems)} violations; first: {reason}"
            note(
                self.item.user_properties,
                req_id,
                "MUST",
                summary,
                self.item.nodeid,
                status,
                reason,
                "\n".join(problems[:50]),
                evidence if problems else [],
            )
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
        note(
            self.item.user_properties,
            req_id,
            "SHOULD",
            summary,
            self.item.nodeid,
            "pass" if ok else "fail",
            "ok" if ok else (reason or summary),
            evidence=evidence,
        )
        return ok
