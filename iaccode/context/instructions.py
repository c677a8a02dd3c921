"""The project's instruction files: ``AGENTS.md`` and friends, outermost first, capped.

For each folder from the git root (or the cwd, outside a repository) down to the cwd:
``AGENTS.md`` (or ``CLAUDE.md`` when the folder has no ``AGENTS.md``), then ``IAC-CODE.md``.
Last comes ``$IAC_CODE_HOME/AGENTS.md``, the user's own rules. The whole is capped at
``CAP_CHARS``; what does not fit is cut with a marker naming the files.

Only the project's own files count: the walk stops at the project's root (a ``.git`` owned by
another user is no root: :func:`iaccode.context.git.repository_root`), a file owned by anyone
but us or the session folder's owner is skipped (planted in a shared folder), and so is one
whose real path is outside the project (a symlink to ``~/.ssh/id_rsa`` is not an instruction).

:func:`signature` (the mtime of every candidate, missing ones included) says whether a
rebuild is due; it is cheap enough to check before every prompt.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attrs import frozen

from iaccode.context.git import trusted_owners

CAP_CHARS = 32 * 1024
"""Instruction text the system prompt holds in all (about 32 KiB)."""

MAX_READ_CHARS = 1024 * 1024
"""Most of one file that is read at all (the rest is said to be cut)."""

MAIN_NAMES = ("AGENTS.md", "CLAUDE.md")
"""Per folder: the first that exists is read."""
EXTRA_NAME = "IAC-CODE.md"
"""Per folder, read as well as the main file."""


@frozen
class InstructionFile:
    path: Path
    text: str


@frozen
class Instructions:
    files: list[InstructionFile]
    """In order, each as included (possibly cut)."""
    cut: str | None = None
    """The marker saying what did not fit, when something did not."""


def folders(cwd: Path, root: Path | None) -> list[Path]:
    """From ``root`` (the git root, or cwd) down to ``cwd``, outermost first."""
    top = root if root is not None and (root == cwd or root in cwd.parents) else cwd
    chain = [cwd]
    while chain[-1] != top:
        chain.append(chain[-1].parent)
    return chain[::-1]


def candidates(cwd: Path, root: Path | None, home: Path) -> list[Path]:
    """Every path whose appearance or change matters, in reading order."""
    paths = [folder / name for folder in folders(cwd, root) for name in (*MAIN_NAMES, EXTRA_NAME)]
    return [*paths, home / "AGENTS.md"]


def signature(paths: list[Path]) -> tuple[int | None, ...]:
    """The mtime (ns) of each path, None for a missing one. Blocking; cheap."""
    out: list[int | None] = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


def _projects_own(path: Path, top: Path, owners: frozenset[int]) -> bool:
    """A regular file of a trusted owner whose real path is in the project (``top`` down)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    real = Path(os.path.realpath(path))
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_uid in owners
        and (real == top or top in real.parents)
    )


def chosen(cwd: Path, root: Path | None, home: Path) -> list[Path]:
    """The files to read, in order (see the module docstring)."""
    files: list[Path] = []
    chain = folders(cwd, root)
    top, owners = Path(os.path.realpath(chain[0])), trusted_owners(cwd)
    for folder in chain:
        main = next(
            (folder / name for name in MAIN_NAMES if _projects_own(folder / name, top, owners)),
            None,
        )
        if main is not None:
            files.append(main)
        if _projects_own(folder / EXTRA_NAME, top, owners):
            files.append(folder / EXTRA_NAME)
    user = home / "AGENTS.md"
    if user.is_file() and user not in files:
        files.append(user)
    return files


def read(cwd: Path, root: Path | None, home: Path, cap: int = CAP_CHARS) -> Instructions:
    """Blocking (run it in a thread). Unreadable files are skipped."""
    included: list[InstructionFile] = []
    left = cap
    partly: list[str] = []
    dropped: list[str] = []
    for path in chosen(cwd, root, home):
        if left <= 0:
            dropped.append(str(path))
            continue
        try:
            with path.open(encoding="utf-8", errors="replace") as file:
                text = file.read(MAX_READ_CHARS + 1)  # bounded, however big the file
        except OSError:
            continue
        more = len(text) > MAX_READ_CHARS
        text = text[:MAX_READ_CHARS].strip()
        if not text:
            continue
        if len(text) > left:
            size = f"{'over ' if more else ''}{len(text)}"
            partly.append(f"{path} ({len(text) - left}{'+' if more else ''} of {size} characters)")
            included.append(InstructionFile(path, text[:left]))
            left = 0
        else:
            included.append(InstructionFile(path, text))
            left -= len(text)
    cut = None
    if partly or dropped:
        what = [f"cut short: {', '.join(partly)}"] if partly else []
        if dropped:
            what.append(f"left out: {', '.join(dropped)}")
        cut = (
            f"[Instructions are capped at {cap} characters; {'; '.join(what)}. "
            "Read those files with read_file if you need the rest.]"
        )
    return Instructions(included, cut)
