"""The one error the IaC readers raise: a file that does not parse, with where and why."""

from __future__ import annotations

from attrs import frozen


@frozen
class ParseError(Exception):
    """1-based ``line`` and ``column`` (0 when unknown), and what is wrong, readably."""

    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


class TooDeep(ParseError):
    """A file nested too deep to parse (readers that list files leave it out, saying so)."""


MAX_DEPTH = 256
"""Deepest bracket nesting a file may have to be parsed at all (real IaC stays under 30)."""

_OPEN, _CLOSE = b"[{(", b"]})"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _OPEN + _CLOSE)


def check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    """Raise ParseError when the brackets of ``text`` nest deeper than ``limit``.

    The parsers recurse per level: a JSON, YAML or HCL file 100,000 deep ends them in a
    RecursionError (or worse, the C stack) after seconds of work. Brackets in strings count
    too, which only matters for a file no one writes by hand. Cheap: only the brackets are
    looked at, after a C-level filter."""
    brackets = text.encode("utf-8", "replace").translate(None, _NOT_BRACKETS)
    depth = 0
    for byte in brackets:
        depth += 1 if byte in _OPEN else -1
        if depth > limit:
            raise TooDeep(0, 0, f"nested over {limit} levels deep; not read")
