"""Content blocks: what prompts are made of and what updates carry (ACP `ContentBlock`)."""

from __future__ import annotations

from typing import Any, Literal

from attrs import frozen


@frozen
class TextContent:
    text: str
    type: Literal["text"] = "text"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@frozen
class ImageContent:
    data: str
    mime_type: str
    uri: str | None = None
    type: Literal["image"] = "image"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@frozen
class AudioContent:
    data: str
    mime_type: str
    type: Literal["audio"] = "audio"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@frozen
class ResourceLink:
    name: str
    uri: str
    mime_type: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None
    type: Literal["resource_link"] = "resource_link"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@frozen
class TextResourceContents:
    uri: str
    text: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


@frozen
class BlobResourceContents:
    uri: str
    blob: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


ResourceContents = TextResourceContents | BlobResourceContents


@frozen
class EmbeddedResource:
    resource: ResourceContents
    type: Literal["resource"] = "resource"
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource

CONTENT_TYPES: dict[str, type[ContentBlock]] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource_link": ResourceLink,
    "resource": EmbeddedResource,
}
