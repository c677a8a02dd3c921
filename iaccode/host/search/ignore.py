"""The .gitignore rules, and the ignore-aware walk glob and grep share.

:class:`GitIgnores` answers whether a path is ignored, as git would; glob and grep filter what
ripgrep lists with it, list_files and the IaC inventory too, and :func:`walk_files` (the
pure-Python fallback of glob and grep) walks with it. Only .gitignore files count, from the top
of the git work tree holding the searched folder down (never a stray one further up).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pathspec
import trio

from iaccode.host.local_files import is_inside

T = TypeVar("T")

GIT_DIR = ".git"
_GITIGNORE_MAX_BYTES = 1024 * 1024
_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
_MAX_BRACE_EXPANSIONS = 256


def _top(root: Path, cwd: Path) -> Path:
    """Where .gitignore rules start: the git work tree holding ``root``; without one, ``cwd``
    (or ``root`` itself when it is outside ``cwd``). Never a stray .gitignore further up."""
    for folder in (root, *root.parents):
        if os.path.lexists(folder / GIT_DIR):
            return folder
    return cwd if is_inside(root, cwd) else root


class GitIgnores:
    """The .gitignore rules for paths under ``root``, loaded lazily as folders are met.

    Rules come from every .gitignore between the top (see :func:`_top`) and the path's folder;
    deeper files win, as in git. When ``root`` itself is ignored (the model named, say,
    ``node_modules`` on purpose), only the rules at and below it apply, so its contents are
    shown. A ``.git`` entry is always ignored. Paths given to :meth:`ignored` are relative to
    ``root`` with ``/`` separators. Reads files: build and use it in a worker thread.
    """

    def __init__(self, root: Path, cwd: Path) -> None:
        self.root = root
        self.top = _top(root, cwd)
        below = os.path.relpath(root, self.top)
        self._prefix = "" if below == "." else below + "/"
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}
        self._dirs: dict[str, bool] = {}
        self._floor = ""
        if self._prefix and self._match(self._prefix[:-1], is_dir=True):
            self._floor = self._prefix[:-1]

    def ignored(self, rel: str, is_dir: bool, check_parents: bool = True) -> bool:
        """Whether ``rel`` is ignored (with ``check_parents``, also when a folder above it is)."""
        parts = rel.split("/")
        if GIT_DIR in parts:
            return True
        if check_parents:
            for end in range(1, len(parts)):
                folder = "/".join(parts[:end])
                known = self._dirs.get(folder)
                if known is None:
                    known = self._dirs[folder] = self._match(self._prefix + folder, True)
                if known:
                    return True
        return self._match(self._prefix + rel, is_dir)

    def _match(self, path: str, is_dir: bool) -> bool:
        parts = path.split("/")
        result = False
        for end in range(len(parts)):
            base = "/".join(parts[:end])
            if self._floor and base != self._floor and not base.startswith(self._floor + "/"):
                continue
            spec = self._spec(base)
            if spec is None:
                continue
            include = spec.check_file("/".join(parts[end:]) + ("/" if is_dir else "")).include
            if include is not None:
                result = include
        return result

    def _spec(self, base: str) -> pathspec.GitIgnoreSpec | None:
        if base not in self._specs:
            spec = None
            try:
                with open(self.top / base / ".gitignore", "rb") as file:
                    data = file.read(_GITIGNORE_MAX_BYTES)
                lines = data.decode("utf-8", "replace").splitlines()
                spec = _compiled(lines) if lines else None
            except (OSError, ValueError):
                pass
            self._specs[base] = spec
        return self._specs[base]


def walk_files(
    root: Path, ignores: GitIgnores, stop: threading.Event | None = None
) -> Iterator[str]:
    """Files under ``root`` (relative, ``/``-separated), in path order, skipping ignored ones.

    Symbolic links are skipped, as rg does (they may lead out of the project); hidden files
    are included. Stops when ``stop`` is set.
    """
    stack: list[tuple[str, Iterator[os.DirEntry[str]]]] = [("", _entries(root))]
    while stack:
        if stop is not None and stop.is_set():
            return
        folder, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        rel = f"{folder}/{entry.name}" if folder else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            if ignores.ignored(rel, is_dir, check_parents=False):
                continue
            if is_dir:
                stack.append((rel, _entries(Path(entry.path))))
            elif entry.is_file(follow_symlinks=False):
                yield rel
        except OSError:
            continue


def _entries(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            return iter(sorted(found, key=lambda entry: entry.name))
    except OSError:
        return iter(())


def expand_braces(pattern: str) -> list[str]:
    """``src/*.{ts,tsx}`` -> ``src/*.ts``, ``src/*.tsx`` (nested groups too, within reason)."""
    done: list[str] = []
    todo = [pattern]
    while todo:
        current = todo.pop()
        found = _BRACES.search(current)
        if found is None or len(done) + len(todo) >= _MAX_BRACE_EXPANSIONS:
            done.append(current)
            continue
        todo.extend(
            current[: found.start()] + choice + current[found.end() :]
            for choice in reversed(found.group(1).split(","))
        )
    return done


def glob_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    """A matcher for a glob with .gitignore semantics (``*.py`` matches at any depth)."""
    return _compiled(expand_braces(pattern))


def _compiled(lines: list[str]) -> pathspec.GitIgnoreSpec:
    """Patterns matched by RE2, in time linear in the name: Python's ``re`` backtracks on
    ``*a*a*a...b`` (a repository's .gitignore) for minutes, holding the interpreter's lock, so
    the whole agent stopped answering."""
    return pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")


async def in_worker(work: Callable[[threading.Event], T]) -> T:
    """Run ``work`` in a thread; it should return soon after the event is set (on cancel)."""
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(work, stop, abandon_on_cancel=True)
    finally:
        stop.set()
