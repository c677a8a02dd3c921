"""The environment an agent under test runs in: ours, minus real credentials and settings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PRIVATE_PREFIXES = ("ANTHROPIC_", "IAC_CODE_")
"""Variables never passed on: a real key or a developer's setting must not reach a test."""


def agent_environment(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment minus :data:`PRIVATE_PREFIXES`, with the agent's data in ``home``
    (``IAC_CODE_HOME``), unbuffered output, and the test's ``extra`` settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(PRIVATE_PREFIXES)}
    env["IAC_CODE_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env
