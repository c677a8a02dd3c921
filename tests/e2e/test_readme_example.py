"""The README's quick-start command works as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.environment import agent_environment

pytestmark = pytest.mark.process  # the example spawns the agent

ROOT = Path(__file__).resolve().parents[2]


def test_hello_client_example_runs_without_a_key(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "examples/hello_client.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=agent_environment(tmp_path / "home"),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "connected to iac-code" in result.stdout
    assert "Hello! I'm iac-code, a coding agent for infrastructure as code." in result.stdout
    assert "[stop reason: end_turn" in result.stdout
    # The agent logged to its file, not to the protocol stream.
    assert "serving ACP on stdio" in (tmp_path / "home" / "logs" / "iaccode.log").read_text()
