"""read_file: a text file's lines, numbered like ``cat -n``, a window at a time.

The text comes through ``ctx.files``: the editor's buffer when it serves ``fs/read_text_file``
(unsaved changes included), else the disk, where special, binary and over-large files are
refused before they are read.

An image inside the project (PNG, JPEG, GIF, WebP, by its name) is read from the disk and goes
to the model as an image, checked as the API checks it (:mod:`iaccode.llm.images`).
"""

from __future__ import annotations

import base64
from pathlib import Path

from attrs import frozen

from iaccode import redaction
from iaccode.host.local_files import LocalFiles, display_path
from iaccode.llm.images import EXTENSIONS, MEDIA_TYPES, ImageError, image_block
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext, ToolLimits, in_project

_DEFAULTS = ToolLimits()
MAX_LINE_CHARS = 2_000
"""Longer lines are cut (minified code would otherwise eat the whole output)."""


@frozen
class ReadFileInput:
    path: str
    offset: int | None = None
    limit: int | None = None


def split_lines(text: str) -> list[str]:
    """The file's lines, without their endings (``\\n`` or ``\\r\\n``); only ``\\n`` splits."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def number_lines(lines: list[str], first: int) -> str:
    """``cat -n`` style: the line number right-aligned in six columns, a tab, the line."""
    out = []
    for number, line in enumerate(lines, start=first):
        if len(line) > MAX_LINE_CHARS:  # a secret across the cut must not leave its start
            kept = redaction.current().ends(line[:MAX_LINE_CHARS], end=True)
            line = f"{kept} [... line cut: {len(line) - MAX_LINE_CHARS} more characters]"
        out.append(f"{number:>6}\t{line}")
    return "\n".join(out)


class ReadFile(Tool):
    name = "read_file"
    kind = "read"
    read_only = True
    input_type = ReadFileInput
    description = (
        "Read a text file. Lines come numbered like `cat -n` (the line number, a tab, then the "
        "line); the number and the tab are not part of the file, so leave them out when you "
        f"quote text to edit_file. Reads {_DEFAULTS.read_default_lines} lines from the start "
        "by default; for longer files pass `offset` (the first line to read, from 1) and "
        "`limit` (how many lines), and the output says when more lines follow. Lines longer "
        f"than {MAX_LINE_CHARS} characters are cut. Binary files, directories and files over "
        f"{_DEFAULTS.read_max_bytes // (1024 * 1024)} MiB cannot be read (list a directory "
        "with list_files, search a large file with grep). When you know which files you need, "
        "read several in one turn."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": ("The file to read, relative to the project directory or absolute."),
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": ("The line number to start at (1 is the first line; default 1)."),
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": (
                    f"How many lines to read (default {_DEFAULTS.read_default_lines})."
                ),
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def title(self, args: ReadFileInput) -> str:
        if args.offset is None and args.limit is None:
            return f"Read {args.path}"
        first = args.offset or 1
        if args.limit is None:
            return f"Read {args.path} (from line {first})"
        return f"Read {args.path} (lines {first}-{first + args.limit - 1})"

    def paths(self, args: ReadFileInput) -> list[str]:
        return [args.path]

    async def run(self, args: ReadFileInput, ctx: ToolContext) -> ToolResult:
        if args.offset is not None and args.offset < 1:
            raise ToolFailure(f"offset is a line number starting at 1, not {args.offset}.")
        if args.limit is not None and args.limit < 1:
            raise ToolFailure(f"limit must be at least 1, not {args.limit}.")
        path = ctx.path(args.path)
        if path.suffix.lower() in EXTENSIONS and in_project(path, ctx.cwd, ctx.additional_dirs):
            return await _read_image(path, ctx)
        lines = split_lines(await ctx.files.read_text(path))
        shown_path = display_path(path, ctx.cwd)
        total = len(lines)
        first = args.offset or 1
        count = args.limit or ctx.limits.read_default_lines
        if not lines:
            return ToolResult(
                f"({shown_path} is empty)", raw_output={"path": str(path), "lines": 0}
            )
        if first > total:
            raise ToolFailure(
                f"offset {first} is past the end: {shown_path} has {total} "
                f"line{'s' if total != 1 else ''}."
            )
        window = lines[first - 1 : first - 1 + count]
        last = first + len(window) - 1
        text = number_lines(window, first)
        if last < total:
            text += f"\n... {total - last} more lines; use offset to read on (offset={last + 1})."
        return ToolResult(
            text, raw_output={"path": str(path), "lines": total, "first": first, "last": last}
        )


async def _read_image(path: Path, ctx: ToolContext) -> ToolResult:
    media_type = EXTENSIONS[path.suffix.lower()]
    data = await LocalFiles(ctx.limits.read_max_bytes).read_bytes(path)
    shown = display_path(path, ctx.cwd)
    try:
        block = image_block(media_type, base64.b64encode(data).decode("ascii"))
    except ImageError as exc:
        raise ToolFailure(f"Cannot show {shown} to you as an image: {exc}.") from None
    text = f"{shown}: a {MEDIA_TYPES[media_type]} image of {len(data):,} bytes (shown above)."
    return ToolResult(
        text,
        raw_output={"path": str(path), "media_type": media_type, "bytes": len(data)},
        model_content=[block, {"type": "text", "text": text}],
    )
