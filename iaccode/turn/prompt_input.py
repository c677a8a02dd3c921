"""ACP prompt content blocks -> the model's user message content.

Text passes through; resource links and embedded resources become text the model can read;
images with data become image blocks, checked first (:class:`PromptInputError` names the
block); an image with only a ``uri``, and audio, degrade to markers.
"""

from __future__ import annotations

from typing import Any

from iaccode.llm.images import ImageError, image_block
from iaccode.protocol.content import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)


class PromptInputError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        """The wire path of the bad block's field, e.g. ``params.prompt[1].data``."""


def to_model_content(blocks: list[ContentBlock]) -> list[dict[str, Any]]:
    """Raises PromptInputError for an image the model would refuse."""
    content = []
    for index, block in enumerate(blocks):
        if isinstance(block, ImageContent) and block.data:
            try:
                content.append(image_block(block.mime_type, block.data))
            except ImageError as exc:
                raise PromptInputError(f"params.prompt[{index}]", str(exc)) from None
        else:
            content.append({"type": "text", "text": _as_text(block)})
    return content


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
        return f"[image: {block.mime_type}{f' <{block.uri}>' if block.uri else ''}]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}]"
    raise TypeError(f"unhandled content block {type(block).__name__}")
