"""edit_file: replace an exact piece of a file's text, shown to the editor as a diff.

The piece must occur exactly once (or ``replace_all`` says every occurrence goes), so an edit
never lands somewhere the model did not mean. When it is not found, the failure says whether
it would match with different whitespace or line endings, or with read_file's line numbers
left out, so the model can fix its quote instead of guessing. The result carries the IaC check
of the edited text (:mod:`iaccode.tools.write_checks`), as for write_file.
"""

from __future__ import annotations

import re
from pathlib import Path

import trio
from attrs import frozen

from iaccode.host.local_files import display_path
from iaccode.protocol.tool_calls import DiffContent, ToolCallContent
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import Tool, ToolContext
from iaccode.tools.write_checks import checked

_WHITESPACE = re.compile(r"\s+")
_LINE_NUMBER = re.compile(r"^ *\d+\t", re.MULTILINE)


@frozen
class EditFileInput:
    path: str
    old_string: str
    new_string: str
    replace_all: bool = False


def _squash(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _not_found(text: str, old: str, shown: str) -> ToolFailure:
    message = f"old_string was not found in {shown}."
    text = text.replace("\r\n", "\n")
    if _LINE_NUMBER.match(old) and _LINE_NUMBER.sub("", old) in text:
        hint = (
            "It matches once the line-number prefixes from read_file are removed: quote "
            "only the file's text."
        )
    elif _squash(old) and _squash(old) in _squash(text):
        hint = (
            "It matches if whitespace is ignored: copy the exact indentation, spaces and "
            "line breaks from the file (read it again if unsure)."
        )
    else:
        hint = "Read the file again and copy the text to replace exactly, including whitespace."
    return ToolFailure(f"{message} {hint}")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


class EditFile(Tool):
    name = "edit_file"
    kind = "edit"
    read_only = False
    input_type = EditFileInput
    description = (
        "Replace text in an existing file: `old_string` is replaced with `new_string`. "
        "`old_string` must match the file exactly, whitespace and indentation included, and "
        "must occur exactly once: include enough surrounding lines to make it unique, or set "
        "`replace_all` to replace every occurrence (e.g. to rename something). Copy text from "
        "read_file output without the line-number prefix (the number and the tab). Read the "
        "file before editing it. To create a file, or rewrite all of it, use write_file."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": ("The file to edit, relative to the project directory or absolute."),
            },
            "old_string": {
                "type": "string",
                "description": (
                    "The exact text to replace (unique in the file unless replace_all)."
                ),
            },
            "new_string": {
                "type": "string",
                "description": ("The text to put in its place (must differ from old_string)."),
            },
            "replace_all": {
                "type": "boolean",
                "description": ("Replace every occurrence of old_string (default false)."),
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    }

    def title(self, args: EditFileInput) -> str:
        return f"Edit {args.path}"

    def paths(self, args: EditFileInput) -> list[str]:
        return [args.path]

    async def preview(self, args: EditFileInput, ctx: ToolContext) -> list[ToolCallContent]:
        change = await _plan(args, ctx)
        return [
            DiffContent(path=str(change.path), old_text=change.old_text, new_text=change.new_text)
        ]

    async def run(self, args: EditFileInput, ctx: ToolContext) -> ToolResult:
        change = await _plan(args, ctx)
        await ctx.files.write_text(change.path, change.new_text)
        count, shown = change.count, display_path(change.path, ctx.cwd)
        where = f"{count} occurrences" if count > 1 else f"1 occurrence, at line {change.line}"
        return await checked(
            ToolResult(
                f"Edited {shown}: replaced {where}.",
                raw_output={"path": str(change.path), "replacements": count, "line": change.line},
                content=[
                    DiffContent(
                        path=str(change.path), old_text=change.old_text, new_text=change.new_text
                    )
                ],
            ),
            ctx,
        )


@frozen
class _Change:
    path: Path
    old_text: str
    new_text: str
    count: int
    line: int
    """Where the first replacement starts."""


async def _plan(args: EditFileInput, ctx: ToolContext) -> _Change:
    """The edit worked out, nothing written (the permission question shows it as a diff)."""
    path = ctx.path(args.path)
    shown = display_path(path, ctx.cwd)
    if not args.old_string:
        raise ToolFailure(
            "old_string is empty. To create a file or replace all of its text, use write_file."
        )
    if args.old_string == args.new_string:
        raise ToolFailure("old_string and new_string are the same: there is nothing to change.")
    try:
        text = await ctx.files.read_text(path)
    except ToolFailure as failure:
        if not await trio.Path(path).exists():
            raise ToolFailure(
                f"File not found: {shown}. To create a file, use write_file."
            ) from failure
        raise
    old, new = args.old_string, args.new_string
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r" not in old:
        # The file has Windows line endings; the model quoted with plain \n.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise _not_found(text, args.old_string, shown)
    if count > 1 and not args.replace_all:
        raise ToolFailure(
            f"old_string occurs {count} times in {shown}. Add surrounding lines to "
            "old_string so it matches only the place you mean, or set replace_all to "
            "replace all of them."
        )
    first_line = _line_of(text, text.index(old))
    new_text = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    return _Change(path, text, new_text, count, first_line)
