"""ACP prompt content blocks -> the model's user message content.

Text passes through; resource links and embedded resources become text the model can read;
images and audio degrade to markers (we advertise neither capability).
"""

from __future__ import annotations

from typing import Any

from iaccode.protocol.content import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)


def to_model_content(blocks: list[ContentBlock]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": _as_text(block)} for block in blocks]


def _as_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ResourceLink):
        described = f" ({block.description})" if block.description else ""
        return f"[resource: {block.name} <{block.uri}>{described}]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return f'<resource uri="{resource.uri}">\n{resource.text}\n</resource>'
        mime = resource.mime_type or "application/octet-stream"
        return f"[resource: {resource.uri} ({mime}, binary content not shown)]"
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}]"
    raise TypeError(f"unhandled content block {type(block).__name__}")
