"""The environment of an ``iaccode`` the tests start: the harness's (real model-API credentials
left out) without the developer's own ``IAC_CODE_*`` settings, the agent's data in ``home``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from acp_conformance.environment import CREDENTIAL_PREFIXES
from acp_conformance.environment import agent_environment as harness_environment

SETTINGS_PREFIX = "IAC_CODE_"
"""iac-code's settings (``iaccode/config.py``): a developer's must not change a test."""


def agent_environment(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What an agent of the tests runs with: its data dir (``IAC_CODE_HOME``) in ``home``,
    then the test's ``extra`` settings."""
    return harness_environment(
        {"IAC_CODE_HOME": str(home), **(extra or {})},
        drop_prefixes=(*CREDENTIAL_PREFIXES, SETTINGS_PREFIX),
    )
