"""An MCP server's tool as one of ours: ``mcp__<server>__<tool>`` for the model.

Its input goes to the server as the model gave it (the server checks it against the schema it
published). Permissions follow the tool's annotations (:func:`mcp_read_only`); a tool
not marked read-only or non-destructive asks in every mode (``Tool.always_asks``) unless its
server is ``trusted`` in config.toml. The kind
shown to the editor too: ``fetch`` when it reaches the open world, ``read`` when read-only,
else ``other``. The result becomes text for the model, with its images beside it, and content
for the editor: text as text, images as images, embedded resources as their text,
``structuredContent`` as JSON text when the server sent no text of it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from iaccode.mcp.connection import ask_user
from iaccode.mcp.names import tool_name
from iaccode.printable import shown, visible
from iaccode.protocol.content import ImageContent, TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent, ToolCallContent, ToolKind
from iaccode.redaction import redact
from iaccode.tool_result import ToolResult
from iaccode.tools.base import Tool, ToolContext, truncate

if TYPE_CHECKING:
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpToolSpec

    from iaccode.mcp.connection import ServerConnection

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Largest image passed on to the model (the Messages API's limit); a larger one is named."""
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types the Messages API takes."""


def mcp_may_change_infrastructure(annotations: Mapping[str, Any]) -> bool:
    """Whether an MCP tool asks in every mode: its server marks it neither read-only
    (``readOnlyHint: true``) nor non-destructive (``destructiveHint: false``); by MCP's
    defaults every other tool may destroy."""
    return not (
        annotations.get("readOnlyHint") is True or annotations.get("destructiveHint") is False
    )


MCP_ALWAYS_ASKS = (
    "its MCP server does not mark it read-only or non-destructive, so it may "
    "change real infrastructure"
)


def mcp_read_only(annotations: Mapping[str, Any]) -> bool:
    """Whether an MCP tool counts as read-only: it runs without a question (like the read
    tools) and is allowed in plan mode. Only when its server says so (``readOnlyHint: true``);
    no hint, or any other, means it may change something, so it asks (``*_always`` holds for
    that tool), plan mode refuses it and bypass runs it, like a command."""
    return annotations.get("readOnlyHint") is True


class McpTool(Tool):
    """Built by :func:`mcp_tool` (the Tool attributes are per class, so one class each)."""

    server: str
    tool: str

    def __init__(self, connection: ServerConnection) -> None:
        self._connection = connection

    def title(self, args: Any) -> str:
        return f"{shown(self.tool)} ({shown(self.server)} MCP server)"

    def shown_paths(self, args: Any) -> list[str]:
        return path_arguments(args)

    async def preview(self, args: Any, ctx: ToolContext) -> list[ToolCallContent] | None:
        """The arguments, for the question (a client may not show ``rawInput``), each
        character shown as it is (letters of any script as themselves)."""
        text = visible(json.dumps(args, indent=2, ensure_ascii=False))
        return [
            ContentToolCallContent(
                TextContent(
                    truncate(
                        f"{shown(self.tool)} on the {shown(self.server)} MCP server, "
                        f"with:\n\n{text}",
                        ctx.limits.output_chars,
                    )
                )
            )
        ]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        result = await self._connection.call_tool(
            self.tool, args, ask_user(ctx) if ctx.elicit else None
        )
        return tool_result(result, ctx.limits.output_chars)


PATH_WORDS = ("path", "file", "dir", "folder")
"""An argument whose name has one of these (``path``, ``repo_path``, ``files``,
``directory``) names paths; so do ``source``, ``destination``, ``root`` and ``cwd``."""
PATH_NAMES = frozenset({"source", "destination", "root", "cwd"})


def path_arguments(args: Any) -> list[str]:
    """The paths among an MCP call's arguments (top-level strings, or lists of them, under a
    path-like name; ``file://`` URIs as their path), to show as the call's locations."""
    if not isinstance(args, dict):
        return []
    found: list[str] = []
    for key, value in args.items():
        lowered = str(key).lower()
        if lowered not in PATH_NAMES and not any(word in lowered for word in PATH_WORDS):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item.startswith("file://"):
                item = item[len("file://") :]
            if (
                isinstance(item, str)
                and item
                and "\n" not in item
                and len(item) < 4096
                and "://" not in item
            ):
                found.append(item)
    return found


def mcp_tool(connection: ServerConnection, spec: McpToolSpec, name: str | None = None) -> Tool:
    """The tool ``spec`` of ``connection``'s server, named ``name`` (default: ``tool_name``)."""
    annotations = (
        spec.annotations.model_dump(by_alias=True, exclude_none=True)
        if spec.annotations is not None
        else {}
    )
    read_only = mcp_read_only(annotations)
    kind: ToolKind = (
        "fetch" if annotations.get("openWorldHint") is True else "read" if read_only else "other"
    )
    name = name or tool_name(connection.name, spec.name)
    cls = type(
        f"McpTool_{name}",
        (McpTool,),
        {
            "name": name,
            "server": connection.name,
            "tool": spec.name,
            "description": spec.description
            or spec.title
            or f"{spec.name} (MCP server {connection.name})",
            "kind": kind,
            "input_type": dict,
            "input_schema": spec.input_schema or {"type": "object", "properties": {}},
            "read_only": read_only,
            "always_asks": (
                MCP_ALWAYS_ASKS
                if mcp_may_change_infrastructure(annotations) and not connection.spec.trusted
                else None
            ),
        },
    )
    tool: Tool = cls(connection)
    return tool


def tool_result(result: CallToolResult, limit: int) -> ToolResult:
    """What the model and the editor get from an MCP result (``isError`` -> failed); the
    editor's text blocks are cut to ``limit`` characters each (the loop cuts the model's)."""
    import mcp_types

    texts: list[str] = []
    images: list[dict[str, Any]] = []
    shown: list[ToolCallContent] = []

    def add(text: str) -> None:
        text = redact(text)  # before the cut below: no piece of a secret at it
        texts.append(text)
        shown.append(ContentToolCallContent(TextContent(truncate(text, limit))))

    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            add(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            problem = _image_problem(block.data, block.mime_type)
            if problem is None:
                images.append(
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": block.mime_type,
                            "data": block.data,
                        },
                    }
                )
                texts.append(f"[image: {block.mime_type}]")
                shown.append(ContentToolCallContent(ImageContent(block.data, block.mime_type)))
            else:
                add(f"[image: {block.mime_type}, not passed on: {problem}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            add(
                resource.text
                if isinstance(resource, mcp_types.TextResourceContents)
                else f"[resource {resource.uri}: {resource.mime_type or 'binary'} data]"
            )
        elif isinstance(block, mcp_types.ResourceLink):
            add(f"[resource link: {block.uri}]")
        else:  # audio, and whatever later revisions add
            add(f"[{block.type}: {getattr(block, 'mime_type', None) or 'content'}]")
    structured = result.structured_content
    if structured is not None and not any(b.type == "text" for b in result.content):
        # Servers SHOULD mirror structured content in a text block; when it did not, show it.
        add(json.dumps(structured, indent=2, ensure_ascii=False))
    text = "\n".join(texts) or ("The tool failed." if result.is_error else "(no output)")
    raw: dict[str, Any] = {"output": truncate(text, limit), "isError": bool(result.is_error)}
    if structured is not None:
        raw["structuredContent"] = structured
    # With images the model gets blocks (the text cut here, as the loop cuts a plain one).
    model_content = [{"type": "text", "text": truncate(text, limit)}, *images] if images else None
    return ToolResult(
        text,
        is_error=bool(result.is_error),
        raw_output=raw,
        content=shown or None,
        model_content=model_content,
    )


def _image_problem(data: str, mime_type: str) -> str | None:
    """Why the model cannot be given this image, or None."""
    if mime_type not in IMAGE_TYPES:
        return "a type the model cannot read"
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return "not valid base64"
    return f"{size} bytes, the limit is {MAX_IMAGE_BYTES}" if size > MAX_IMAGE_BYTES else None
