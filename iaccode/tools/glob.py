"""glob: files whose path matches a pattern, newest first.

ripgrep lists the files when it is there (:mod:`iaccode.host.search.rg`); otherwise a
pure-Python walk does the same job (:func:`iaccode.host.search.ignore.walk_files`). The
pattern is matched here, in Python, for both: ``rg --glob`` would do it faster, but a
``--glob`` overrides .gitignore (``--glob '*.log'`` lists ignored logs, ``--glob '*'`` enters
ignored folders), so rg only lists the files that are not ignored. What rg lists is checked
against :class:`~iaccode.host.search.ignore.GitIgnores` as well, so both ways follow the same
rules.

Symbolic links in the tree are never followed (rg runs without ``--follow``; the walk skips
links), so a link to a folder outside the project leads nowhere. The folder searched is the
real path the permission check judged (``ToolContext.path``), not a fresh resolution.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

import trio
from attrs import frozen

from iaccode.host.local_files import display_path, join_display
from iaccode.host.search.ignore import GitIgnores, glob_spec, in_worker, walk_files
from iaccode.host.search.rg import RG_IGNORE_FLAGS, find_rg, run_rg
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext

MAX_MATCHES = 100_000
"""Most matching paths glob collects (to sort by time) before it stops looking."""


@frozen
class GlobInput:
    pattern: str
    path: str | None = None


def _newest_first(root: Path, found: list[str], stop: threading.Event) -> list[str]:
    def mtime(rel: str) -> float:
        if stop.is_set():
            return 0.0
        try:
            return os.stat(root / rel).st_mtime
        except OSError:
            return 0.0

    times = {rel: mtime(rel) for rel in found}
    return sorted(found, key=lambda rel: (-times[rel], rel))


class Glob(Tool):
    name = "glob"
    kind = "search"
    read_only = True
    input_type = GlobInput
    description = (
        "Find files by path pattern, e.g. `**/*.py`, `src/**/*.{ts,tsx}` or `*.tf`. Patterns "
        "follow .gitignore rules and are matched against paths relative to `path`: `*` stays "
        "within one folder, `**` crosses folders, and a pattern without a `/` (like `*.tf`) "
        "matches file names at any depth. Files that .gitignore excludes, and .git, are "
        "skipped. Results are sorted by modification time, newest first, and capped; paths are "
        "shown relative to the project directory. Use grep to search file contents."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "The glob pattern to match file paths against.",
            },
            "path": {
                "type": "string",
                "description": (
                    "The directory to search in, relative to the project directory or absolute "
                    "(default: the project directory)."
                ),
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def title(self, args: GlobInput) -> str:
        return f"Glob {args.pattern}" + (f" in {args.path}" if args.path else "")

    def paths(self, args: GlobInput) -> list[str]:
        return [args.path or "."]

    async def run(self, args: GlobInput, ctx: ToolContext) -> ToolResult:
        root = ctx.path(args.path or ".")
        shown_root = display_path(root, ctx.cwd)
        if not await trio.to_thread.run_sync(root.is_dir):
            missing = not await trio.to_thread.run_sync(root.exists)
            raise ToolFailure(
                f"Directory not found: {args.path}"
                if missing
                else f"{args.path} is not a directory."
            )
        pattern = args.pattern.strip()
        if Path(pattern).is_absolute() and Path(pattern).is_relative_to(root):
            pattern = Path(pattern).relative_to(root).as_posix()
        while pattern.startswith("./"):
            pattern = pattern[2:]
        if not pattern:
            raise ToolFailure("The pattern is empty.")
        try:
            spec = glob_spec(pattern)
        except ValueError as exc:
            raise ToolFailure(f"Invalid glob pattern {args.pattern!r}: {exc}") from exc
        ignores = await trio.to_thread.run_sync(GitIgnores, root, ctx.cwd)

        def wanted(line: str) -> bool:
            rel = line.removeprefix("./")
            return bool(spec.match_file(rel)) and not ignores.ignored(rel, is_dir=False)

        found: list[str] | None = None
        stopped = False
        rg = find_rg(ctx.cwd)
        if rg is not None:
            try:
                flags = ["--no-config", "--files", "--hidden", *RG_IGNORE_FLAGS]
                run = await run_rg(
                    rg, [*flags, "--glob", "!.git", "--", "."], root, MAX_MATCHES, wanted
                )
                found = [line.removeprefix("./") for line in run.lines]
                stopped = run.stopped
            except OSError:
                found = None  # rg could not start: walk in Python instead
        if found is None:

            def walk(stop: threading.Event) -> list[str]:
                matched: list[str] = []
                for rel in walk_files(root, ignores, stop):
                    if spec.match_file(rel):
                        matched.append(rel)
                        if len(matched) > MAX_MATCHES:
                            break
                return matched

            found = await in_worker(walk)
            stopped = len(found) > MAX_MATCHES
        found = found[:MAX_MATCHES]
        ordered = await in_worker(functools.partial(_newest_first, root, found))
        cap = ctx.limits.search_max_results
        shown = [join_display(shown_root, rel) for rel in ordered[:cap]]
        if not shown:
            where = "the project directory" if shown_root == "." else shown_root
            text = f"No files match {args.pattern!r} in {where}."
        else:
            text = "\n".join(shown)
            if len(ordered) > cap or stopped:
                total = f"{len(ordered)}+" if stopped else str(len(ordered))
                text += (
                    f"\n[showing the {cap} newest of {total} matching files; narrow the "
                    "pattern or the path to see the rest]"
                )
        return ToolResult(
            text,
            raw_output={
                "files": shown,
                "matches": len(ordered),
                "truncated": len(ordered) > cap or stopped,
            },
        )
