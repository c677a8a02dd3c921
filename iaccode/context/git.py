"""Git as the agent runs it on its own: nothing the repository configures may run.

A repository's configuration (``.git/config`` and what it includes, ``.gitattributes``) can
name programs that git starts by itself: ``core.fsmonitor``, hooks (``core.hooksPath``),
filter drivers (``clean``, ``smudge``, ``process``), diff drivers (``textconv``,
``command``), ``diff.external``, pagers, ``core.sshCommand``, credential helpers, the
transports a missing object of a partial clone is fetched with (``remote.<name>.uploadpack``,
``ext::`` URLs). Opening a
session in a hostile checkout must start none of them, so every git call here:

- runs in a clean environment: ``PATH``, ``HOME`` (the user's own ``~/.gitconfig`` still
  counts, e.g. for ``safe.directory``) and a C locale; no secrets, no ``GIT_*`` of ours;
- overrides those settings at the command level (``GIT_CONFIG_COUNT``, above every file and
  every include), each filter, diff and merge driver that any configuration defines emptied
  (their names come first from ``git config``, which starts nothing);
- never looks into submodules (each has a configuration of its own);
- is the user's git: found on PATH outside the session's folder and its repository
  (:mod:`iaccode.installed`), never a ``git`` the repository ships.

:func:`repository_root` finds the repository without git: the nearest ``.git`` at or above the
folder, unless it belongs to someone else (a ``.git`` planted in a shared parent folder such as
``/tmp`` is no repository of ours, as git's own ``safe.directory`` rule says).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from iaccode.installed import outside, which

if TYPE_CHECKING:
    import subprocess

NEUTRAL_SETTINGS: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("protocol.allow", "never"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    # A folder holding HEAD, objects/ and refs/ is a repository of its own to git, found
    # before the .git above it: plain files a model may write in the project, with a config.
    ("safe.bareRepository", "explicit"),
)
"""Settings that start a program, set to start none (command scope wins over every file).
``protocol.allow`` alone does not hold: a repository's ``protocol.<name>.allow`` is more
specific and wins, so :func:`git_env` also sets ``GIT_ALLOW_PROTOCOL``."""

DRIVER_KEYS = {
    "filter": ("clean", "smudge", "process"),
    "diff": ("textconv", "command"),
    "merge": ("driver",),
}
"""Per driver section, the keys that name a program."""


def trusted_owners(folder: Path) -> frozenset[int]:
    """Who may own the project's files: us, and whoever owns the session folder (a root
    agent in a container on a checkout that belongs to the user on the host)."""
    owners = {os.geteuid()}
    with contextlib.suppress(OSError):  # a folder gone: only we count
        owners.add(os.stat(folder).st_uid)
    return frozenset(owners)


def repository_root(cwd: Path) -> Path | None:
    """The nearest folder at or above ``cwd`` holding ``.git`` (a folder, or a worktree's
    file), when it belongs to a trusted owner (:func:`trusted_owners`); None otherwise (no
    repository, or one planted by another user)."""
    owners = trusted_owners(cwd)
    for folder in (cwd, *cwd.parents):
        try:
            info = os.lstat(folder / ".git")
        except OSError:
            continue
        return folder if info.st_uid in owners else None
    return None


def git_env(avoid: Sequence[Path] = ()) -> dict[str, str]:
    """The clean environment git calls get (without the overriding settings); its PATH
    without the folders in ``avoid`` (the project: iaccode/installed.py)."""
    env = {
        "LC_ALL": "C",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        # No transport at all: a partial clone's missing object is fetched by git on its
        # own (even by `git status`), through the remote's uploadpack program or an ext::
        # URL the repository names. GIT_ALLOW_PROTOCOL overrides every protocol.* setting.
        "GIT_ALLOW_PROTOCOL": "none",
        "GIT_NO_LAZY_FETCH": "1",
    }
    for name in ("PATH", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    if "PATH" in env:
        env["PATH"] = outside(env["PATH"], avoid)
    return env


def _with_settings(env: dict[str, str], settings: Sequence[tuple[str, str]]) -> dict[str, str]:
    env = dict(env, GIT_CONFIG_COUNT=str(len(settings)))
    for index, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def driver_settings(names: Sequence[str]) -> list[tuple[str, str]]:
    """The settings that empty every driver named in ``names`` (configuration keys such as
    ``filter.lfs.clean``): each of its program keys, and ``filter.X.required`` off (a required
    filter without a program would make git fail)."""
    settings: list[tuple[str, str]] = []
    drivers: set[tuple[str, str]] = set()
    for name in names:
        section, _, rest = name.partition(".")
        driver, _, _key = rest.rpartition(".")
        if section in DRIVER_KEYS and driver:
            drivers.add((section, driver))
    for section, driver in sorted(drivers):
        settings.extend((f"{section}.{driver}.{key}", "") for key in DRIVER_KEYS[section])
        if section == "filter":
            settings.append((f"filter.{driver}.required", "false"))
    return settings


def run_git(args: Sequence[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` in ``cwd`` so that nothing the repository configures runs (see the module
    docstring). Blocking. Raises what :func:`subprocess.run` raises (FileNotFoundError,
    TimeoutExpired, OSError); ``timeout`` bounds both git calls together."""
    import subprocess  # here, not at start-up: the editor waits for initialize

    root = repository_root(cwd)
    project = [cwd, *([root] if root is not None else [])]
    program = which("git", project)
    if program is None:
        raise FileNotFoundError("git is not installed (outside the project)")
    deadline = time.monotonic() + timeout
    # The repository found, named: git's own search would take a folder holding HEAD,
    # objects/ and refs/ between here and it for a repository (safe.bareRepository refuses
    # that one: git status would fail instead).
    located = {"GIT_DIR": str(root / ".git"), "GIT_WORK_TREE": str(root)} if root else {}
    plain = {**git_env(project), **located}
    base = _with_settings(plain, NEUTRAL_SETTINGS)
    # Started in /, working in cwd (-C): a version manager's shim runs the version a file in
    # its working folder or above names, and that may be a folder of the repository's own.
    here = [program, "-C", str(cwd)]
    listed = subprocess.run(
        [*here, "config", "-z", "--name-only", "--get-regexp", r"^(filter|diff|merge)\."],
        cwd="/",
        env=base,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=timeout,
    )
    names = (
        [n for n in listed.stdout.decode("utf-8", "replace").split("\0") if n]
        if listed.returncode == 0
        else []
    )  # exit 1: no such key
    env = _with_settings(plain, [*NEUTRAL_SETTINGS, *driver_settings(names)])
    return subprocess.run(
        [*here, *args],
        cwd="/",
        env=env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=max(0.1, deadline - time.monotonic()),
    )
