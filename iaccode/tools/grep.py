"""grep: search file contents with a regular expression, skipping what .gitignore excludes.

ripgrep does the searching when it is there (see :mod:`iaccode.host.search.rg`); otherwise,
and for patterns rg's regex engine refuses but Python's accepts (look-around, backreferences),
Python's ``re`` searches line by line. Output is in path order either way, so it is the same
both ways. As with glob, links in the tree are not followed, and the path searched is the real
path the permission check judged.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import trio
from attrs import frozen

from iaccode import redaction
from iaccode.host.local_files import BINARY_SNIFF_BYTES, display_path, join_display
from iaccode.host.search.ignore import GitIgnores, glob_spec, in_worker, walk_files
from iaccode.host.search.rg import RG_IGNORE_FLAGS, find_rg, run_rg
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext, ToolLimits

OutputMode = Literal["files_with_matches", "content", "count"]
MAX_COLUMNS = 500
"""Longer matching lines are cut to this many characters in ``content`` output."""
_LONG_LINE = " [... omitted end of long line]"
_BINARY = "binary file matches"
_READ_PIECE = 1024 * 1024
_DEFAULTS = ToolLimits()


@frozen
class GrepInput:
    pattern: str
    path: str | None = None
    glob: str | None = None
    case_insensitive: bool = False
    output_mode: OutputMode = "files_with_matches"
    max_results: int | None = None


@frozen
class _Search:
    """What to search: ``name`` (a file, or ``.`` for the whole tree) in ``base``."""

    base: Path
    name: str
    ignores: GitIgnores | None
    """For a tree: rg's output is filtered by it too (``--glob`` overrides .gitignore, and rg
    is not shown the rules above the search root)."""


def _rg_args(args: GrepInput, name: str, sort: bool = True) -> list[str]:
    flags = [
        "--no-config",
        "--hidden",
        *RG_IGNORE_FLAGS,
        *(["--sort", "path"] if sort else []),
        "--color",
        "never",
        "--with-filename",
    ]
    if args.case_insensitive:
        flags.append("--ignore-case")
    if args.output_mode == "files_with_matches":
        flags.append("--files-with-matches")
    elif args.output_mode == "count":
        flags += ["--count", "--null"]
    else:
        flags += [
            "--null",
            "--line-number",
            "--no-heading",
            "--max-columns",
            str(MAX_COLUMNS),
            "--max-columns-preview",
        ]
    if args.glob:
        flags += ["--glob", args.glob]
    return [*flags, "--glob", "!.git", "--regexp", args.pattern, "--", name]


def _split(line: str, mode: OutputMode) -> tuple[str, str]:
    """An rg output line as (path, what follows it)."""
    if mode == "files_with_matches":
        return line.removeprefix("./"), ""
    path, sep, rest = line.partition("\0")
    if not sep:  # "name: binary file matches (found "\0" byte around offset 5)"
        path, _, rest = line.partition(f": {_BINARY}")
        rest = _BINARY
    return path.removeprefix("./"), rest


def _python_search(
    regex: re.Pattern[str], search: _Search, args: GrepInput, cap: int, stop: threading.Event
) -> list[tuple[str, str]]:
    if search.ignores is None:
        names = iter([search.name])
    else:
        spec = glob_spec(args.glob) if args.glob else None
        ignores = search.ignores
        names = (
            rel
            for rel in walk_files(search.base, ignores, stop)
            if spec is None or spec.match_file(rel)
        )
    found: list[tuple[str, str]] = []
    for rel in names:
        if stop.is_set() or len(found) > cap:
            break
        found.extend(
            _search_file(
                regex,
                search.base / rel,
                rel,
                args.output_mode,
                stop,
                explicit=search.ignores is None,
                room=cap + 1 - len(found),
            )
        )
    return found


def _search_file(
    regex: re.Pattern[str],
    path: Path,
    rel: str,
    mode: OutputMode,
    stop: threading.Event,
    explicit: bool,
    room: int,
) -> list[tuple[str, str]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        binary = b"\0" in file.read(BINARY_SNIFF_BYTES)
        if binary and not explicit:
            return []
        file.seek(0)
        found: list[tuple[str, str]] = []
        count = 0
        number = 1
        counted = 0  # the last line number counted (a long line is read in pieces)
        for piece in iter(lambda: file.readline(_READ_PIECE), b""):
            text = piece.decode("utf-8", "replace").rstrip("\r\n")
            if counted != number and regex.search(text):
                counted = number
                count += 1
                if mode == "files_with_matches" or (binary and mode == "content"):
                    return [(rel, _BINARY if mode == "content" else "")]
                if mode == "content":
                    if len(text) > MAX_COLUMNS:  # no start of a secret left at the cut
                        text = redaction.current().ends(text[:MAX_COLUMNS], end=True) + _LONG_LINE
                    found.append((rel, f"{number}:{text}"))
                    if len(found) >= room:
                        break
            if piece.endswith(b"\n"):
                number += 1
                if number % 4096 == 0 and stop.is_set():
                    break
    if mode == "count":
        return [(rel, str(count))] if count else []
    return found


class Grep(Tool):
    name = "grep"
    kind = "search"
    read_only = True
    input_type = GrepInput
    description = (
        "Search file contents with a regular expression (ripgrep syntax, close to Python's: "
        "escape literal braces and brackets, e.g. `interface\\{\\}`). Searches the project "
        "directory, or `path` (a directory or one file), skipping files that .gitignore "
        "excludes, binary files and .git. Filter files with `glob` (e.g. `*.py`, "
        "`src/**/*.{ts,tsx}`). `output_mode`: `files_with_matches` (default) lists matching "
        "files; `content` shows matching lines as `path:line:text`; `count` shows `path:count`. "
        "Results are in path order and capped at `max_results`. Use this instead of running "
        "grep or rg with bash."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The regular expression to search for."},
            "path": {
                "type": "string",
                "description": (
                    "A directory or file to search, relative to the project directory or absolute "
                    "(default: the project directory)."
                ),
            },
            "glob": {
                "type": "string",
                "description": (
                    "Only search files whose path (relative to `path`) matches this glob, e.g. "
                    "`*.tf` or `modules/**/*.tf`."
                ),
            },
            "case_insensitive": {
                "type": "boolean",
                "description": "Ignore case when matching (default false).",
            },
            "output_mode": {
                "type": "string",
                "enum": ["files_with_matches", "content", "count"],
                "description": "What to show (default files_with_matches).",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "description": (
                    "Most files (or lines, in content mode) to return (default "
                    f"{_DEFAULTS.search_max_results}, at most ten times that)."
                ),
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def title(self, args: GrepInput) -> str:
        where = f" in {args.path}" if args.path else ""
        return f"Grep {args.pattern!r}{where}" + (f" ({args.glob})" if args.glob else "")

    def paths(self, args: GrepInput) -> list[str]:
        return [args.path or "."]

    async def searched(
        self, args: GrepInput, ctx: ToolContext, wanted: Callable[[str], bool]
    ) -> str | None:
        """The first file of the tree searched (what .gitignore and ``glob`` leave) that
        ``wanted`` picks; None for one file (its input names it) or a call that failed."""
        try:
            target = ctx.path(args.path or ".")
            if not await trio.to_thread.run_sync(target.is_dir):
                return None
            ignores = await trio.to_thread.run_sync(GitIgnores, target, ctx.cwd)
        except (ToolFailure, OSError):
            return None
        prefix = display_path(target, ctx.cwd)

        def picked(rel: str) -> bool:
            rel = rel.removeprefix("./")  # as rg prints them
            return not ignores.ignored(rel, is_dir=False) and wanted(join_display(prefix, rel))

        rg = find_rg(ctx.cwd)
        if rg is not None:
            listing = ["--no-config", "--hidden", *RG_IGNORE_FLAGS, "--files", "--color", "never"]
            listing += [*(["--glob", args.glob] if args.glob else []), "--glob", "!.git", "."]
            try:  # stopped at the first one picked
                run = await run_rg(rg, listing, target, 0, picked)
            except OSError:
                run = None
            if run is not None:
                return join_display(prefix, run.lines[0].removeprefix("./")) if run.lines else None
        try:
            spec = glob_spec(args.glob) if args.glob else None
        except ValueError:
            return None

        def first(stop: threading.Event) -> str | None:
            for rel in walk_files(target, ignores, stop):
                if (spec is None or spec.match_file(rel)) and picked(rel):
                    return join_display(prefix, rel)
            return None

        return await in_worker(first)

    async def run(self, args: GrepInput, ctx: ToolContext) -> ToolResult:
        if not args.pattern:
            raise ToolFailure("The pattern is empty.")
        if args.max_results is not None and args.max_results < 1:
            raise ToolFailure(f"max_results must be at least 1, not {args.max_results}.")
        limit = ctx.limits.search_max_results
        cap = min(args.max_results or limit, 10 * limit)
        target = ctx.path(args.path or ".")
        try:
            mode = (await trio.to_thread.run_sync(os.stat, target)).st_mode
        except OSError as exc:
            raise ToolFailure(f"Path not found: {args.path}") from exc
        if stat.S_ISDIR(mode):
            ignores = await trio.to_thread.run_sync(GitIgnores, target, ctx.cwd)
            search = _Search(target, ".", ignores)
        elif stat.S_ISREG(mode):
            search = _Search(target.parent, target.name, None)
        else:
            raise ToolFailure(f"Cannot search {args.path}: it is not a regular file.")
        found = await _search(args, search, cap, ctx.cwd)
        prefix = display_path(search.base, ctx.cwd)
        lines = []
        for rel, rest in found[:cap]:
            shown = join_display(prefix, rel)
            if rest == _BINARY:
                lines.append(f"{shown}: {rest}")
            else:
                lines.append(f"{shown}:{rest}" if rest else shown)
        if not lines:
            where = display_path(target, ctx.cwd)
            where = "the project directory" if where == "." else where
            within = f" (files matching {args.glob})" if args.glob else ""
            text = f"No matches for {args.pattern!r} in {where}{within}."
        else:
            text = "\n".join(lines)
            if len(found) > cap:
                text += (
                    f"\n[stopped at {cap} results; there are more: narrow the pattern, "
                    "path or glob, or raise max_results]"
                )
        return ToolResult(
            text,
            raw_output={
                "mode": args.output_mode,
                "results": len(lines),
                "truncated": len(found) > cap,
            },
        )


async def _search(
    args: GrepInput, search: _Search, cap: int, project: Path
) -> list[tuple[str, str]]:
    """Up to ``cap + 1`` results as (path relative to ``search.base``, what follows it)."""
    rg = find_rg(project)
    if rg is not None:

        def keep(line: str) -> bool:
            rel, _ = _split(line, args.output_mode)
            return search.ignores is None or not search.ignores.ignored(rel, is_dir=False)

        # rg searches in parallel unless told to sort (one thread: twice the time on two
        # cores), so it runs unsorted and we sort. Past the cap only rg's own order tells which
        # results come first: then it runs again, sorted (stopping at the cap again).
        try:
            run = await run_rg(rg, _rg_args(args, search.name, sort=False), search.base, cap, keep)
            if run.stopped:
                run = await run_rg(rg, _rg_args(args, search.name), search.base, cap, keep)
        except OSError:
            run = None  # rg could not start: search in Python instead
        if run is not None and (run.returncode != 2 or run.lines or not run.errors):
            found = [_split(line, args.output_mode) for line in run.lines]
            if not run.stopped:  # rg's path order: by name, folder by folder (stable: a
                found.sort(key=lambda item: item[0].split("/"))  # file's lines stay in order)
            return found
        if run is not None and "regex" not in run.errors:
            raise ToolFailure(f"grep failed: {run.errors.strip()}")
        # rg's engine refused the pattern: Python's may take it (look-around, \1, ...).
    flags = re.IGNORECASE if args.case_insensitive else 0
    try:
        regex = re.compile(args.pattern, flags)
    except re.error as exc:
        raise ToolFailure(f"Invalid regex {args.pattern!r}: {exc}") from exc
    if args.glob:
        try:
            glob_spec(args.glob)
        except ValueError as exc:
            raise ToolFailure(f"Invalid glob {args.glob!r}: {exc}") from exc
    return await in_worker(lambda stop: _python_search(regex, search, args, cap, stop))
