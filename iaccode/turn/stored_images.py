"""Large images in the history live in files beside it, not inline in every line.

When a record is written, each image over ``INLINE_LIMIT`` characters of base64 (in a
message's content, a tool result's content, or the ACP blocks of a prompt) is saved with
``save(bytes, extension) -> name`` and the record names the file instead:

    API block: {"type": "image",
                "source": {"type": "iaccode_file", "media_type": ..., "path": name}}
    ACP block: {"type": "image", "mimeType": ..., "data": "",
                "_meta": {"iaccode": {"file": name}}}

When a session is opened, :func:`restore` puts the data back (an image whose file is gone
becomes a text marker, so the history stays one the API accepts).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

INLINE_LIMIT = 16 * 1024
"""Base64 characters an image may have and still be written inline."""
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
FILE_SOURCE = "iaccode_file"

Save = Callable[[bytes, str], str]
Load = Callable[[str], "bytes | None"]


def externalize(record: dict[str, Any], save: Save) -> dict[str, Any]:
    """``record`` with its large images saved to files (a copy; the record is not changed)."""
    return _each_image(record, lambda b: _api_out(b, save), lambda b: _acp_out(b, save))


def restore(record: dict[str, Any], load: Load) -> dict[str, Any]:
    """``record`` with the images :func:`externalize` saved read back in."""
    return _each_image(record, lambda b: _api_in(b, load), lambda b: _acp_in(b, load))


Change = Callable[[dict[str, Any]], Any]


def _each_image(record: dict[str, Any], api: Change, acp: Change) -> dict[str, Any]:
    """``record`` with ``api`` applied to its API image blocks, ``acp`` to its ACP ones."""
    kind = record.get("type")
    if kind == "message" and isinstance(record.get("message"), dict):
        out = {**record, "message": _message(record["message"], api)}
        if isinstance(record.get("prompt"), list):
            out["prompt"] = [
                acp(block) if isinstance(block, dict) else block for block in record["prompt"]
            ]
        return out
    if kind == "compaction" and isinstance(record.get("messages"), list):
        return {**record, "messages": [_message(m, api) for m in record["messages"]]}
    return record


def _message(message: Any, change: Change) -> Any:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    return {**message, "content": [_block(block, change) for block in message["content"]]}


def _block(block: Any, change: Change) -> Any:
    if not isinstance(block, dict):
        return block
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        return {**block, "content": [_block(inner, change) for inner in block["content"]]}
    return change(block) if block.get("type") == "image" else block


def _api_out(block: dict[str, Any], save: Save) -> dict[str, Any]:
    source = block.get("source")
    if not (
        isinstance(source, dict)
        and source.get("type") == "base64"
        and isinstance(source.get("data"), str)
        and len(source["data"]) > INLINE_LIMIT
    ):
        return block
    media_type = str(source.get("media_type"))
    name = save(base64.b64decode(source["data"]), EXTENSIONS.get(media_type, "png"))
    return {**block, "source": {"type": FILE_SOURCE, "media_type": media_type, "path": name}}


def _api_in(block: dict[str, Any], load: Load) -> dict[str, Any]:
    source = block.get("source")
    if not (isinstance(source, dict) and source.get("type") == FILE_SOURCE):
        return block
    data = load(str(source.get("path")))
    if data is None:
        return {
            "type": "text",
            "text": f"[image: {source.get('media_type')}, its file {source.get('path')} is gone]",
        }
    return {
        **block,
        "source": {
            "type": "base64",
            "media_type": source.get("media_type"),
            "data": base64.b64encode(data).decode("ascii"),
        },
    }


def _acp_out(block: Any, save: Save) -> Any:
    if not (
        isinstance(block, dict)
        and block.get("type") == "image"
        and isinstance(block.get("data"), str)
        and len(block["data"]) > INLINE_LIMIT
    ):
        return block
    mime = str(block.get("mimeType"))
    name = save(base64.b64decode(block["data"]), EXTENSIONS.get(mime, "png"))
    meta = dict(block.get("_meta") or {})
    meta["iaccode"] = {**(meta.get("iaccode") or {}), "file": name}
    return {**block, "data": "", "_meta": meta}


def _acp_in(block: Any, load: Load) -> Any:
    if not (isinstance(block, dict) and block.get("type") == "image"):
        return block
    meta = block.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("iaccode"), dict):
        return block
    ours = meta["iaccode"]
    name = ours.get("file")
    if not isinstance(name, str):
        return block
    data = load(name)
    if data is None:
        return {"type": "text", "text": f"[image: {block.get('mimeType')}, its file is gone]"}
    rest = {k: v for k, v in ours.items() if k != "file"}
    new_meta = {k: v for k, v in meta.items() if k != "iaccode"}
    if rest:
        new_meta["iaccode"] = rest
    out = {**block, "data": base64.b64encode(data).decode("ascii")}
    if new_meta:
        out["_meta"] = new_meta
    else:
        out.pop("_meta", None)
    return out
