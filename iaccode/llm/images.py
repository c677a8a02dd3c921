"""Images as the Messages API takes them: checked before any request is made.

The API accepts PNG, JPEG, GIF and WebP, base64-encoded, up to ``MAX_BASE64_BYTES`` each; an
image that breaks a rule would fail the whole request (and every later one of the session,
since the history keeps it), so it is refused here with a message saying why.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

MEDIA_TYPES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
EXTENSIONS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
MAX_BASE64_BYTES = 5 * 1024 * 1024
"""The API's limit on one image's base64 data (5 MB)."""


class ImageError(ValueError):
    """The image cannot go to the model; ``str()`` says why, for the user or the model."""


def sniff(data: bytes) -> str | None:
    """The media type the bytes' signature says, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def checked(media_type: str, encoded: str) -> bytes:
    """The decoded image; ImageError when the API would refuse it."""
    if media_type not in MEDIA_TYPES:
        raise ImageError(
            f"unsupported image type {media_type!r}; the model takes "
            f"{', '.join(MEDIA_TYPES.values())} ({', '.join(MEDIA_TYPES)})"
        )
    if len(encoded) > MAX_BASE64_BYTES:
        raise ImageError(
            f"the image is {len(encoded):,} bytes of base64, over the model's "
            f"limit of {MAX_BASE64_BYTES:,}"
        )
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f"the image data is not valid base64 ({exc})") from None
    if not data:
        raise ImageError("the image data is empty")
    actual = sniff(data)
    if actual != media_type:
        found = f"a {MEDIA_TYPES[actual]} image" if actual else "not an image we know"
        raise ImageError(
            f"the data is not {MEDIA_TYPES[media_type]} as its type "
            f"{media_type!r} says: it is {found}"
        )
    return data


def image_block(media_type: str, encoded: str) -> dict[str, Any]:
    """An API image block (checked: ImageError)."""
    checked(media_type, encoded)
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": encoded},
    }
