"""The protected places (``turn/protected.py``) and the permission rules around them: what a
write must ask for in every mode, which bash lines name such a place, and that an *Always
allow* covers the project's files only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from iaccode.config import Config
from iaccode.protocol.convert import tool_input
from iaccode.tools.base import resolve_path
from iaccode.tools.registry import builtin_tools
from iaccode.turn import permissions
from iaccode.turn.permissions import Decision
from iaccode.turn.protected import Protected

TOOLS = builtin_tools()


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(user home, agent home, project), real paths."""
    root = Path(os.path.realpath(tmp_path))
    home, agent, project = root / "home", root / "agent", root / "home" / "src" / "proj"
    for folder in (home / ".ssh", agent, project):
        folder.mkdir(parents=True)
    return home, agent, project


def protected(places: tuple[Path, Path, Path]) -> Protected:
    home, agent, _ = places
    return Protected.of(Config(home=agent), user_home=home)


@pytest.mark.parametrize("rel", [
    "~/.ssh/authorized_keys", "~/.ssh/new-key", "~/.SSH/config", "~/.bashrc", "~/.zshenv",
    "~/.aws/credentials", "~/.kube/config", "~/.config/gcloud/x", "~/.aliyun/config.json",
    "~/.azure/x", "~/.terraform.d/credentials.tfrc.json", "~/.gitconfig",
    "~/.config/git/config", "~/.claude/settings.json", "~/.config/zed/settings.json",
    "AGENT/config.toml", "AGENT/AGENTS.md", "AGENT/sessions/x/meta.json",
    "AGENT/tool-output/other/t1.txt", ".git/config", ".git/hooks/pre-commit",
    "sub/.git/config", ".vscode/tasks.json", ".envrc", "../.git/hooks/x", "/etc/profile",
    "~/src/proj/../../.profile",
])
def test_protected_paths(places: tuple[Path, Path, Path], rel: str) -> None:
    home, agent, project = places
    raw = rel.replace("AGENT", str(agent)).replace("~", str(home))
    assert protected(places).reason(resolve_path(project, raw)) is not None, rel


@pytest.mark.parametrize("rel", ["main.tf", "src/app.py", ".github/workflows/ci.yml",
                                 "~/notes.txt", "~/.sshx", "gitconfig", "~/src/other/x"])
def test_ordinary_paths(places: tuple[Path, Path, Path], rel: str) -> None:
    home, _, project = places
    assert protected(places).reason(resolve_path(project, rel.replace("~", str(home)))) is None


def test_a_symlink_into_a_protected_folder_is_judged_where_it_leads(
        places: tuple[Path, Path, Path]) -> None:
    home, _, project = places
    (project / "keys").symlink_to(home / ".ssh")
    why = protected(places).reason(resolve_path(project, "keys/authorized_keys"))
    assert why == f"{home}/.ssh/authorized_keys: another program's credentials and settings"


def test_the_serve_token_file(places: tuple[Path, Path, Path], tmp_path: Path) -> None:
    home, agent, project = places
    token = tmp_path / "elsewhere" / "token"
    config = Config(home=agent)
    from attrs import evolve
    config = evolve(config, serve=evolve(config.serve, token_path=token))
    why = Protected.of(config, user_home=home).reason(resolve_path(project, str(token)))
    assert why is not None and "the token file of iaccode serve" in why


@pytest.mark.parametrize("command", [
    "echo x >> ~/.bashrc", "echo x>>~/.bashrc", "tee -a $HOME/.ssh/authorized_keys",
    'cat k > "${HOME}/.ssh/authorized_keys"', "cp x .git/hooks/pre-commit",
    "printf x > $IAC_CODE_HOME/config.toml", "sed -i s/a/b/ ~/.aws/credentials",
    "ln -sf /tmp/x ~/.kube/config", "install -m 755 x .git/hooks/post-checkout",
    "python -c 'open(\"/etc/cron.d/x\", \"w\")'", "curl -o ~/.zshrc http://x",
    "git config --file=.git/config core.fsmonitor x",
])
def test_bash_lines_that_name_a_protected_path(places: tuple[Path, Path, Path],
                                               command: str) -> None:
    _, _, project = places
    assert protected(places).command_reason(command, project) is not None, command


@pytest.mark.parametrize("command", ["ls -la", "terraform plan", "cat main.tf > out.txt",
                                     "echo $HOME", "git status", "cd .. && ls"])
def test_bash_lines_that_do_not(places: tuple[Path, Path, Path], command: str) -> None:
    _, _, project = places
    assert protected(places).command_reason(command, project) is None, command


def decide(places: tuple[Path, Path, Path], name: str, mode: str,
           remembered: dict[str, bool] | None = None, **args: Any) -> permissions.Verdict:
    tool = TOOLS[name]
    return permissions.decide(tool, tool_input(args, tool.input_type), mode=mode,
                              cwd=places[2], remembered=remembered or {},
                              protected=protected(places))


@pytest.mark.parametrize("mode", ["default", "accept_edits", "bypass"])
def test_a_protected_write_asks_in_every_mode(places: tuple[Path, Path, Path],
                                              mode: str) -> None:
    for remembered in ({}, {"write_file": True}):
        verdict = decide(places, "write_file", mode, remembered, path=".git/config",
                         content="x")
        assert verdict.decision is Decision.ASK and verdict.protected, (mode, remembered)
        assert verdict.remember is False


def test_always_reject_still_refuses(places: tuple[Path, Path, Path]) -> None:
    verdict = decide(places, "write_file", "bypass", {"write_file": False},
                     path="~/.bashrc", content="x")
    assert verdict.decision is Decision.REFUSE


def test_always_allow_covers_the_project_only(places: tuple[Path, Path, Path]) -> None:
    home = places[0]
    allowed = {"write_file": True, "read_file": True}
    assert decide(places, "write_file", "default", allowed,
                  path="main.tf", content="x").decision is Decision.RUN
    outside = decide(places, "write_file", "default", allowed,
                     path=str(home / "notes.txt"), content="x")
    assert outside.decision is Decision.ASK and outside.remember is False
    read = decide(places, "read_file", "default", allowed, path=str(home / "notes.txt"))
    assert read.decision is Decision.ASK and read.remember is False
    # Inside the project the question offers Always allow.
    assert decide(places, "write_file", "default", {}, path="main.tf",
                  content="x").remember is True
