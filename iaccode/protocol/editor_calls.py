"""The requests the agent sends the editor for files and terminals (``fs/*``, ``terminal/*``).

The permission question is ``tool_calls.RequestPermissionRequest``. The editor's answers are
read leniently where they are used (``iaccode.session.editor``): a field we cannot read is a
failure of that one call, not of the connection.
"""

from __future__ import annotations

from attrs import frozen


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
