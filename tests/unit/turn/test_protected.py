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


@pytest.mark.parametrize(
    "rel",
    [
        "~/.ssh/authorized_keys",
        "~/.ssh/new-key",
        "~/.SSH/config",
        "~/.bashrc",
        "~/.zshenv",
        "~/.aws/credentials",
        "~/.kube/config",
        "~/.config/gcloud/x",
        "~/.aliyun/config.json",
        "~/.azure/x",
        "~/.terraform.d/credentials.tfrc.json",
        "~/.gitconfig",
        "~/.config/git/config",
        "~/.claude/settings.json",
        "~/.config/zed/settings.json",
        "AGENT/config.toml",
        "AGENT/AGENTS.md",
        "AGENT/sessions/x/meta.json",
        "AGENT/tool-output/other/t1.txt",
        ".git/config",
        ".git/hooks/pre-commit",
        "sub/.git/config",
        ".vscode/tasks.json",
        ".envrc",
        "../.git/hooks/x",
        "/etc/profile",
        "~/src/proj/../../.profile",
    ],
)
def test_protected_paths(places: tuple[Path, Path, Path], rel: str) -> None:
    home, agent, project = places
    raw = rel.replace("AGENT", str(agent)).replace("~", str(home))
    assert protected(places).reason(resolve_path(project, raw)) is not None, rel


@pytest.mark.parametrize(
    "rel",
    [
        "main.tf",
        "src/app.py",
        ".github/workflows/ci.yml",
        "~/notes.txt",
        "~/.sshx",
        "gitconfig",
        "~/src/other/x",
    ],
)
def test_ordinary_paths(places: tuple[Path, Path, Path], rel: str) -> None:
    home, _, project = places
    assert protected(places).reason(resolve_path(project, rel.replace("~", str(home)))) is None


def test_a_symlink_into_a_protected_folder_is_judged_where_it_leads(
    places: tuple[Path, Path, Path],
) -> None:
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


@pytest.mark.parametrize(
    "command",
    [
        "echo x >> ~/.bashrc",
        "echo x>>~/.bashrc",
        "tee -a $HOME/.ssh/authorized_keys",
        'cat k > "${HOME}/.ssh/authorized_keys"',
        "cp x .git/hooks/pre-commit",
        "printf x > $IAC_CODE_HOME/config.toml",
        "sed -i s/a/b/ ~/.aws/credentials",
        "ln -sf /tmp/x ~/.kube/config",
        "install -m 755 x .git/hooks/post-checkout",
        'python -c \'open("/etc/cron.d/x", "w")\'',
        "curl -o ~/.zshrc http://x",
        "git config --file=.git/config core.fsmonitor x",
    ],
)
def test_bash_lines_that_name_a_protected_path(
    places: tuple[Path, Path, Path], command: str
) -> None:
    _, _, project = places
    assert protected(places).command_reason(command, project) is not None, command


@pytest.mark.parametrize(
    "command",
    [
        'echo x >> "$HOME"/.bashrc',
        "echo x >> ~/'.bashrc'",
        "echo x >> \"${HOME}\"'/.bashrc'",
        "echo x | tee -a ~/.bashr?",
        "echo x >> ~/.{zshrc,nothing}",
        "cp x ~/.ss[h]",
        "bash -c 'echo x >> ~/.bashrc'",
        "echo x > ~/'.local/bin/git'",
    ],
)
def test_bash_lines_that_name_a_protected_path_as_a_shell_reads_them(
    places: tuple[Path, Path, Path], command: str
) -> None:
    home, _, project = places
    (home / ".bashrc").write_text("x\n")
    assert protected(places).command_reason(command, project) is not None, command


def test_the_accounts_own_home_is_protected_as_user(places: tuple[Path, Path, Path]) -> None:
    """``$HOME`` set elsewhere: ``~user`` (and its real path) is the account's home still."""
    import pwd

    account = pwd.getpwuid(os.geteuid())
    _, _, project = places
    guard = protected(places)
    assert guard.reason(resolve_path(project, f"~{account.pw_name}/.ssh/x")) is not None
    assert guard.command_reason(f"touch ~{account.pw_name}/.bashrc", project) is not None


def test_a_protected_place_that_is_a_symlink_protects_its_target(
    places: tuple[Path, Path, Path],
) -> None:
    home, agent, project = places
    (home / "dotfiles" / "ssh").mkdir(parents=True)
    (home / ".ssh").rmdir()
    (home / ".ssh").symlink_to("dotfiles/ssh")
    (home / "dotfiles" / "bashrc").write_text("x\n")
    (home / ".bashrc").symlink_to("dotfiles/bashrc")
    guard = protected(places)
    for raw in (
        "~/.ssh/authorized_keys",
        "~/dotfiles/ssh/authorized_keys",
        "~/.bashrc",
        "~/dotfiles/bashrc",
    ):
        assert guard.reason(resolve_path(project, raw.replace("~", str(home)))), raw
    assert guard.reason(resolve_path(project, str(home / "dotfiles" / "vimrc-notes"))) is None


def test_a_folder_on_path_protects_what_is_directly_in_it(
    places: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, agent, project = places
    tools, inside = home / "tools", project / "bin"
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join([str(tools), str(home), "relative/bin", str(inside), os.environ["PATH"]]),
    )
    guard = Protected.of(Config(home=agent), user_home=home, project=project)
    assert guard.reason(tools / "git") is not None
    assert guard.reason(home / "git") is not None  # $HOME itself on PATH
    assert guard.reason(tools / "sub" / "x") is None  # PATH finds no program in a subfolder
    assert guard.reason(project / "main.tf") is None  # the project below a PATH folder
    assert guard.reason(inside / "deploy") is None  # the project's own bin (direnv PATH_add)


def test_the_project_git_folder_is_protected_where_it_lives(
    places: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    import subprocess

    home, agent, project = places
    gitdir = tmp_path / "gitdirs" / "proj"
    gitdir.parent.mkdir()
    subprocess.run(["git", "init", "-q", f"--separate-git-dir={gitdir}"], cwd=project, check=True)
    guard = Protected.of(Config(home=agent), user_home=home, project=project)
    assert guard.reason(Path(os.path.realpath(gitdir)) / "hooks" / "pre-commit") is not None
    # Another agent's (no project) knows it by its shape: HEAD, objects/ and refs/.
    elsewhere = Protected.of(Config(home=agent), user_home=home)
    why = elsewhere.reason(Path(os.path.realpath(gitdir)) / "config")
    assert why is not None and "a git folder" in why


def test_files_that_make_a_folder_a_git_folder_are_protected(
    places: tuple[Path, Path, Path],
) -> None:
    """Git takes any folder holding HEAD, objects/ and refs/ for a repository (with its
    config and hooks): a write into one, or the one that completes the three, asks."""
    _, _, project = places
    guard = protected(places)
    entries = {"HEAD": "HEAD", "objects": "objects/info/packs", "refs": "refs/heads/main"}
    for last, written in entries.items():
        folder = project / f"before-{last}"
        for name in set(entries) - {last}:
            if name == "HEAD":
                (folder / "HEAD").parent.mkdir(parents=True, exist_ok=True)
                (folder / "HEAD").write_text("ref: refs/heads/main\n")
            else:
                (folder / name).mkdir(parents=True)
        assert guard.reason(folder / "config") is None, "two of the three: not yet one"
        why = guard.reason(folder / written)
        assert why is not None and f"inside {folder}, a git folder" in why, written
        (folder / last).mkdir() if last != "HEAD" else (folder / "HEAD").write_text("x")
        assert guard.reason(folder / "config") is not None, "inside one"
    assert guard.reason(project / "HEAD") is None and guard.reason(project / "refs") is None


def test_a_file_with_other_names_is_protected(places: tuple[Path, Path, Path]) -> None:
    home, _, project = places
    (home / ".bashrc").write_text("x\n")
    os.link(home / ".bashrc", project / "rc")
    (project / "single").write_text("x\n")
    why = protected(places).reason(project / "rc")
    assert why is not None and "1 other name(s) (a hard link)" in why
    assert protected(places).reason(project / "single") is None


def test_the_packages_iac_code_runs_from_are_protected(places: tuple[Path, Path, Path]) -> None:
    import sysconfig

    site_packages = Path(os.path.realpath(sysconfig.get_paths()["purelib"]))
    assert protected(places).reason(site_packages / "evil.pth") is not None


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "terraform plan",
        "cat main.tf > out.txt",
        "echo $HOME",
        "git status",
        "cd .. && ls",
    ],
)
def test_bash_lines_that_do_not(places: tuple[Path, Path, Path], command: str) -> None:
    _, _, project = places
    assert protected(places).command_reason(command, project) is None, command


def decide(
    places: tuple[Path, Path, Path],
    name: str,
    mode: str,
    remembered: dict[str, bool] | None = None,
    **args: Any,
) -> permissions.Verdict:
    tool = TOOLS[name]
    return permissions.decide(
        tool,
        tool_input(args, tool.input_type),
        mode=mode,
        cwd=places[2],
        remembered=remembered or {},
        protected=protected(places),
    )


@pytest.mark.parametrize("mode", ["default", "accept_edits", "bypass"])
def test_a_protected_write_asks_in_every_mode(places: tuple[Path, Path, Path], mode: str) -> None:
    for remembered in ({}, {"write_file": True}):
        verdict = decide(places, "write_file", mode, remembered, path=".git/config", content="x")
        assert verdict.decision is Decision.ASK and verdict.protected, (mode, remembered)
        assert verdict.remember is False


def test_a_line_that_changes_infrastructure_and_writes_a_protected_place_says_both(
    places: tuple[Path, Path, Path],
) -> None:
    verdict = decide(
        places,
        "bash",
        "bypass",
        {"bash": True},
        command=f"aws s3 rb s3://b && cat creds >> {places[0]}/.aws/credentials",
    )
    assert verdict.decision is Decision.ASK and verdict.remember is False
    assert verdict.infra_change == "aws s3 rb"
    assert verdict.protected is not None and ".aws" in verdict.protected


def test_always_reject_still_refuses(places: tuple[Path, Path, Path]) -> None:
    verdict = decide(
        places, "write_file", "bypass", {"write_file": False}, path="~/.bashrc", content="x"
    )
    assert verdict.decision is Decision.REFUSE


def test_always_allow_covers_the_project_only(places: tuple[Path, Path, Path]) -> None:
    home = places[0]
    allowed = {"write_file": True, "read_file": True}
    assert (
        decide(places, "write_file", "default", allowed, path="main.tf", content="x").decision
        is Decision.RUN
    )
    outside = decide(
        places, "write_file", "default", allowed, path=str(home / "notes.txt"), content="x"
    )
    assert outside.decision is Decision.ASK and outside.remember is False
    read = decide(places, "read_file", "default", allowed, path=str(home / "notes.txt"))
    assert read.decision is Decision.ASK and read.remember is False
    # Inside the project the question offers Always allow.
    assert decide(places, "write_file", "default", {}, path="main.tf", content="x").remember is True
