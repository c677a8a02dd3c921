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
(ToolFailure, saying what failed) or, for a permission question, "no answer". The replies are
structured into the protocol's answer types as strictly as the editor's requests are
(``convert.from_wire``); a reply that does not fit is treated like an error answer, its
message naming each bad field (``result.output: expected a string, got an integer``).

Files are the editor's only for the directions it advertised (``fs.readTextFile``,
``fs.writeTextFile``), local otherwise: reading through the editor sees its unsaved buffers,
and writes land in them.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from iaccode.host.local_files import is_inside, make_parents
from iaccode.protocol.convert import ParamsError, from_wire, to_wire
from iaccode.protocol.editor_calls import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    EnvVariable,
    ReadTextFileRequest,
    ReadTextFileResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    TerminalRequest,
    WriteTextFileRequest,
)
from iaccode.protocol.elicitation import CreateElicitationResponse, Elicitation, ElicitationAnswer
from iaccode.protocol.messages import (
    ClientCapabilities,
    NoticeSeverity,
    NoticeUpdate,
    SessionUpdate,
    warning_chunk,
)
from iaccode.protocol.tool_calls import (
    CancelledPermissionOutcome,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    ToolCallFields,
)
from iaccode.session.errors import EditorError
from iaccode.tool_result import ToolFailure
from iaccode.tools.base import ClientTerminal, ExitStatus, FileAccess, TerminalOutput

if TYPE_CHECKING:
    from iaccode.turn.env import PermissionChoice, QueueUpdate, SendUpdate

log = logging.getLogger(__name__)

T = TypeVar("T")

EditorRequest = Callable[[str, Any], Awaitable[Any]]
"""Send one request to the editor and return its result; raises EditorError when the editor
answers with an error (or is gone). Cancelling the caller forgets the request."""


class Editor:
    """The editor for one session (implements the turn's ``EditorAccess``)."""

    def __init__(
        self,
        request: EditorRequest,
        send_update: SendUpdate,
        session_id: str,
        client: ClientCapabilities,
        local: FileAccess,
        queue_update: QueueUpdate = lambda update: False,
        root: Path | None = None,
    ) -> None:
        """``root``: the project, where the folders of a file the editor writes are made
        first when missing (Toad, for one, does not make them)."""
        self._request = request
        self._send_update = send_update
        self._queue_update = queue_update
        self.session_id = session_id
        fs = client.fs
        self.files: FileAccess = (
            _EditorFiles(self, local, read=fs.read_text_file, write=fs.write_text_file, root=root)
            if fs.read_text_file or fs.write_text_file
            else local
        )
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

    async def advise(
        self, message: str, *, title: str, severity: NoticeSeverity = "warning"
    ) -> None:
        """A ``notice`` (``title``, ``message`` as its description) where the client shows
        them, else ``message`` in the chat as before."""
        await self.send_update(
            advisory(message, title=title, severity=severity, as_notice=self.shows_notices)
        )

    async def request_permission(
        self, tool_call: ToolCallFields, options: list[PermissionOption]
    ) -> PermissionChoice:
        """Ask the user; the kind of the option chosen, ``cancelled``, or None when there is
        no answer to go by (an error from the editor, a malformed answer, an option we did not
        offer: each logged, saying which)."""
        question = RequestPermissionRequest(self.session_id, tool_call, options)
        try:
            response = await self._request("session/request_permission", to_wire(question))
        except EditorError as exc:
            log.warning("permission request failed: %s %s", exc.message, exc.data)
            return None
        try:
            answer = from_wire(response, RequestPermissionResponse, "result")
        except ParamsError as exc:
            log.warning(
                "malformed permission answer %r (%s): not running the tool",
                response,
                exc,
            )
            return None
        choice = _selected_kind(answer, options)
        if choice is None:
            log.warning(
                "the permission answer %r chose no option we offered: not running the tool",
                response,
            )
        return choice

    async def elicit(self, elicitation: Elicitation) -> ElicitationAnswer | None:
        """Ask the user for input (``elicitation/create``) and wait for the answer; None when
        there is none to go by: a mode the editor did not advertise (never sent), an error
        from the editor, or a malformed answer (both logged). Cancelling the caller
        cancels the request: the editor is sent ``$/cancel_request`` and may close the form."""
        if elicitation.mode not in self.elicitation_modes:
            log.warning(
                "elicitation in %s mode not sent: the editor did not advertise it", elicitation.mode
            )
            return None
        try:
            response = await self._request(
                "elicitation/create", to_wire(elicitation.request(self.session_id))
            )
        except EditorError as exc:
            log.warning("elicitation failed: %s %s", exc.message, exc.data)
            return None
        try:
            answer = from_wire(response, CreateElicitationResponse, "result")
        except ParamsError as exc:
            log.warning("malformed elicitation answer %r (%s): taken as no answer", response, exc)
            return None
        if answer.action == "accept":
            return ElicitationAnswer(answer.action, answer.content)
        return ElicitationAnswer(answer.action)  # content goes with accept only

    async def read_text_file(self, path: Path) -> str:
        result = await self._fs(
            "fs/read_text_file", ReadTextFileRequest(self.session_id, str(path)), path
        )
        return _answer(
            "fs/read_text_file", result, ReadTextFileResponse, f"The editor gave no text for {path}"
        ).content

    async def write_text_file(self, path: Path, text: str) -> None:
        await self._fs(
            "fs/write_text_file", WriteTextFileRequest(self.session_id, str(path), text), path
        )

    async def create_terminal(
        self,
        command: str,
        args: list[str],
        cwd: str,
        output_byte_limit: int,
        env: dict[str, str] | None = None,
    ) -> str:
        variables = [EnvVariable(name, value) for name, value in (env or {}).items()] or None
        try:
            result = await self._request(
                "terminal/create",
                to_wire(
                    CreateTerminalRequest(
                        self.session_id, command, args, cwd, output_byte_limit, variables
                    )
                ),
            )
        except EditorError as exc:
            raise ToolFailure(f"The editor could not run the command: {exc.message}") from exc
        return _answer(
            "terminal/create",
            result,
            CreateTerminalResponse,
            "The editor did not create a terminal",
        ).terminal_id

    async def terminal_output(self, terminal_id: str) -> TerminalOutput:
        failed = "The editor could not read the terminal's output"
        result = await self._terminal("terminal/output", terminal_id, failed)
        answer = _answer("terminal/output", result, TerminalOutputResponse, failed)
        status = answer.exit_status
        return TerminalOutput(
            answer.output,
            truncated=answer.truncated,
            exit_status=_exit_status(status) if status is not None else None,
        )

    async def wait_for_terminal_exit(self, terminal_id: str) -> ExitStatus:
        failed = "The editor's terminal failed"
        result = await self._terminal("terminal/wait_for_exit", terminal_id, failed)
        return _exit_status(_answer("terminal/wait_for_exit", result, TerminalExitStatus, failed))

    async def kill_terminal(self, terminal_id: str) -> None:
        await self._terminal("terminal/kill", terminal_id, "The editor could not kill the terminal")

    async def release_terminal(self, terminal_id: str) -> None:
        await self._terminal(
            "terminal/release", terminal_id, "The editor could not release the terminal"
        )

    async def _fs(
        self, method: str, params: ReadTextFileRequest | WriteTextFileRequest, path: Path
    ) -> Any:
        try:
            return await self._request(method, to_wire(params))
        except EditorError as exc:
            detail = f" ({exc.data})" if exc.data else ""
            verb = "read" if method == "fs/read_text_file" else "write"
            raise ToolFailure(f"The editor could not {verb} {path}: {exc.message}{detail}") from exc

    async def _terminal(self, method: str, terminal_id: str, failed: str) -> Any:
        """The editor's answer (kill and release: not read, their answers hold nothing)."""
        try:
            return await self._request(
                method, to_wire(TerminalRequest(self.session_id, terminal_id))
            )
        except EditorError as exc:
            raise ToolFailure(f"{failed}: {exc.message}") from exc


class _EditorFiles:
    """FileAccess through the editor for the directions it advertised, locally otherwise."""

    def __init__(
        self,
        editor: Editor,
        local: FileAccess,
        *,
        read: bool,
        write: bool,
        root: Path | None = None,
    ) -> None:
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
        _refuse_special(path, missing_ok=True)  # a new file is the editor's to make
        if self._root is not None and is_inside(path.parent, self._root):
            await trio.to_thread.run_sync(make_parents, path)
        await self._editor.write_text_file(path, text)


class _EditorTerminal:
    """The editor's terminal as the tools' ClientTerminal."""

    def __init__(self, editor: Editor) -> None:
        self._editor = editor

    async def create(
        self,
        command: str,
        args: list[str],
        cwd: str,
        output_byte_limit: int,
        env: dict[str, str] | None = None,
    ) -> str:
        return await self._editor.create_terminal(command, args, cwd, output_byte_limit, env)

    async def output(self, terminal_id: str) -> TerminalOutput:
        return await self._editor.terminal_output(terminal_id)

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        return await self._editor.wait_for_terminal_exit(terminal_id)

    async def kill(self, terminal_id: str) -> None:
        await self._editor.kill_terminal(terminal_id)

    async def release(self, terminal_id: str) -> None:
        await self._editor.release_terminal(terminal_id)


def advisory(
    message: str, *, title: str, severity: NoticeSeverity, as_notice: bool
) -> SessionUpdate:
    """What ``advise`` sends: a ``notice``, or the ``⚠`` text chunk (:func:`warning_chunk`,
    with ``_meta.iaccode.error``) that clients without notices have always had."""
    if as_notice:
        return NoticeUpdate(severity, title, message)
    return warning_chunk(message)


def _refuse_special(path: Path, *, missing_ok: bool = False) -> None:
    """The editor may block on a FIFO or a device just like we would (a write to a FIFO waits
    for a reader): refuse them first."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if missing_ok:
            return
        raise ToolFailure(f"File not found: {path}") from None
    except OSError:
        return  # let the editor say what is wrong
    if stat.S_ISDIR(mode):
        raise ToolFailure(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        raise ToolFailure(f"{path} is not a regular file (a FIFO, socket or device).")


def _answer(method: str, result: Any, cls: type[T], failed: str) -> T:
    """The editor's answer to ``method`` as ``cls``; a ToolFailure (``failed``, then what was
    wrong with each field) when it does not fit."""
    try:
        return from_wire(result, cls, "result")
    except ParamsError as exc:
        raise ToolFailure(f"{failed}: a malformed answer to {method} ({exc})") from exc


def _exit_status(status: TerminalExitStatus) -> ExitStatus:
    return ExitStatus(status.exit_code, status.signal)


def _selected_kind(
    answer: RequestPermissionResponse, options: list[PermissionOption]
) -> PermissionChoice:
    """The option kind the user chose, ``cancelled``, or None for an option not offered."""
    outcome = answer.outcome
    if isinstance(outcome, CancelledPermissionOutcome):
        return "cancelled"
    if isinstance(outcome, SelectedPermissionOutcome):
        return next((o.kind for o in options if o.option_id == outcome.option_id), None)
    if outcome == "allowed":  # the older flat shape: an allowing option only
        option_id = answer.option_id or "allow_once"
        kind = next((o.kind for o in options if o.option_id == option_id), None)
        return kind if kind in ("allow_once", "allow_always") else None
    return "reject_once"  # "denied"
