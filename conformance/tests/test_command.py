"""The conformance package's command: it runs its own shipped suite, and wants an agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from acp_conformance.cli import joined


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acp_conformance", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_it_needs_an_agent_to_check(tmp_path: Path) -> None:
    result = run(cwd=tmp_path)
    assert result.returncode == 2
    assert '--agent "CMD ARGS"' in result.stderr


def test_its_help_shows_the_suites_options_from_any_folder(tmp_path: Path) -> None:
    result = run("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for option in ("--agent=AGENT", "--agent-env=KEY=VALUE", "--model-api", "--url=URL",
                   "--report=REPORT"):
        assert option in result.stdout


def test_a_value_given_apart_is_joined_to_its_option() -> None:
    """Else pytest would take a path-valued ``--tools PATH`` for a path to test."""
    assert joined(["--tools", "tools.json", "-k", "x", "--agent", "a b", "--report"]) == [
        "--tools=tools.json", "-k", "x", "--agent=a b", "--report"]


def test_a_profile_file_that_does_not_load_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text('{"write": {"tool": "w", "arguments": {}}}')
    result = run("--agent", "true", "--tools", "tools.json", cwd=tmp_path)
    assert result.returncode == 4, result.stderr  # pytest's usage error
    assert '"write" never uses' in result.stderr
