"""write_file: create a file or replace all of its text, shown to the editor as a diff.

Goes through ``ctx.files`` (the editor's ``fs/write_text_file`` when it serves it, else an
atomic write on disk). The old text, for the diff, is read the same way first. The result
carries the IaC check of the text written (:mod:`iaccode.tools.write_checks`), as an
editor's diagnostics would show it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import trio
from attrs import frozen

from iaccode.host.local_files import display_path
from iaccode.protocol.tool_calls import DiffContent, ToolCallContent
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext
from iaccode.tools.write_checks import checked


@frozen
class WriteFileInput:
    path: str
    content: str


async def read_existing(ctx: ToolContext, path: Path, shown: str) -> str | None:
    """The file's current text, None when there is no file; ToolFailure when it is not text."""
    try:
        return await ctx.files.read_text(path)
    except ToolFailure as failure:
        try:
            mode: int | None = (await trio.to_thread.run_sync(os.stat, path)).st_mode
        except OSError:
            mode = None
        if mode is None:
            return None  # a new file
        if stat.S_ISDIR(mode):
            raise ToolFailure(f"{shown} is a directory.") from failure
        raise ToolFailure(
            f"{shown} exists but could not be read as text, so it was not replaced: {failure}"
        ) from failure


def _count(text: str) -> str:
    lines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    return f"{lines} line{'s' if lines != 1 else ''}"


class WriteFile(Tool):
    name = "write_file"
    kind = "edit"
    read_only = False
    input_type = WriteFileInput
    description = (
        "Create a file, or replace everything in an existing one, with `content` (missing "
        "parent directories are created). To change part of an existing file prefer "
        "edit_file, which sends only the change; read a file before you overwrite it. The "
        "write is atomic: the file ends up with either its old text or all of the new."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": (
                    "The file to write, relative to the project directory or absolute."
                ),
            },
            "content": {"type": "string", "description": "The file's complete new text."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    def title(self, args: WriteFileInput) -> str:
        return f"Write {args.path}"

    def paths(self, args: WriteFileInput) -> list[str]:
        return [args.path]

    async def preview(self, args: WriteFileInput, ctx: ToolContext) -> list[ToolCallContent]:
        path = ctx.path(args.path)
        old = await read_existing(ctx, path, display_path(path, ctx.cwd))
        return [DiffContent(path=str(path), old_text=old, new_text=args.content)]

    async def run(self, args: WriteFileInput, ctx: ToolContext) -> ToolResult:
        path = ctx.path(args.path)
        shown = display_path(path, ctx.cwd)
        old = await read_existing(ctx, path, shown)
        await ctx.files.write_text(path, args.content)
        size = len(args.content.encode("utf-8"))
        if old is None:
            text = f"Created {shown} ({_count(args.content)}, {size} bytes)."
        elif old == args.content:
            text = f"Wrote {shown}: the content was already the same ({size} bytes)."
        else:
            text = f"Wrote {shown} ({_count(args.content)}, {size} bytes; it had {_count(old)})."
        return await checked(
            ToolResult(
                text,
                raw_output={"path": str(path), "created": old is None, "bytes": size},
                content=[DiffContent(path=str(path), old_text=old, new_text=args.content)],
            ),
            ctx,
        )
