"""The editor as one session reaches it: every call the agent makes to the client, typed.

    Editor.send_update          session/update (a notification); queue_update without waiting
    Editor.advise               a ``notice``, or for clients without them a ``⚠`` chat message
    Editor.request_permission   session/request_permission -> the option kind chosen
    Editor.elicit               elicitation/create -> the user's answer (ElicitationAnswer),
                                in the modes the client advertised (elicitation_modes)
    Editor.files                fs/read_text_file, fs/write_text_file (FileAccess)
    Editor.terminal             terminal/create, output, wait_for_exit, kill, release
                                (ClientTerminal), None unless the client has terminals

The requests go out through a plain ``request`` callable the server gives (it raises
EditorError when the editor answers with an error). Here those errors become the tools' own
(ToolFailure, saying what failed) or, for a permission question, "no answer"; the replies are
read into values. Files are the editor's only for the directions it advertised
(``fs.readTextFile``, ``fs.writeTextFile``), local otherwise: reading through the editor sees
its unsaved buffers, and writes land in them.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from iaccode.protocol.convert import to_wire
from iaccode.protocol.editor_calls import (
    CreateTerminalRequest,
    EnvVariable,
    ReadTextFileRequest,
    TerminalRequest,
    WriteTextFileRequest,
)
from iaccode.protocol.elicitation import Elicitation, ElicitationAnswer
from iaccode.protocol.messages import (
    ClientCapabilities,
    NoticeSeverity,
    NoticeUpdate,
    SessionUpdate,
    warning_chunk,
)
from iaccode.protocol.tool_calls import (
    PermissionOption,
    RequestPermissionRequest,
    ToolCallFields,
)
from iaccode.session.errors import EditorError
from iaccode.tools.base import (
    ClientTerminal,
    ExitStatus,
    FileAccess,
    TerminalOutput,
    ToolFailure,
    is_inside,
)
from iaccode.tools.local_files import make_parents

if TYPE_CHECKING:
    from iaccode.turn.env import PermissionChoice, QueueUpdate, SendUpdate

log = logging.getLogger(__name__)

EditorRequest = Callable[[str, Any], Awaitable[Any]]
"""Send one request to the editor and return its result; raises EditorError when the editor
answers with an error (or is gone). Cancelling the caller forgets the request."""


class Editor:
    """The editor for one session (implements the turn's ``EditorAccess``)."""

    def __init__(self, request: EditorRequest, send_update: SendUpdate, session_id: str,
                 client: ClientCapabilities, local: FileAccess,
                 queue_update: QueueUpdate = lambda update: False,
                 root: Path | None = None) -> None:
        """``root``: the project, where the folders of a file the editor writes are made
        first when missing (Toad, for one, does not make them)."""
        self._request = request
        self._send_update = send_update
        self._queue_update = queue_update
        self.session_id = session_id
        fs = client.fs
        self.files: FileAccess = (
            _EditorFiles(self, local, read=fs.read_text_file, write=fs.write_text_file,
                         root=root)
            if fs.read_text_file or fs.write_text_file else local)
        """Where tools read and write text files."""
        self.terminal: ClientTerminal | None = _EditorTerminal(self) if client.terminal else None
        """The editor's terminals, when it has them (else commands run here)."""
        session = client.session
        self.shows_notices = session is not None and session.notices is not None
        """The client shows ``notice`` updates (``session.notices``)."""
        self.shows_compaction = session is not None and session.compaction is not None
        """The client shows ``compaction_update`` (``session.compaction``)."""
        self.elicitation_modes: frozenset[str] = client.elicitation_modes()
        """The elicitation modes the editor can show (``form``, ``url``); none: no asking."""

    async def send_update(self, update: SessionUpdate) -> None:
        """A ``session/update`` for this session."""
        await self._send_update(update)

    def queue_update(self, update: SessionUpdate) -> bool:
        """A ``session/update`` sent only if that needs no wait; False: await send_update."""
        return self._queue_update(update)

    async def advise(self, message: str, *, title: str,
                     severity: NoticeSeverity = "warning") -> None:
        """A ``notice`` (``title``, ``message`` as its description) where the client shows
        them, else ``message`` in the chat as before."""
        await self.send_update(advisory(message, title=title, severity=severity,
                                        as_notice=self.shows_notices))

    async def request_permission(self, tool_call: ToolCallFields,
                                 options: list[PermissionOption]) -> PermissionChoice:
        """Ask the user; the kind of the option chosen, ``cancelled``, or None when there is
        no answer to go by (an error from the editor, or one we cannot read: both logged)."""
        question = RequestPermissionRequest(self.session_id, tool_call, options)
        try:
            response = await self._request("session/request_permission", to_wire(question))
        except EditorError as exc:
            log.warning("permission request failed: %s %s", exc.message, exc.data)
            return None
        choice = _selected_kind(response, options)
        if choice is None:
            log.warning("unreadable permission answer %r: not running the tool", response)
        return choice

    async def elicit(self, elicitation: Elicitation) -> ElicitationAnswer | None:
        """Ask the user for input (``elicitation/create``) and wait for the answer; None when
        there is none to go by: a mode the editor did not advertise (never sent), an error
        from the editor, or an answer we cannot read (both logged). Cancelling the caller
        cancels the request: the editor is sent ``$/cancel_request`` and may close the form."""
        if elicitation.mode not in self.elicitation_modes:
            log.warning("elicitation in %s mode not sent: the editor did not advertise it",
                        elicitation.mode)
            return None
        try:
            response = await self._request("elicitation/create",
                                           to_wire(elicitation.request(self.session_id)))
        except EditorError as exc:
            log.warning("elicitation failed: %s %s", exc.message, exc.data)
            return None
        answer = _elicitation_answer(response)
        if answer is None:
            log.warning("unreadable elicitation answer %r: taken as no answer", response)
        return answer

    async def read_text_file(self, path: Path) -> str:
        result = await self._fs("fs/read_text_file",
                                ReadTextFileRequest(self.session_id, str(path)), path)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise ToolFailure(f"The editor gave no text for {path}.")
        return content

    async def write_text_file(self, path: Path, text: str) -> None:
        await self._fs("fs/write_text_file",
                       WriteTextFileRequest(self.session_id, str(path), text), path)

    async def create_terminal(self, command: str, args: list[str], cwd: str,
                              output_byte_limit: int, env: dict[str, str] | None = None) -> str:
        variables = [EnvVariable(name, value) for name, value in (env or {}).items()] or None
        try:
            result = await self._request("terminal/create", to_wire(CreateTerminalRequest(
                self.session_id, command, args, cwd, output_byte_limit, variables)))
        except EditorError as exc:
            raise ToolFailure(f"The editor could not run the command: {exc.message}") from exc
        terminal_id = result.get("terminalId") if isinstance(result, dict) else None
        if not isinstance(terminal_id, str):
            raise ToolFailure("The editor did not create a terminal.")
        return terminal_id

    async def terminal_output(self, terminal_id: str) -> TerminalOutput:
        result = await self._terminal("terminal/output", terminal_id,
                                      "The editor could not read the terminal's output")
        if not result:
            return TerminalOutput(None)
        output = result.get("output")
        status = result.get("exitStatus")
        return TerminalOutput(output if isinstance(output, str) else "",
                              truncated=result.get("truncated") is True,
                              exit_status=_exit_status(status) if isinstance(status, dict)
                              else None)

    async def wait_for_terminal_exit(self, terminal_id: str) -> ExitStatus:
        return _exit_status(await self._terminal("terminal/wait_for_exit", terminal_id,
                                                 "The editor's terminal failed"))

    async def kill_terminal(self, terminal_id: str) -> None:
        await self._terminal("terminal/kill", terminal_id, "The editor could not kill the terminal")

    async def release_terminal(self, terminal_id: str) -> None:
        await self._terminal("terminal/release", terminal_id,
                             "The editor could not release the terminal")

    async def _fs(self, method: str, params: ReadTextFileRequest | WriteTextFileRequest,
                  path: Path) -> Any:
        try:
            return await self._request(method, to_wire(params))
        except EditorError as exc:
            detail = f" ({exc.data})" if exc.data else ""
            verb = "read" if method == "fs/read_text_file" else "write"
            raise ToolFailure(f"The editor could not {verb} {path}: {exc.message}{detail}"
                              ) from exc

    async def _terminal(self, method: str, terminal_id: str, failed: str) -> dict[str, Any]:
        try:
            result = await self._request(method, to_wire(TerminalRequest(self.session_id,
                                                                         terminal_id)))
        except EditorError as exc:
            raise ToolFailure(f"{failed}: {exc.message}") from exc
        return result if isinstance(result, dict) else {}


class _EditorFiles:
    """FileAccess through the editor for the directions it advertised, locally otherwise."""

    def __init__(self, editor: Editor, local: FileAccess, *, read: bool, write: bool,
                 root: Path | None = None) -> None:
        self._editor = editor
        self._local = local
        self._read = read
        self._write = write
        self._root = root

    async def read_text(self, path: Path) -> str:
        if not self._read:
            return await self._local.read_text(path)
        _refuse_special(path)
        return await self._editor.read_text_file(path)

    async def write_text(self, path: Path, text: str) -> None:
        if not self._write:
            return await self._local.write_text(path, text)
        if self._root is not None and is_inside(path.parent, self._root):
            await trio.to_thread.run_sync(make_parents, path)
        await self._editor.write_text_file(path, text)


class _EditorTerminal:
    """The editor's terminal as the tools' ClientTerminal."""

    def __init__(self, editor: Editor) -> None:
        self._editor = editor

    async def create(self, command: str, args: list[str], cwd: str,
                     output_byte_limit: int, env: dict[str, str] | None = None) -> str:
        return await self._editor.create_terminal(command, args, cwd, output_byte_limit, env)

    async def output(self, terminal_id: str) -> TerminalOutput:
        return await self._editor.terminal_output(terminal_id)

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        return await self._editor.wait_for_terminal_exit(terminal_id)

    async def kill(self, terminal_id: str) -> None:
        await self._editor.kill_terminal(terminal_id)

    async def release(self, terminal_id: str) -> None:
        await self._editor.release_terminal(terminal_id)


def advisory(message: str, *, title: str, severity: NoticeSeverity,
             as_notice: bool) -> SessionUpdate:
    """What ``advise`` sends: a ``notice``, or the ``⚠`` text chunk (:func:`warning_chunk`,
    with ``_meta.iaccode.error``) that clients without notices have always had."""
    if as_notice:
        return NoticeUpdate(severity, title, message)
    return warning_chunk(message)


def _refuse_special(path: Path) -> None:
    """The editor may block on a FIFO or a device just like we would: refuse them first."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ToolFailure(f"File not found: {path}") from None
    except OSError:
        return  # let the editor say what is wrong
    if stat.S_ISDIR(mode):
        raise ToolFailure(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        raise ToolFailure(f"{path} is not a regular file (a FIFO, socket or device).")


def _exit_status(status: dict[str, Any]) -> ExitStatus:
    code, signal = status.get("exitCode"), status.get("signal")
    return ExitStatus(code if isinstance(code, int) else None,
                      signal if isinstance(signal, str) else None)


def _elicitation_answer(response: Any) -> ElicitationAnswer | None:
    """The user's answer to an elicitation, or None when unreadable (``content`` must be an
    object, and is only kept with ``accept``)."""
    if not isinstance(response, dict) or not isinstance(response.get("action"), str):
        return None
    action, content = response["action"], response.get("content")
    if action == "accept":
        if content is not None and not isinstance(content, dict):
            return None
        return ElicitationAnswer(action, content)
    return ElicitationAnswer(action)


def _selected_kind(response: Any, options: list[PermissionOption]) -> PermissionChoice:
    """The option kind the user chose, ``cancelled``, or None when unreadable."""
    if not isinstance(response, dict):
        return None
    outcome = response.get("outcome")
    if isinstance(outcome, dict):  # the ACP shape
        if outcome.get("outcome") == "cancelled":
            return "cancelled"
        if outcome.get("outcome") == "selected":
            option_id = outcome.get("optionId")
            return next((o.kind for o in options if o.option_id == option_id), None)
        return None
    if outcome == "allowed":  # an older flat shape, still read
        option_id = response.get("option_id", "allow_once")
        kind = next((o.kind for o in options if o.option_id == option_id), None)
        return kind if kind in ("allow_once", "allow_always") else None
    if outcome == "denied":
        return "reject_once"
    return None
