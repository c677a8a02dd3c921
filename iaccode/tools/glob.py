"""glob: files whose path matches a pattern, newest first.

Also the ripgrep plumbing glob and grep share. ``rg`` walks big trees fast and knows
.gitignore; where it is missing (or ``USE_RG`` is off) a pure-Python walk does the same job.
The pattern is matched here, in Python, for both: ``rg --glob`` would do it faster, but a
``--glob`` overrides .gitignore (``--glob '*.log'`` lists ignored logs, ``--glob '*'`` enters
ignored folders), so rg only lists the files that are not ignored. What rg lists is checked
against :class:`GitIgnores` as well, so both ways follow the same rules.

Symbolic links in the tree are never followed (rg runs without ``--follow``; the walk skips
links), so a link to a folder outside the project leads nowhere. The folder searched is the
real path the permission check judged (``ToolContext.path``), not a fresh resolution.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import trio
from attrs import frozen

from iaccode.tools.base import Tool, ToolContext, ToolFailure, ToolResult
from iaccode.tools.list_files import GitIgnores, glob_spec, walk_files
from iaccode.tools.local_files import display_path

T = TypeVar("T")

USE_RG = True
"""Use ripgrep when it can be found (tests turn this off to run the Python fallback)."""
MAX_MATCHES = 100_000
"""Most matching paths glob collects (to sort by time) before it stops looking."""
_STDERR_BYTES = 64 * 1024
RG_IGNORE_FLAGS = ["--no-require-git", "--no-ignore-parent", "--no-messages"]
""".gitignore files count without a git repo too, and only from the search root down: the
rules above it (up to the work tree's top) are applied afterwards by :class:`GitIgnores`, so a
stray .gitignore in a parent folder (a home directory's, say) never hides the project."""


@functools.cache
def _locate_rg() -> str | None:
    # The ripgrep wheel puts rg beside the interpreter, which may not be on PATH.
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def find_rg() -> str | None:
    """The ``rg`` binary to run, or None to use the Python fallback."""
    return _locate_rg() if USE_RG else None


@frozen
class RgRun:
    lines: list[str]
    """Output lines kept (at most ``max_lines + 1``)."""
    returncode: int
    errors: str
    stopped: bool
    """More output was coming: rg was killed once ``max_lines`` were exceeded."""


async def run_rg(rg: str, args: list[str], cwd: Path, max_lines: int,
                 keep: Callable[[str], bool] | None = None) -> RgRun:
    """Run ``rg`` and collect its output lines, bounded in memory: rg is killed once more than
    ``max_lines`` lines are kept. ``keep`` filters lines; it runs in a worker thread (it may
    read files). Raises OSError when rg cannot be started; a cancelled call kills rg.
    """
    try:
        return await _run_rg(rg, args, cwd, max_lines, keep)
    except BaseExceptionGroup as group:
        # Our nursery wraps the one interesting exception in a group: a cancellation, or a
        # failure to start rg. Hand it on bare.
        leaves = _leaves(group)
        for kind in (trio.Cancelled, OSError):
            if all(isinstance(leaf, kind) for leaf in leaves):
                raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


async def _kill(process: trio.Process) -> None:
    process.kill()


async def _run_rg(rg: str, args: list[str], cwd: Path, max_lines: int,
                  keep: Callable[[str], bool] | None) -> RgRun:
    lines: list[str] = []
    errors = bytearray()
    stopped = False

    async def drain(stream: trio.abc.ReceiveStream) -> None:
        async with stream:
            async for chunk in stream:
                errors.extend(chunk[:max(0, _STDERR_BYTES - len(errors))])

    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(functools.partial(
            trio.run_process, [rg, *args], cwd=str(cwd), check=False, deliver_cancel=_kill,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        assert process.stdout is not None and process.stderr is not None
        nursery.start_soon(drain, process.stderr)
        pending = bytearray()
        async with process.stdout:
            async for chunk in process.stdout:
                pending.extend(chunk)
                *complete, rest = pending.split(b"\n")
                pending = bytearray(rest)
                lines += await _filter(complete, keep)
                if len(lines) > max_lines:
                    stopped = True
                    process.kill()
                    break
            if pending and not stopped:
                lines += await _filter([bytes(pending)], keep)
    returncode = process.returncode if process.returncode is not None else -1
    return RgRun(lines[:max_lines + 1], returncode, errors.decode("utf-8", "replace"), stopped)


async def _filter(raw: list[bytearray] | list[bytes],
                  keep: Callable[[str], bool] | None) -> list[str]:
    lines = [line.decode("utf-8", "replace") for line in raw]
    if keep is None or not lines:
        return lines
    return await trio.to_thread.run_sync(lambda: [line for line in lines if keep(line)])


async def in_worker(work: Callable[[threading.Event], T]) -> T:
    """Run ``work`` in a thread; it should return soon after the event is set (on cancel)."""
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(work, stop, abandon_on_cancel=True)
    finally:
        stop.set()


def join_display(prefix: str, rel: str) -> str:
    """A path under a folder shown as ``prefix`` (``.`` for the project directory)."""
    if prefix == ".":
        return rel
    return prefix.rstrip("/") + "/" + rel


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
            "pattern": {"type": "string",
                        "description": "The glob pattern to match file paths against."},
            "path": {"type": "string", "description": (
                "The directory to search in, relative to the project directory or absolute "
                "(default: the project directory).")},
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
            raise ToolFailure(f"Directory not found: {args.path}" if missing
                              else f"{args.path} is not a directory.")
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
        rg = find_rg()
        if rg is not None:
            try:
                flags = ["--no-config", "--files", "--hidden", *RG_IGNORE_FLAGS]
                run = await run_rg(rg, [*flags, "--glob", "!.git", "--", "."], root,
                                   MAX_MATCHES, wanted)
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
                text += (f"\n[showing the {cap} newest of {total} matching files; narrow the "
                         "pattern or the path to see the rest]")
        return ToolResult(text, raw_output={"files": shown, "matches": len(ordered),
                                            "truncated": len(ordered) > cap or stopped})
