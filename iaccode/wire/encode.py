"""How every JSON-RPC message is written: compact JSON, UTF-8, one line.

It builds json's C encoder from ``_json`` itself (the json package is imported only where the C
accelerator is missing).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _unencodable(value: object) -> object:
    # json.JSONEncoder.default's message
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _c_encoder() -> Any:
    try:
        from _json import encode_basestring, make_encoder
    except ImportError:  # an interpreter without the C accelerator
        return None
    return make_encoder(None, _unencodable, encode_basestring, None, ":", ",", False, False, True)


_C_ENCODE = _c_encoder()
"""The C encoder ``json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode`` makes
for each call (no circular-reference check: our messages are trees), made once; None where the
C accelerator is missing."""


def dumps_line(message: dict[str, Any]) -> bytes:
    """``message`` as one line of compact JSON, newline included."""
    # A lone surrogate (a valid JSON escape, so peers and models can send one) cannot be UTF-8:
    # "backslashreplace" writes it back as the same \uXXXX escape, inside its string.
    if _C_ENCODE is not None:
        try:
            return "".join(_C_ENCODE(message, 0)).encode("utf-8", "backslashreplace") + b"\n"
        except RecursionError:
            pass  # circular: the checking encoder below raises the usual ValueError
    import json

    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    return encoder.encode(message).encode("utf-8", "backslashreplace") + b"\n"
