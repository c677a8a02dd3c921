"""Text from the model, a repository or a server, made safe to show: what the user reads in a
title bar or a permission question is what the text holds.

- :func:`shown`: a name or a title (an MCP server's tool, its error) as one line of printable
  text: no control characters, newlines or terminal escape sequences that forge another line,
  no bidirectional overrides or invisible characters that make it read as something else; cut
  to a length a title bar holds.
- :func:`visible`: a command, a path, an argv, where every character counts: each one that
  changes how the text reads without showing (control characters, the bidi controls, zero-width
  and other format characters, line and paragraph separators) is written as its escape
  (``\\u202e``, ``\\x1b``), so ``git status \\u202e...`` and ``prod \\u200b--dry-run`` show what
  they are. New lines stay, or become ``⏎`` in one line.
"""

from __future__ import annotations

import re
import unicodedata

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


def visible(text: str, one_line: bool = False) -> str:
    """``text`` with each character that does not show as itself escaped (tabs and, unless
    ``one_line``, new lines kept; in one line a new line is `` ⏎ ``). Idempotent: an escape
    is plain text."""
    out: list[str] = []
    for char in text:
        if char == "\n":
            out.append(" ⏎ " if one_line else char)
        elif char == "\t" or not _hides(char):
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def _hides(char: str) -> bool:
    category = unicodedata.category(char)
    return (
        char in _INVISIBLE
        or category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
        or (category == "Zs" and char != " ")
    )
