"""The session's own errors: what went wrong, in its terms, never a JSON-RPC error.

    InvalidParams    the request asked for something that cannot be (an unknown mode, a
                     prompt with a bad image); the server answers -32602 with ``problems``
    EditorError      the editor answered one of our requests with an error, or is gone; the
                     editor facade (``session/editor.py``) turns it into the tools' ToolFailure
                     or a permission answer

Only ``iaccode.server`` maps them to and from JSON-RPC errors (``server/routes.py``,
``server/editor_requests.py``).
"""

from __future__ import annotations

from typing import Any


class InvalidParams(Exception):
    """The request's params ask for something that cannot be."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__("; ".join(f"{where}: {problem}" for where, problem in problems.items()))
        self.problems = problems
        """Where in the request (``params.modeId``) -> what is wrong with it."""


class EditorError(Exception):
    """The editor did not do what we asked: its error answer, or the connection went away."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        """The editor's message (``connection closed`` when it is gone)."""
        self.data = data
        """The ``data`` of its error, if it sent any."""
