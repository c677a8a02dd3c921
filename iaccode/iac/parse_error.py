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
