"""Drive a real ``iaccode acp`` subprocess over its stdio, line by line, as an editor would.

The driver is the harness's (:class:`acp_conformance.driver.AgentConnection`): every message
the agent sends is kept (``received``, ``raw_lines``) and, when a WireChecker is given, checked
against the official schema as it arrives; a bad line fails the test at once. Agent requests
come out of ``receive`` for the test to answer (``run_prompt(..., on_request)``; an
:class:`RpcError` returned there is sent as the error answer).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from acp_conformance.client import RpcError
from acp_conformance.driver import RECEIVE_TIMEOUT, AgentConnection, spawn

AGENT_COMMAND = [sys.executable, "-m", "iaccode", "acp"]

SEED_ALIASES = {"sessions/list": "session/list", "config/set": "session/set_config_option"}
"""The seed document's method names that iac-code answers too."""

__all__ = ["AGENT_COMMAND", "RECEIVE_TIMEOUT", "SEED_ALIASES", "AgentConnection", "RpcError",
           "spawn_agent"]


@contextlib.asynccontextmanager
async def spawn_agent(env: Mapping[str, str], stderr_path: Path, checker: Any | None = None,
                      command: list[str] | None = None) -> AsyncIterator[AgentConnection]:
    """``async with spawn_agent(env, stderr_path, checker) as agent``: ``iaccode acp`` (or
    ``command``), killed at the end."""
    async with spawn(command or AGENT_COMMAND, env, stderr_path, checker=checker) as agent:
        yield agent
