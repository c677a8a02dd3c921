"""One bash call's channel to its gates: a Unix socket only this call's processes may use.

    async with open_channel(policy) as channel:      # listening, for the call's duration
        env.update(channel.env)                      # socket, token, the gates' folder
        proc = start(..., env=env); channel.set_root(proc.pid)

A gate connecting sends its token and what it saw (:mod:`iaccode.gate.shim`). The channel
checks the token (a new one per call, compared in constant time) and, on Linux, who the peer is
(``SO_PEERCRED``): our own user, and a process below the call's root (the shell, which is a
child subreaper, so all the command starts stays below it; in the editor's terminal the
supervisor, which says hello first). Then it reads the argv with the CLI's table: a read is
run at once; a change the line's question already allowed (``policy.approved``) too; anything
else goes to the handler of its CLI (:mod:`iaccode.gate.handlers`), which asks through
``policy.ask``. One question at a time per call.

When the call ends (the command exited, a timeout, the turn's cancel) the channel closes: a
waiting gate's question is withdrawn and the gate refuses; a gate started later finds no socket
and refuses too.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import marshal
import os
import secrets
import socket
import struct
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import trio
from attrs import field, frozen

from iaccode.gate import handlers
from iaccode.gate.folder import GateFolder, gate_folder
from iaccode.gate.handlers import Exec, GateGone, GateRequest, Op, Refuse, Run, RunResult
from iaccode.host.procfs import read_stat
from iaccode.iac import credentials
from iaccode.iac.cli_env import classify_run
from iaccode.iac.clis import CLIS, DRIVERS, classify
from iaccode.iac.command_env import FOLDER_VARIABLE, SOCKET_VARIABLE, TOKEN_VARIABLE

log = logging.getLogger(__name__)

MAX_LINE = 128 * 1024 * 1024
"""Longest line read from a gate (a ``run`` result carries a plan's JSON)."""
ROOT_WAIT = 10.0
"""How long a gate's request waits for the call's root to be known (the terminal's hello)."""


@frozen
class GateQuestion:
    """A change a gate reports, for the permission question."""

    request: GateRequest
    detail: str | None = None
    """What a handler adds (a plan's summary)."""
    title: str | None = None
    """What a handler names the change by (``terraform apply · workspace prod · ...``)."""
    confirm: tuple[str, str] | None = None
    """(what, name) of a protected target (``("workspace", "prod")``): the user types its
    name in an elicitation form instead of clicking."""


Asker = Callable[[GateQuestion], Awaitable[str | None]]
"""Put the question; None when the user allowed the change, else what the model is told."""
Adviser = Callable[[str], Awaitable[None]]
"""Tell the user something outside the chat (``Editor.advise``)."""


@frozen
class GatePolicy:
    """What a bash call's gates go by (the tool runner makes one per call)."""

    ask: Asker
    confirm: bool = True
    """``[iac] confirm_infra_changes``: False runs every change without a question."""
    hold_credentials: bool = True
    """``[iac] hold_credentials``: the gate gives the real program the held credentials (False:
    every command has them already). With both settings off, no gates stand at all."""
    approved: frozenset[tuple[str, ...]] = field(factory=frozenset)
    """The argvs the question about the command line allowed (the text reader spelled them
    out): a gate seeing exactly one of them runs it unasked."""
    advise: Adviser | None = None
    """Where the user hears that a program ran without the held credentials (once per
    program and call; the model reads it in the output too)."""
    protected: tuple[str, ...] = ()
    """``[iac] protected``: globs of the targets whose changes need their name typed (the
    handlers look the target up)."""


class CallChannel:
    def __init__(
        self,
        policy: GatePolicy,
        folder: GateFolder,
        *,
        terminal: bool = False,
        credentials_from: dict[str, str] | None = None,
    ) -> None:
        self.policy = policy
        self.folder = folder
        self.socket_path = folder.new_socket()
        self.token = secrets.token_urlsafe(24)
        self.env = {
            SOCKET_VARIABLE: str(self.socket_path),
            TOKEN_VARIABLE: self.token,
            FOLDER_VARIABLE: str(folder.bin),
        }
        self._terminal = terminal
        self._root: int | None = None
        self._token_only = False
        self._root_known = trio.Event()
        self._asking = trio.Lock()
        self._drivers: dict[int, str] = {}
        """The pid of each driver CLI run as an allowed change -> its CLI (see DRIVERS)."""
        self._credentials = credentials.held(
            os.environ if credentials_from is None else credentials_from
        )
        self._held_back: set[str] = set()
        """The programs that ran without the held credentials."""
        self._untold: list[str] = []
        """Why, for each of them the user has not been told about yet (``policy.advise``)."""
        self.requests = 0
        self.tampered = False
        """The command removed or changed the gates (they are put back when the call ends)."""
        self._scope = trio.CancelScope(shield=True)
        """The listener's: shielded from the turn's cancel, ended by :meth:`close` (even one
        called before the listener started)."""

    def set_root(self, pid: int) -> None:
        """The call's shell: every gate of this call runs below it."""
        self._root = pid
        self._root_known.set()

    def token_only(self) -> None:
        """No root to check against (an editor's terminal without our supervisor): the token
        alone stands."""
        self._token_only = True
        self._root_known.set()

    def command_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` for a command of this call: the channel's variables, the gates first on
        PATH."""
        return {
            **env,
            **self.env,
            "PATH": self.folder.path_for_commands(env.get("PATH") or os.defpath),
        }

    def listen(self) -> trio.socket.SocketType:
        """The channel's socket, bound and listening (gates that come before :meth:`serve`
        runs wait in its backlog)."""
        # A Unix socket's bind does not block (trio's is async for name lookups only).
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self.socket_path))
            listener.listen(64)
        except BaseException:
            listener.close()
            raise
        return trio.socket.from_stdlib_socket(listener)

    async def serve(self, listener: trio.socket.SocketType) -> None:
        """Answer gates on ``listener`` until :meth:`close`. Shielded from the turn's cancel:
        on a cancel the command is ended first (its process tree killed), then the channel
        closes, so a gate refused by the closing channel cannot let the rest of the line run
        meanwhile. (Started with ``start_soon``, never ``start``: a cancel before a shielded
        task's ``started()`` would leave ``start`` waiting for it forever.)"""
        with self._scope, listener:
            async with trio.open_nursery() as nursery:
                while True:
                    connection, _ = await listener.accept()
                    nursery.start_soon(self._serve_one, connection)

    def close(self) -> None:
        """Stop answering: a waiting gate's question is withdrawn and the gate refuses."""
        self._scope.cancel()

    async def _serve_one(self, connection: trio.socket.SocketType) -> None:
        with connection:
            stream = trio.SocketStream(connection)
            lines = _Lines(stream)
            try:
                op = await self._answer(connection, lines)
                await lines.send(_op_message(op))
            except (trio.BrokenResourceError, trio.ClosedResourceError, GateGone):
                log.info("a gate went away before its answer")
            except ValueError as exc:
                log.warning("a bad message on the gate channel: %s", exc)
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await lines.send(_op_message(Refuse(f"iac-code gate: {exc}")))

    async def _answer(self, connection: trio.socket.SocketType, lines: _Lines) -> Op | _Ack:
        message = await lines.receive()
        if message is None:
            raise GateGone
        token = message.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token, self.token):
            return Refuse("iac-code gate: a wrong token: refused")
        pid = _peer_pid(connection, message)
        if message.get("hello") == "supervisor":
            if not self._terminal or self._root is not None:
                return Refuse("iac-code gate: this call has its root already")
            self.set_root(pid)
            return _ACK
        with trio.move_on_after(ROOT_WAIT):
            await self._root_known.wait()
        if not self._token_only and (self._root is None or not _below(pid, self._root)):
            return Refuse(
                "iac-code gate: refused: not a process of the command that owns this channel"
            )
        request, refusal = self._request(message, pid)
        if refusal is not None:
            return refusal
        assert request is not None
        self.requests += 1
        return await self._decide(request, pid, lines)

    def _request(
        self, message: dict[str, Any], pid: int
    ) -> tuple[GateRequest | None, Refuse | None]:
        cli, argv, cwd, path = (message.get(key) for key in ("cli", "argv", "cwd", "path"))
        env = message.get("env", {})
        if not (
            isinstance(cli, str)
            and cli in CLIS
            and isinstance(argv, list)
            and argv
            and all(isinstance(a, str) for a in argv)
            and isinstance(cwd, str)
            and isinstance(path, str)
            and isinstance(env, dict)
            and all(isinstance(v, str) for v in env.values())
        ):
            raise ValueError("a gate request without cli, argv, cwd and path")
        program = self.folder.real_program(cli, path)
        if program is None:
            return None, Refuse(f"{cli}: command not found", 127)
        # What the program reads besides its argv counts (TF_CLI_ARGS, the AWS CLI's aliases).
        return GateRequest(
            cli,
            list(argv),
            cwd,
            program,
            classify_run(cli, argv[1:], env),
            _started_by(pid, self._root),
            path,
            dict(env),
        ), None

    async def _decide(self, request: GateRequest, pid: int, lines: _Lines) -> Op:
        exchange = _Exchange(self, request, lines)
        change = request.change.label if request.change is not None else None
        op: Op
        if (
            not change
            or not self.policy.confirm
            or self._line_allowed(request)
            or self._driven(request.cli, pid)
        ):
            op = exchange.exec()
        else:
            async with self._asking:
                op = await handlers.handler_for(request.cli)(exchange)
        if isinstance(op, Exec) and change and request.cli in DRIVERS:
            self._drivers[pid] = request.cli  # its own runs of terraform are this change
        await self._advise_held_back()
        return op

    def _line_allowed(self, request: GateRequest) -> bool:
        """Whether the question about the command line allowed this run: its argv, with
        nothing its environment adds (an allowed ``terraform apply`` with
        ``TF_CLI_ARGS_apply=-destroy`` exported by a script is not what the user saw)."""
        return tuple(request.argv) in self.policy.approved and request.change == classify(
            request.cli, request.argv[1:]
        )

    async def _advise_held_back(self) -> None:
        """Tell the user, once per program, that it runs without the held credentials."""
        while self._untold and self.policy.advise is not None:
            await self.policy.advise(self._untold.pop(0))

    def _driven(self, cli: str, pid: int) -> bool:
        """Whether ``pid`` runs below an allowed driver of ``cli`` (terragrunt -> terraform)."""
        return any(
            cli in DRIVERS[driver] and _below(pid, driver_pid, strict=True)
            for driver_pid, driver in self._drivers.items()
        )

    def resolve(self, program: str, request: GateRequest) -> str:
        """A handler's program: a path as it is, a name looked up on the command's PATH past
        the gates."""
        if "/" in program:
            return program
        return self.folder.real_program(program, request.path) or program

    def exec_op(
        self, request: GateRequest, argv: list[str] | None = None, message: str | None = None
    ) -> Exec:
        env: dict[str, str] = {}
        program = request.program
        if argv is not None and argv[:1] != [request.cli]:
            program = self.resolve(argv[0], request)
        if self.policy.hold_credentials and self._credentials:
            ours = self.folder.real_program(request.cli, os.environ.get("PATH", ""))
            if ours is not None and _same_file(ours, program):
                env = dict(self._credentials)
            else:
                why = (
                    f"{program} is not the {request.cli} on iac-code's PATH "
                    f"({ours or 'none'}): it runs without the held cloud credentials"
                )
                if program not in self._held_back:
                    self._held_back.add(program)
                    self._untold.append(f"{why} ({', '.join(sorted(self._credentials))}).")
                note = f"iac-code: {why}"
                message = f"{message}\n{note}" if message else note
        return Exec(program, argv, env, message)


class _Exchange:
    """:class:`iaccode.gate.handlers.Exchange` for one gate connection."""

    def __init__(self, channel: CallChannel, request: GateRequest, lines: _Lines) -> None:
        self._channel = channel
        self._lines = lines
        self.request = request

    @property
    def protected(self) -> tuple[str, ...]:
        return self._channel.policy.protected

    async def ask(
        self,
        detail: str | None = None,
        *,
        title: str | None = None,
        confirm: tuple[str, str] | None = None,
    ) -> str | None:
        return await self._channel.policy.ask(GateQuestion(self.request, detail, title, confirm))

    async def run(self, argv: list[str], env: dict[str, str] | None = None) -> RunResult:
        program = self._channel.resolve(argv[0], self.request)
        held = self._channel.exec_op(self.request).env
        await self._lines.send(_op_message(Run(program, argv, {**held, **(env or {})})))
        answer = await self._lines.receive()
        if answer is None:
            raise GateGone
        status = answer.get("status")
        return RunResult(
            status if isinstance(status, int) else -1,
            str(answer.get("stdout", "")),
            str(answer.get("stderr", "")),
            bool(answer.get("truncated")),
        )

    def exec(self, argv: list[str] | None = None, message: str | None = None) -> Exec:
        return self._channel.exec_op(self.request, argv, message)

    def refuse(self, message: str, status: int = 126) -> Refuse:
        return Refuse(message, status)


@frozen
class _Ack:
    """The answer to the supervisor's hello: go on."""


_ACK = _Ack()


def _op_message(op: Exec | Refuse | Run | _Ack) -> dict[str, Any]:
    if isinstance(op, _Ack):
        return {"op": "ok"}
    if isinstance(op, Refuse):
        return {"op": "refuse", "message": op.message, "status": op.status}
    if isinstance(op, Run):
        return {"op": "run", "program": op.program, "argv": op.argv, "env": op.env}
    message: dict[str, Any] = {"op": "exec", "program": op.program, "env": op.env}
    if op.argv is not None:
        message["argv"] = op.argv
    if op.message:
        message["message"] = op.message
    return message


class _Lines:
    """JSON lines on a socket stream."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def receive(self) -> dict[str, Any] | None:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_LINE:
                raise ValueError("a line over the limit")
            chunk = await self._stream.receive_some(1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a message that is not an object")
        return message

    async def send(self, message: dict[str, Any]) -> None:
        """An op for the gate: its marshal dump after its length (see the shim)."""
        data = marshal.dumps(message)
        await self._stream.send_all(len(data).to_bytes(4, "big") + data)


def _peer_pid(connection: trio.socket.SocketType, message: dict[str, Any]) -> int:
    """The connecting process (``SO_PEERCRED`` on Linux; refused when it is another user)."""
    option = getattr(trio.socket, "SO_PEERCRED", None)
    if option is None or not sys.platform.startswith("linux"):
        pid = message.get("pid")  # elsewhere the token alone stands (docs/security.md)
        return pid if isinstance(pid, int) else -1
    pid, uid, _gid = struct.unpack("3i", connection.getsockopt(trio.socket.SOL_SOCKET, option, 12))
    if uid != os.getuid():
        raise ValueError("a gate of another user")
    return int(pid)


def _parent(pid: int) -> int | None:
    stat = read_stat(pid)
    return stat.ppid if stat is not None else None


def _below(pid: int, root: int, strict: bool = False) -> bool:
    """Whether ``pid`` is ``root`` or a process below it (``/proc`` parent links); True
    where there is no ``/proc`` (the token alone stands there)."""
    if not os.path.isdir("/proc"):
        return True
    current: int | None = _parent(pid) if strict else pid
    for _ in range(256):
        if current is None or current <= 1:
            return False
        if current == root:
            return True
        current = _parent(current)
    return False


def _started_by(pid: int, root: int | None) -> str | None:
    if pid == root:  # the call's shell exec'd the CLI: the agent started it, not a command
        return None
    parent = _parent(pid)
    if parent is None or parent == root:
        return None
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as file:
            words = file.read().split(b"\0")
    except OSError:
        return None
    text = " ".join(word.decode("utf-8", "replace") for word in words if word)
    return text or None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@contextlib.asynccontextmanager
async def open_channel(
    policy: GatePolicy, *, terminal: bool = False, folder: GateFolder | None = None
) -> AsyncIterator[CallChannel]:
    """A listening channel for one call, closed (and its socket removed) when it ends; the
    gates are checked (and put back) before and after."""
    folder = folder or gate_folder()
    if folder.restore():
        log.warning("the gates in %s had been changed; they were put back", folder.bin)
    channel = CallChannel(policy, folder, terminal=terminal)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(channel.serve, channel.listen())
            try:
                yield channel
            finally:
                channel.close()
    except BaseExceptionGroup as group:
        # The call's own failure (a ToolFailure, a cancel), not wrapped by our nursery: the
        # listener ends only by being cancelled, so one exception is the body's.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    finally:
        with contextlib.suppress(OSError):
            channel.socket_path.unlink()
        channel.tampered = folder.restore()
        if channel.tampered:
            log.warning("a command changed the gates in %s; they were put back", folder.bin)
