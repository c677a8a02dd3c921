"""Drive a real ``iaccode acp`` over its stdio, line by line, as an editor would: in the test's
own process by default, or spawned.

The driver is the harness's (:class:`acp_conformance.driver.AgentConnection`): every message
the agent sends is kept (``received``, ``raw_lines``) and, when a WireChecker is given, checked
against the official schema as it arrives; a bad line fails the test at once. Agent requests
come out of ``receive`` for the test to answer (``run_prompt(..., on_request)``; an
:class:`ErrorAnswer` returned there is sent as the error answer).

:func:`spawn_agent` runs the server in the test's process (:mod:`tests.support.in_process`)
unless the test is marked ``@pytest.mark.process``, ``process=True`` is given, another
``command`` is, or pytest runs with ``--agent-processes`` (every agent spawned, as before the
in-process tier: ``tests/README.md``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from acp_conformance.client import ErrorAnswer
from acp_conformance.driver import RECEIVE_TIMEOUT, AgentConnection, spawn

from tests.support.in_process import run_in_process

AGENT_COMMAND = [sys.executable, "-m", "iaccode", "acp"]

METHOD_ALIASES = {"sessions/list": "session/list", "config/set": "session/set_config_option"}
"""Older names of two ACP methods that iac-code answers too: their answers are checked as the
methods they stand for."""

__all__ = [
    "AGENT_COMMAND",
    "RECEIVE_TIMEOUT",
    "METHOD_ALIASES",
    "AgentConnection",
    "ErrorAnswer",
    "spawn_agent",
]

SPAWN_BY_DEFAULT = False
"""Whether :func:`spawn_agent` starts a process when not told: set for each test by
``tests/conftest.py`` (its ``process`` mark, ``--agent-processes``)."""


@contextlib.asynccontextmanager
async def spawn_agent(
    env: Mapping[str, str],
    stderr_path: Path,
    checker: Any | None = None,
    command: list[str] | None = None,
    *,
    process: bool | None = None,
) -> AsyncIterator[AgentConnection]:
    """``async with spawn_agent(env, stderr_path, checker) as agent``: ``iaccode acp`` (or
    ``command``, always a process), in the test's process or spawned (``process``; by default
    as the test is marked), ended at the end."""
    if process is None:
        process = SPAWN_BY_DEFAULT or command is not None
    if not process:
        async with run_in_process(env, stderr_path, checker) as agent:
            yield agent
        return
    async with spawn(command or AGENT_COMMAND, env, stderr_path, checker=checker) as agent:
        yield agent
