"""The conformance package's command: it runs its own shipped suite, and wants an agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from acp_conformance.cli import joined


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_conformance", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_needs_an_agent_to_check(tmp_path: Path) -> None:
    result = run(cwd=tmp_path)
    assert result.returncode == 2
    assert '--agent "CMD ARGS"' in result.stderr


def test_its_help_shows_the_suites_options_from_any_folder(tmp_path: Path) -> None:
    result = run("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for option in (
        "--agent=AGENT",
        "--agent-env=KEY=VALUE",
        "--model-api",
        "--url=URL",
        "--report=REPORT",
    ):
        assert option in result.stdout


def test_a_value_given_apart_is_joined_to_its_option() -> None:
    """Else pytest would take a path-valued ``--tools PATH`` for a path to test."""
    assert joined(["--tools", "tools.json", "-k", "x", "--agent", "a b", "--report"]) == [
        "--tools=tools.json",
        "-k",
        "x",
        "--agent=a b",
        "--report",
    ]


def test_a_profile_file_that_does_not_load_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text('{"write": {"tool": "w", "arguments": {}}}')
    result = run("--agent", "true", "--tools", "tools.json", cwd=tmp_path)
    assert result.returncode == 4, result.stderr  # pytest's usage error
    assert '"write" never uses' in result.stderr


def test_the_agent_command_names_its_files_absolutely_but_not_its_module(tmp_path: Path) -> None:
    """The agent runs in each test's own workspace, so the paths of the command line it was
    given (relative to where the suite started) are made absolute; a module's name after
    ``-m`` stays a name even where a folder of that name is (``python -m agent`` run from the
    agent's own checkout)."""
    from acp_conformance.harness import _absolute

    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "main.js").write_text("")
    (tmp_path / "agent.py").write_text("")
    assert _absolute(["python", "-m", "agent", "acp"], tmp_path) == ["python", "-m", "agent", "acp"]
    assert _absolute([".venv/bin/agent", "acp"], tmp_path) == [
        str(tmp_path / ".venv/bin/agent"),
        "acp",
    ]
    assert _absolute(["node", "agent/main.js", "--acp"], tmp_path) == [
        "node",
        str(tmp_path / "agent/main.js"),
        "--acp",
    ]
    assert _absolute(["python", "agent.py", "agent"], tmp_path) == [
        "python",
        str(tmp_path / "agent.py"),
        "agent",
    ]
