"""list_files: one directory's entries, without what .gitignore leaves out.

The directory is the real path the permission check judged, opened without following a
symbolic link (:func:`~iaccode.host.local_files.open_verified`); its entries are listed, never
entered, so a link in it (to a folder outside, say) is only named.

Also the .gitignore rules and the ignore-aware walk that glob and grep share (their pure-Python
fallback walks with it; their ripgrep path filters with it).
"""

from __future__ import annotations

import os
from pathlib import Path

import trio
from attrs import frozen

from iaccode.host.local_files import open_verified
from iaccode.host.search.ignore import GIT_DIR, GitIgnores
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext

MAX_SCAN = 100_000
"""Most entries list_files looks at in one directory."""


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
            "path": {
                "type": "string",
                "description": (
                    "The directory to list, relative to the project directory or absolute "
                    "(default: the project directory)."
                ),
            },
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
            listing = await trio.to_thread.run_sync(
                _list, folder, ctx.cwd, cap, abandon_on_cancel=True
            )
        except FileNotFoundError as exc:
            raise ToolFailure(f"Directory not found: {args.path}") from exc
        except NotADirectoryError as exc:
            raise ToolFailure(
                f"{args.path} is a file, not a directory; use read_file to read it."
            ) from exc
        except OSError as exc:
            raise ToolFailure(f"Cannot list {args.path}: {exc.strerror or exc}.") from exc
        empty = "(nothing but ignored entries)" if listing.hidden else "(empty directory)"
        lines = list(listing.names) or [empty]
        if listing.hidden:
            lines.append(f"[{listing.hidden} entries left out by .gitignore]")
        if listing.total > len(listing.names):
            lines.append(
                f"[... {listing.total - len(listing.names)} more entries not shown "
                f"(the limit is {cap}); use glob to narrow down]"
            )
        if not listing.complete:
            lines.append(f"[stopped after looking at {MAX_SCAN} entries]")
        return ToolResult(
            "\n".join(lines),
            raw_output={
                "path": str(folder),
                "entries": listing.names,
                "total": listing.total,
                "ignored": listing.hidden,
            },
        )
