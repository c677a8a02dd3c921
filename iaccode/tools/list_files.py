"""list_files: one directory's entries, without what .gitignore leaves out.

The directory is the real path the permission check judged, opened without following a
symbolic link (:func:`~iaccode.tools.local_files.open_verified`); its entries are listed, never
entered, so a link in it (to a folder outside, say) is only named.

Also the .gitignore rules and the ignore-aware walk that glob and grep share (their pure-Python
fallback walks with it; their ripgrep path filters with it).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pathspec
import trio
from attrs import frozen

from iaccode.tools.base import (
    Tool,
    ToolContext,
    ToolFailure,
    ToolResult,
    is_inside,
)
from iaccode.tools.local_files import open_verified

GIT_DIR = ".git"
MAX_SCAN = 100_000
"""Most entries list_files looks at in one directory."""
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
                spec = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
            except (OSError, ValueError):
                pass
            self._specs[base] = spec
        return self._specs[base]


def walk_files(root: Path, ignores: GitIgnores,
               stop: threading.Event | None = None) -> Iterator[str]:
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
        todo.extend(current[:found.start()] + choice + current[found.end():]
                    for choice in reversed(found.group(1).split(",")))
    return done


def glob_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    """A matcher for a glob with .gitignore semantics (``*.py`` matches at any depth)."""
    return pathspec.GitIgnoreSpec.from_lines(expand_braces(pattern))


@frozen
class ListFilesInput:
    path: str = "."


@frozen
class _Listing:
    names: list[str]
    hidden: int
    total: int
    complete: bool


def _list(folder: Path, cwd: Path, cap: int) -> _Listing:
    ignores = GitIgnores(folder, cwd)
    # Opened without following a link anywhere on the way: the folder judged is the one read.
    fd = open_verified(folder, os.O_RDONLY | os.O_DIRECTORY, "list")
    try:
        names, hidden, total, complete = _scan(fd, ignores)
    finally:
        os.close(fd)  # after the scan: its entries stat relative to it
    names.sort()
    return _Listing(names[:cap], hidden, total, complete)


def _scan(fd: int, ignores: GitIgnores) -> tuple[list[str], int, int, bool]:
    names: list[str] = []
    hidden = total = 0
    complete = True
    with os.scandir(fd) as found:
        for entry in found:
            if total + hidden >= MAX_SCAN:
                complete = False
                break
            if entry.name == GIT_DIR:
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if ignores.ignored(entry.name, is_dir):
                hidden += 1
                continue
            total += 1
            names.append(entry.name + ("/" if is_dir else ""))
    return names, hidden, total, complete


class ListFiles(Tool):
    name = "list_files"
    kind = "read"
    read_only = True
    input_type = ListFilesInput
    description = (
        "List the entries of one directory (not recursive), sorted by name; sub-directories end "
        "with '/'. Entries that .gitignore excludes, and the .git folder, are left out (the "
        "listing says how many). To find files in a whole tree use glob; to search contents, "
        "grep; to read a file, read_file."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": (
                "The directory to list, relative to the project directory or absolute "
                "(default: the project directory).")},
        },
        "required": [],
        "additionalProperties": False,
    }

    def title(self, args: ListFilesInput) -> str:
        return f"List {args.path}"

    def paths(self, args: ListFilesInput) -> list[str]:
        return [args.path]

    async def run(self, args: ListFilesInput, ctx: ToolContext) -> ToolResult:
        folder = ctx.path(args.path)
        cap = ctx.limits.search_max_results
        try:
            listing = await trio.to_thread.run_sync(_list, folder, ctx.cwd, cap,
                                                    abandon_on_cancel=True)
        except FileNotFoundError as exc:
            raise ToolFailure(f"Directory not found: {args.path}") from exc
        except NotADirectoryError as exc:
            raise ToolFailure(f"{args.path} is a file, not a directory; use read_file to read "
                              "it.") from exc
        except OSError as exc:
            raise ToolFailure(f"Cannot list {args.path}: {exc.strerror or exc}.") from exc
        empty = "(nothing but ignored entries)" if listing.hidden else "(empty directory)"
        lines = list(listing.names) or [empty]
        if listing.hidden:
            lines.append(f"[{listing.hidden} entries left out by .gitignore]")
        if listing.total > len(listing.names):
            lines.append(f"[... {listing.total - len(listing.names)} more entries not shown "
                         f"(the limit is {cap}); use glob to narrow down]")
        if not listing.complete:
            lines.append(f"[stopped after looking at {MAX_SCAN} entries]")
        return ToolResult("\n".join(lines), raw_output={
            "path": str(folder), "entries": listing.names, "total": listing.total,
            "ignored": listing.hidden})
