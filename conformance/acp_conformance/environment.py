"""The environment an agent under test runs in: ours, minus real model-API credentials."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

CREDENTIAL_PREFIXES = ("ANTHROPIC_", "OPENAI_")
"""Variables never passed on: the model APIs the harness fakes, so a real key (or a real
endpoint) of the developer's must not reach a test's agent."""


def agent_environment(
    extra: Mapping[str, str] | None = None, *, drop_prefixes: Iterable[str] = CREDENTIAL_PREFIXES
) -> dict[str, str]:
    """Our environment minus the variables starting with ``drop_prefixes`` (an agent's own
    settings can be added there), with unbuffered output and the test's ``extra`` settings."""
    prefixes = tuple(drop_prefixes)
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env
