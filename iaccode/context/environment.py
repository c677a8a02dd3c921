"""Facts about where the session runs: cwd, platform, shell, date, git.

Gathered once per build of the system prompt (see :mod:`iaccode.context.live`), in a worker
thread: one ``git status --porcelain=v1 -b`` bounded by ``GIT_TIMEOUT``, run so that nothing
the repository configures starts (:mod:`iaccode.context.git`). The git root is found by looking
for ``.git`` upwards, without git (one that belongs to another user does not count).
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

from attrs import frozen

from iaccode.context.git import repository_root, run_git

GIT_TIMEOUT = 2.0
"""Seconds the one git call may take; a slower repository is reported as unknown."""

PLATFORMS = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows", "FreeBSD": "FreeBSD"}


@frozen
class GitState:
    root: Path | None
    """The repository's top folder (None: the cwd is not inside a repository)."""
    status: str
    """One line for the model: the branch and clean / N changed files, or why we cannot say."""


@frozen
class Environment:
    cwd: Path
    platform: str
    shell: str
    today: str
    """YYYY-MM-DD, local time, as of the build."""
    git: GitState
    additional: tuple[Path, ...] = ()
    """The client's extra project folders (``additionalDirectories``), as real paths."""


def gather(cwd: Path, additional: tuple[Path, ...] = ()) -> Environment:
    """Blocking (run it in a thread)."""
    shell = os.environ.get("SHELL") or "/bin/sh"
    return Environment(
        cwd=cwd,
        platform=PLATFORMS.get(platform.system(), platform.system() or "unknown"),
        shell=Path(shell).name,
        today=datetime.date.today().isoformat(),
        git=git_state(cwd),
        additional=additional,
    )


def git_state(cwd: Path) -> GitState:
    import subprocess  # here, not at start-up: the editor waits for initialize

    root = repository_root(cwd)
    if root is None:
        return GitState(None, "not a git repository")
    try:  # no optional locks (git_env): a status must not take git's lock
        done = run_git(
            ["status", "--porcelain=v1", "-b", "--ignore-submodules=all"], cwd, GIT_TIMEOUT
        )
    except FileNotFoundError:
        return GitState(root, "a git repository (git is not installed, so no branch or status)")
    except subprocess.TimeoutExpired:
        return GitState(
            root,
            f"a git repository (git status took over {GIT_TIMEOUT:g} s; branch and status unknown)",
        )
    except OSError as exc:
        return GitState(root, f"a git repository (git could not run: {exc.strerror})")
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        return GitState(
            root,
            "a git repository (git status failed: "
            f"{reason[0] if reason else f'exit {done.returncode}'})",
        )
    return GitState(root, describe_status(done.stdout.decode(errors="replace")))


def describe_status(porcelain: str) -> str:
    """``git status --porcelain=v1 -b`` output -> "branch main, clean" / "..., 3 changed files"."""
    lines = [line for line in porcelain.splitlines() if line]
    header = lines[0][3:] if lines and lines[0].startswith("## ") else ""
    changed = len([line for line in lines if not line.startswith("## ")])
    if header.startswith("No commits yet on "):
        branch = f"branch {header.removeprefix('No commits yet on ')} (no commits yet)"
    elif header.startswith("HEAD (no branch)"):
        branch = "detached HEAD"
    else:
        name = header.split("...", 1)[0].split(" ", 1)[0]
        branch = f"branch {name}" if name else "unknown branch"
    if changed == 0:
        return f"{branch}, clean"
    return f"{branch}, {changed} changed file{'s' if changed != 1 else ''}"
