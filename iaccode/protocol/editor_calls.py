"""The requests the agent sends the editor for files and terminals (``fs/*``, ``terminal/*``),
and the editor's answers that we read.

The permission question is ``tool_calls.RequestPermissionRequest`` (its answer
``RequestPermissionResponse``). The answers are structured as strictly as the requests the
editor sends us (``convert.from_wire``); where they are used (``iaccode.session.editor``) an
answer that does not fit is a failure of that one call, saying what was wrong, not of the
connection. The answers to ``fs/write_text_file``, ``terminal/kill`` and ``terminal/release``
hold nothing we use, so they are not read.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

Meta = dict[str, Any] | None


@frozen
class ReadTextFileRequest:
    """``fs/read_text_file``: the file's text, as the editor has it (unsaved changes too)."""

    session_id: str
    path: str


@frozen
class WriteTextFileRequest:
    """``fs/write_text_file``: replace the file's text in the editor."""

    session_id: str
    path: str
    content: str


@frozen
class EnvVariable:
    name: str
    value: str


@frozen
class CreateTerminalRequest:
    """``terminal/create``: start ``command`` with ``args`` in ``cwd``, with ``env`` added to
    the editor's environment."""

    session_id: str
    command: str
    args: list[str]
    cwd: str
    output_byte_limit: int
    env: list[EnvVariable] | None = None


@frozen
class TerminalRequest:
    """``terminal/output``, ``wait_for_exit``, ``kill``, ``release``: one terminal."""

    session_id: str
    terminal_id: str


@frozen
class ReadTextFileResponse:
    """The answer to ``fs/read_text_file``."""

    content: str
    meta: Meta = None


@frozen
class CreateTerminalResponse:
    """The answer to ``terminal/create``."""

    terminal_id: str
    meta: Meta = None


@frozen
class TerminalExitStatus:
    """How a terminal's command ended (both None: not known); also the answer to
    ``terminal/wait_for_exit``, which has the same fields."""

    exit_code: int | None = None
    signal: str | None = None
    meta: Meta = None


@frozen
class TerminalOutputResponse:
    """The answer to ``terminal/output``."""

    output: str
    truncated: bool
    exit_status: TerminalExitStatus | None = None
    """Set once the command has ended."""
    meta: Meta = None
