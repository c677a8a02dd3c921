"""The names MCP tools go by for the model (``mcp__<server>__<tool>``), and the server's names
and titles as the editor shows them.

The Messages API takes tool names of ``[A-Za-z0-9_-]{1,64}``: other characters become ``_``,
and a longer name is cut and ends with a hash of the whole one, so two long names that share a
beginning still differ.

What a server calls its tools, prompts and their arguments, and what it says went wrong, reaches
the editor's title bars, command menus and messages as :func:`iaccode.printable.shown` makes it.
"""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 64
PREFIX = "mcp__"
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")
_HASH_LENGTH = 8


def tool_name(server: str, tool: str) -> str:
    name = _OUTSIDE.sub("_", f"{PREFIX}{server}__{tool}")
    if len(name) <= MAX_LENGTH:
        return name
    return shortened(f"{server}\0{tool}", name)


def shortened(identity: str, name: str) -> str:
    """``name`` cut to fit, ending with ``_`` and a hash of ``identity``."""
    digest = hashlib.sha256(identity.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{name[: MAX_LENGTH - _HASH_LENGTH - 1]}_{digest}"
