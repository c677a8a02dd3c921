"""A tool's result, and what the editor is shown of a call, with every secret value we hold
replaced by ``[secret NAME]`` (:mod:`iaccode.redaction`).

The tool runner applies :func:`redacted_result` to every result, whichever tool made it (bash,
the editor's terminal, MCP, web_fetch, read_file of a file holding a key ...), before the model,
the editor, the saved tool output, the session history or the transcript gets it; and
:func:`redacted_content` to what a permission question shows. Images, audio and binary
resources are passed as they are: their data is not text a secret could be read from.
"""

from __future__ import annotations

from typing import Any

from attrs import evolve

from iaccode.protocol.content import EmbeddedResource, TextContent, TextResourceContents
from iaccode.protocol.tool_calls import ContentToolCallContent, DiffContent, ToolCallContent
from iaccode.redaction import Redactor, current
from iaccode.tool_result import ToolResult


def redacted_result(result: ToolResult, redactor: Redactor | None = None) -> ToolResult:
    redactor = redactor if redactor is not None else current()
    if not redactor:
        return result
    return evolve(
        result,
        text=redactor(result.text),
        raw_output=redactor.value(result.raw_output),
        content=redacted_content(result.content, redactor),
        model_content=None
        if result.model_content is None
        else [_model_block(block, redactor) for block in result.model_content],
    )


def redacted_content(
    content: list[ToolCallContent] | None, redactor: Redactor | None = None
) -> list[ToolCallContent] | None:
    redactor = redactor if redactor is not None else current()
    if content is None or not redactor:
        return content
    return [_shown(item, redactor) for item in content]


def _shown(item: ToolCallContent, redactor: Redactor) -> ToolCallContent:
    if isinstance(item, DiffContent):
        return evolve(
            item,
            new_text=redactor(item.new_text),
            old_text=None if item.old_text is None else redactor(item.old_text),
        )
    if isinstance(item, ContentToolCallContent):
        block = item.content
        if isinstance(block, TextContent):
            return evolve(item, content=evolve(block, text=redactor(block.text)))
        if isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            resource = evolve(block.resource, text=redactor(block.resource.text))
            return evolve(item, content=evolve(block, resource=resource))
    return item


def _model_block(block: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return {**block, "text": redactor(block["text"])}
    return block
