"""Readable text of a web response: media types, charsets, and HTML made markdown-ish.

HTML loses its scripts, styles and hidden elements and keeps its title, headings, paragraphs,
lists, links (made absolute; ``javascript:`` ones dropped) and tables; plain text and JSON stay
as they are. Anything else is not text, and refused.
"""

from __future__ import annotations

import codecs
import re
from typing import Any, Literal
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

from iaccode.tool_result import ToolFailure

TextKind = Literal["html", "text"]

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_DROPPED_TAGS = [
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "frame",
    "frameset",
    "svg",
    "canvas",
    "object",
    "embed",
    "head",
    "title",
    "meta",
    "link",
    "base",
]


def media_type(content_type: str | None) -> tuple[str | None, str | None]:
    """``(media type, charset)`` from a Content-Type header, both lowercased."""
    if not content_type:
        return None, None
    media, *params = content_type.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower() or None
    return media.strip().lower() or None, charset


def text_kind(media: str) -> TextKind | None:
    if media in ("text/html", "application/xhtml+xml"):
        return "html"
    if media.startswith("text/"):
        return "text"
    if media in (
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
    ):
        return "text"
    if media.startswith("application/") and media.endswith(("+json", "+xml", "+yaml")):
        return "text"
    return None


def not_text(url: str, media: str) -> str:
    return (
        f"the content type of {url} is {media}, which is not text: web_fetch returns "
        "only HTML, plain text, JSON and other text"
    )


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().strip("\"'")).name
    except LookupError:
        return None
    # As browsers do: pages labelled latin-1 or ascii are windows-1252.
    return "cp1252" if name in ("iso8859-1", "latin-1", "ascii") else name


def _decode(body: bytes, charset: str | None, kind: TextKind) -> str:
    if body.startswith(codecs.BOM_UTF8):
        return body[len(codecs.BOM_UTF8) :].decode("utf-8", "replace")
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return body.decode("utf-16", "replace")
    name = _codec(charset)
    if name is None and kind == "html":
        found = _META_CHARSET.search(body[:4096])
        name = _codec(found.group(1).decode("ascii")) if found else None
    try:
        return body.decode(name or "utf-8", "replace")
    except LookupError:  # a codec that is not a text encoding (rot13, zlib, ...)
        return body.decode("utf-8", "replace")


def _sniff(body: bytes) -> TextKind | None:
    head = body[:1024]
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    start = head.lstrip().lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "text"


def _is_hidden(tag: Tag) -> bool:
    style = tag.get("style")
    return (
        tag.has_attr("hidden")
        or str(tag.get("aria-hidden", "")).lower() == "true"
        or (isinstance(style, str) and _HIDDEN_STYLE.search(style) is not None)
    )


class _Markdown(MarkdownConverter):
    def convert_img(self, el: Any, text: str, parent_tags: set[str]) -> str:
        alt = el.attrs.get("alt") or ""
        return f"[image: {alt}]" if isinstance(alt, str) and alt.strip() else ""


def html_to_text(markup: str, base_url: str = "") -> str:
    """Readable text of an HTML page: title, headings, paragraphs, lists, links, tables."""
    soup = BeautifulSoup(markup, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    doomed: list[Tag] = list(soup.find_all(_DROPPED_TAGS))
    doomed += [tag for tag in soup.find_all(True) if _is_hidden(tag)]
    for tag in doomed:
        if not tag.decomposed:
            tag.decompose()
    for link in soup.find_all("a", href=True):
        href = link.get("href")
        if isinstance(href, str):
            if href.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
                del link["href"]
            elif base_url:
                link["href"] = urljoin(base_url, href.strip())
    try:
        text = _Markdown(
            heading_style="ATX",
            bullets="-",
            escape_asterisks=False,
            escape_underscores=False,
            escape_misc=False,
        ).convert_soup(soup)
    except RecursionError:  # absurdly deep nesting: plain text instead
        text = soup.get_text("\n", strip=True)
    lines = [line.rstrip() for line in text.splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if title:
        text = f"# {title}\n\n{text}" if text else f"# {title}"
    return text


def to_text(body: bytes, content_type: str | None, url: str) -> str:
    media, charset = media_type(content_type)
    kind = text_kind(media) if media is not None else _sniff(body)
    if kind is None:
        raise ToolFailure(not_text(url, media or "unknown binary data"))
    text = _decode(body, charset, kind)
    return html_to_text(text, url) if kind == "html" else text
