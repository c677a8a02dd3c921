"""How every JSON-RPC message is written: compact JSON, UTF-8, one line.

Standard library only: the early handshake (``iaccode/server/handshake.py``) writes its answer
with it before the rest of the agent is imported, byte for byte as ``Connection`` would.
"""

from __future__ import annotations

import json
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""What ``json.dumps`` with these options would build anew for every message."""
_C_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # not in the type stubs
_C_ENCODE = (None if _C_MAKE_ENCODER is None else _C_MAKE_ENCODER(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True))
"""The C encoder ``_ENCODER.encode`` makes for each call (no circular-reference check: our
messages are trees), made once; None where the C accelerator is missing."""


def dumps_line(message: dict[str, Any]) -> bytes:
    """``message`` as one line of compact JSON, newline included."""
    # A lone surrogate (a valid JSON escape, so peers and models can send one) cannot be UTF-8:
    # "backslashreplace" writes it back as the same \uXXXX escape, inside its string.
    if _C_ENCODE is not None:
        try:
            return "".join(_C_ENCODE(message, 0)).encode("utf-8", "backslashreplace") + b"\n"
        except RecursionError:
            pass  # circular: the checking encoder below raises the usual ValueError
    return _ENCODER.encode(message).encode("utf-8", "backslashreplace") + b"\n"
