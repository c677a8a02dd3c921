"""The names MCP tools go by for the model (``mcp__<server>__<tool>``), and the server's names
and titles as the editor shows them.

The Messages API takes tool names of ``[A-Za-z0-9_-]{1,64}``: other characters become ``_``,
and a longer name is cut and ends with a hash of the whole one, so two long names that share a
beginning still differ.

What a server calls its tools, prompts and their arguments, and what it says went wrong, reaches
the editor's title bars, command menus and messages: :func:`shown` makes it one line of
printable text (no control characters, newlines or escape sequences that forge another line, no
bidirectional overrides or invisible characters that make it read as something else), cut to a
length a title bar holds.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

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


SHOWN_CHARS = 120
"""Most characters of a server's name or title shown; a longer one is cut and ends with ``…``."""
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)", re.S)
"""Terminal escape sequences (CSI ``ESC [ ... m``, OSC ``ESC ] ... BEL``, two-character ones):
dropped whole, not only their ESC."""
_INVISIBLE = frozenset("\u061c\u200b\u200c\u200d\u200e\u200f\u2060\ufeff")
"""Characters that change how text reads without showing (the bidi marks, zero-width ones);
the other bidi controls (U+202A-U+202E, U+2066-U+2069) are format characters, below."""


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as one line of printable characters (each run of spaces, control and
    separator characters one space; format characters, bidi controls included, dropped), at
    most ``limit`` characters long."""
    out: list[str] = []
    for char in _ESCAPES.sub("", text):
        category = unicodedata.category(char)
        if char in _INVISIBLE or category in ("Cf", "Cs", "Co", "Cn"):
            continue
        if category in ("Cc", "Zl", "Zp", "Zs"):
            char = " "
        if char != " " or (out and out[-1] != " "):
            out.append(char)
    line = "".join(out).strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
