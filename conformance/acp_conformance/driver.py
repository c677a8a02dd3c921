"""The trio driver of one ACP agent: JSON lines both ways, live checks, a transcript.

One driver for the conformance suite and an agent's own tests (:class:`AgentConnection`;
:func:`spawn` starts a process, :func:`connect_remote` reaches a remote agent). For the suite,
every line in either direction goes into a :class:`ConnectionTranscript` (for the failure
report); every line the agent writes must be one JSON-RPC object (else a WIRE-STDOUT violation;
the line is skipped), and every message is validated against the schema as it arrives (a
WIRE-SCHEMA violation; the test goes on, so one bad field does not hide the behaviour);
agent -> client requests are answered at once by :class:`ClientServices`. Tests of one agent
rather fail at the first bad line and answer the agent's requests themselves.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, overload

import trio

from acp_conformance.client import HOLD, ClientServices, ErrorAnswer
from acp_conformance.remote import connect
from acp_conformance.schema import WireChecker, method_tables

LINE_SHOWN = 3000
"""Characters of one line kept in the transcript (huge lines are cut, their size noted)."""


class AgentExited(AssertionError):
    """The agent closed its stdout (exited or crashed) while the test waited for a message."""


class TimedOut(AssertionError):
    """Something the agent should have done did not happen in time (see :func:`deadline`)."""


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """``trio.fail_after`` whose failure (:class:`TimedOut`) says what did not happen."""
    try:
        with trio.fail_after(seconds):
            yield
    except trio.TooSlowError:
        raise TimedOut(f"{what} within {seconds:g} s") from None


class ConnectionTranscript:
    def __init__(self, label: str, command: list[str]) -> None:
        self.label = label
        self.command = command
        self.started = time.monotonic()
        self.entries: list[tuple[float, str, str]] = []
        self.exit_code: int | None = None
        self.stderr_path: Path | None = None

    def add(self, direction: str, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace")
        if len(text) > LINE_SHOWN:
            text = f"{text[:LINE_SHOWN]}... [{len(line)} bytes]"
        self.entries.append((round(time.monotonic() - self.started, 3), direction, text))

    def dump(self) -> dict[str, Any]:
        stderr = ""
        if self.stderr_path is not None and self.stderr_path.exists():
            stderr = self.stderr_path.read_text(errors="replace")[-4000:]
        return {
            "label": self.label,
            "command": self.command,
            "exitCode": self.exit_code,
            "messages": [{"t": t, "dir": d, "line": line} for t, d, line in self.entries],
            "stderrTail": stderr,
        }


# -- which schema checks which message ----------------------------------------------------
# Every message the agent sends is validated against the official stable v1 schema, except
# answers to and calls of methods that exist only in the unstable schema (``session/fork``):
# those are validated against ``schema.unstable.json``. The suite calls an unstable method
# only when the agent advertised it.


def _stable_methods() -> frozenset[str]:
    tables = method_tables(False)
    return frozenset(
        {
            *tables.client_requests,
            *tables.client_notifications,
            *tables.agent_requests,
            *tables.agent_notifications,
        }
    )


def _unstable_methods() -> frozenset[str]:
    tables = method_tables(True)
    return frozenset(
        {
            *tables.client_requests,
            *tables.client_notifications,
            *tables.agent_requests,
            *tables.agent_notifications,
        }
    )


class SchemaRouter:
    """Tells both checkers what the client sent; checks each agent message with one of them
    (the same one for a request and its answer, so each keeps its pending ids right)."""

    def __init__(self) -> None:
        self.stable = WireChecker(unstable=False)
        self.unstable = WireChecker(unstable=True)
        self._unstable_only = _unstable_methods() - _stable_methods()
        self._client_requests: dict[tuple[str, Any], str] = {}

    def client_sent(self, message: Mapping[str, Any]) -> None:
        """Tell the checkers about a message the client wrote (requests are matched by id)."""
        if "method" in message and "id" in message:
            key = _id_key(message["id"])
            self._client_requests[key] = str(message["method"])
        for checker in (self.stable, self.unstable):
            # An id reused on purpose by an error test: the agent is not at fault.
            with contextlib.suppress(ValueError):
                checker.client_sent(message)

    def agent_sent(self, message: Any) -> list[str]:
        """The problems of one message the agent sent, each marked with the schema that found
        it (``[stable schema] ...``)."""
        method = None
        if isinstance(message, Mapping):
            if isinstance(message.get("method"), str):
                method = message["method"]
            elif "id" in message and message.get("id") is not None:
                method = self._client_requests.pop(_id_key(message["id"]), None)
        kind, checker = (
            ("unstable", self.unstable)
            if method in self._unstable_only
            else ("stable", self.stable)
        )
        return [f"[{kind} schema] {problem}" for problem in checker.agent_sent(message)]


def _id_key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)


RequestId = TypeVar("RequestId")
"""The id a test gives a request (a string, null, a huge number: any JSON value)."""

RECEIVE_TIMEOUT = 15.0
"""Seconds to wait for any one message, unless the connection is given another figure."""
SUITE_CLIENT = {"name": "acp-conformance", "version": "1"}
TESTS_CLIENT = {"name": "tests", "version": "0"}
"""The ``clientInfo`` the conformance suite and an agent's own tests send."""


class AgentConnection:
    """One ACP agent driven as an editor drives it: JSON-RPC lines on its stdin and stdout.

    Every message the agent sends is kept (``received``, and its raw line in ``raw_lines``)
    and checked as it arrives by ``checker`` (``client_sent`` / ``agent_sent``: a
    :class:`acp_conformance.schema.WireChecker`, or a :class:`SchemaRouter`). A line that is
    not a JSON object, or a message with schema problems, fails at once; with
    ``record_violations`` it is noted instead (``stdout_violations``, ``schema_violations``)
    and the connection goes on, as the conformance suite wants (one bad field must not hide
    the behaviour it checks). Agent requests (permission, ``fs/*``, ``terminal/*``) are
    answered by ``services`` when given (:class:`acp_conformance.client.ClientServices`);
    without, they come out of :meth:`receive` like any message, for the test to answer.
    ``process`` is a ``trio.Process``, or anything shaped like one
    (:mod:`acp_conformance.remote`).
    """

    def __init__(
        self,
        process: trio.Process,
        checker: Any | None = None,
        stderr_path: Path | None = None,
        *,
        transcript: ConnectionTranscript | None = None,
        timeout: float = RECEIVE_TIMEOUT,
        services: ClientServices | None = None,
        record_violations: bool = False,
        client_info: Mapping[str, str] = TESTS_CLIENT,
    ) -> None:
        self.process = process
        self.checker = checker
        self.stderr_path = stderr_path
        self.transcript = transcript
        self.timeout = timeout
        self.services = services
        self.record_violations = record_violations
        self.client_info = dict(client_info)
        self.schema_violations: list[str] = []
        self.stdout_violations: list[str] = []
        self.received: list[dict[str, Any]] = []
        self.raw_lines: list[bytes] = []
        self.agent_requests: list[dict[str, Any]] = []
        self.held: list[dict[str, Any]] = []
        self.init_result: dict[str, Any] = {}
        self._buffer = bytearray()
        self._unread: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    @property
    def stderr(self) -> str:
        """Everything the agent wrote on stderr so far."""
        path = self.stderr_path
        return path.read_text(errors="replace") if path and path.exists() else ""

    def stderr_tail(self, size: int = 2000) -> str:
        return self.stderr[-size:]

    # -- sending -----------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are; the checker learns of the requests among them."""
        for line in data.split(b"\n"):
            if not line:
                continue
            if self.transcript is not None:
                self.transcript.add("->", line)
            if self.checker is not None:
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(message, dict) and isinstance(message.get("id", 0), int | str):
                    self.checker.client_sent(message)
        assert self.process.stdin is not None
        await self.process.stdin.send_all(data)

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    @overload
    async def send_request(self, method: str, params: Any = None) -> int: ...

    @overload
    async def send_request(
        self, method: str, params: Any = None, *, request_id: RequestId
    ) -> RequestId: ...

    async def send_request(self, method: str, params: Any = None, *, request_id: Any = None) -> Any:
        """Send a request; its id: the next number, or ``request_id`` (any JSON value)."""
        if request_id is None:
            request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return request_id

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def reply(self, request_id: Any, result: Any) -> None:
        """Answer an agent request: a result, or an :class:`ErrorAnswer`."""
        if isinstance(result, ErrorAnswer):
            await self.send({"jsonrpc": "2.0", "id": request_id, "error": result.error})
        else:
            await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def close_stdin(self) -> None:
        if self.transcript is not None:
            self.transcript.add("->", b"[end of stdin]")
        assert self.process.stdin is not None
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.process.stdin.aclose()

    # -- receiving ---------------------------------------------------------------------------

    async def _next(self, timeout: float) -> dict[str, Any] | None:
        """The next message from the agent (None at end of output); serves agent requests
        when there are ``services``."""
        assert self.process.stdout is not None
        while True:
            with deadline(timeout, "no message from the agent"):
                while b"\n" not in self._buffer:
                    chunk = await self.process.stdout.receive_some(1 << 20)
                    if not chunk:
                        if self._buffer.strip():
                            self._violation(
                                self.stdout_violations,
                                f"output ended inside a line: {bytes(self._buffer[:120])!r}",
                            )
                            if self.transcript is not None:
                                self.transcript.add("<-", bytes(self._buffer))
                        self._buffer.clear()
                        return None
                    self._buffer += chunk
            line, _, rest = bytes(self._buffer).partition(b"\n")
            self._buffer = bytearray(rest)
            if self.transcript is not None:
                self.transcript.add("<-", line)
            self.raw_lines.append(line)
            message = self._parse(line)
            if message is not None:
                break
        self.received.append(message)
        if self.checker is not None:
            problems = self.checker.agent_sent(message)
            if problems and not self.record_violations:
                listing = "\n".join(f"  - {p}" for p in problems)
                raise AssertionError(
                    f"the agent sent a message the ACP schema rejects:\n"
                    f"{listing}\nmessage: {_short(message, 4000)}"
                )
            self.schema_violations.extend(f"{p} in {_short(message)}" for p in problems)
        if "method" in message and "id" in message:
            self.agent_requests.append(message)
            if self.services is not None:
                with trio.CancelScope(shield=True):  # a half-written answer breaks the pipe
                    answer = await self.services.answer(message)
                    if answer is HOLD:
                        self.held.append(message)
                    else:
                        await self.reply(message["id"], answer)
        return message

    def _violation(self, found: list[str], text: str) -> None:
        if not self.record_violations:
            raise AssertionError(text)
        found.append(text)

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            self._violation(self.stdout_violations, f"not a JSON line on stdout: {line[:160]!r}")
            return None
        if not isinstance(message, dict):
            self._violation(self.stdout_violations, f"not a JSON object on stdout: {line[:160]!r}")
            return None
        return message

    async def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message the agent sent (fails on time-out or end of output)."""
        if self._unread:
            return self._unread.pop(0)
        message = await self._next(timeout or self.timeout)
        if message is None:
            with trio.move_on_after(1):
                await self.process.wait()
            lines = [line for line in self.stderr_tail().splitlines() if line.strip()]
            raise AgentExited(
                f"the agent closed its stdout (exit status "
                f"{self.process.returncode}); last stderr line: "
                f"{lines[-1].strip() if lines else ''!r}"
            )
        return message

    async def receive_update(self, *kinds: str, timeout: float | None = None) -> dict[str, Any]:
        """The next ``session/update`` of one of ``kinds`` (others are skipped)."""
        with deadline(timeout or self.timeout, f"no update of kind {kinds}"):
            while True:
                message = await self.receive(timeout)
                if (
                    message.get("method") == "session/update"
                    and message["params"]["update"]["sessionUpdate"] in kinds
                ):
                    return message

    async def response(
        self, request_id: Any, timeout: float | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Wait for the answer to ``request_id``; also return what came before it."""
        before: list[dict[str, Any]] = []
        with deadline(timeout or self.timeout, f"no answer to request {request_id!r}"):
            while True:
                message = await self.receive(timeout)
                if message.get("id") == request_id and "method" not in message:
                    return message, before
                before.append(message)

    async def request(
        self, method: str, params: Any = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request, return its whole answer (what came before stays to be received)."""
        request_id = await self.send_request(method, params)
        answer, before = await self.response(request_id, timeout)
        self._unread.extend(before)
        return answer

    async def call(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """Send a request and return its result; an error answer fails the test."""
        answer = await self.request(method, params, timeout)
        assert "result" in answer, f"{method} answered an error: {answer.get('error')}"
        return answer["result"]

    # -- the usual steps ---------------------------------------------------------------------

    async def initialize(self, **client_capabilities: Any) -> dict[str, Any]:
        if self.services is not None:
            self.services.capabilities = client_capabilities
        self.init_result = await self.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": client_capabilities,
                "clientInfo": self.client_info,
            },
        )
        return self.init_result

    def capability(self, path: str) -> Any:
        """An advertised agent capability (``sessionCapabilities.fork``), None if absent."""
        node: Any = self.init_result.get("agentCapabilities") or {}
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    async def new_session(self, cwd: Path) -> str:
        result = await self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        return str(result["sessionId"])

    async def prompt(
        self,
        session_id: str,
        prompt: str | list[dict[str, Any]],
        timeout: float | None = None,
        **extra: Any,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Prompt; return the answer and every message that came before it."""
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else prompt
        request_id = await self.send_request(
            "session/prompt", {"sessionId": session_id, "prompt": blocks, **extra}
        )
        return await self.response(request_id, timeout)

    async def run_prompt(
        self,
        session_id: str,
        prompt: str | list[dict[str, Any]],
        on_request: Any = None,
        timeout: float | None = None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """Prompt and serve the agent's requests until the prompt is answered.

        ``on_request(message) -> result`` answers each agent request (permission questions,
        ``fs/*``, ``terminal/*``); it may be async; returning an :class:`ErrorAnswer` sends an
        error. Returns (the prompt's answer, the messages before it, the agent's requests).
        """
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else prompt
        request_id = await self.send_request(
            "session/prompt", {"sessionId": session_id, "prompt": blocks}
        )
        others: list[dict[str, Any]] = []
        requests: list[dict[str, Any]] = []
        with deadline(timeout or self.timeout, "no answer to the prompt"):
            while True:
                message = await self.receive(timeout)
                if "method" in message and "id" in message:
                    requests.append(message)
                    if self.services is not None:
                        continue  # answered already
                    if on_request is None:
                        raise AssertionError(f"unexpected request from the agent: {message}")
                    result = on_request(message)
                    if hasattr(result, "__await__"):
                        result = await result
                    await self.reply(message["id"], result)
                elif message.get("id") == request_id and "method" not in message:
                    return message, others, requests
                else:
                    others.append(message)

    async def late_updates(self, session_id: str, settle: float = 0.3) -> list[dict[str, Any]]:
        """``session/update``s for the session that arrive after now (a pause and a round
        trip later): used after a prompt's answer, when none may come."""
        await trio.sleep(settle)
        request_id = await self.send_request("_conformance/ping", {})
        late: list[dict[str, Any]] = []
        with trio.move_on_after(3):
            while True:
                message = await self.receive()
                if message.get("id") == request_id and "method" not in message:
                    break
                late.append(message)
        return updates(late, session_id)

    async def wait_exit(self, timeout: float) -> int:
        with deadline(timeout, "the agent did not exit"):
            code = await self.process.wait()
        if self.transcript is not None:
            self.transcript.exit_code = code
        return code

    async def read_until_eof(self, timeout: float | None = None) -> list[dict[str, Any]]:
        messages = list(self._unread)
        self._unread.clear()
        timeout = timeout or self.timeout
        with deadline(timeout, "the agent did not close its stdout"):
            while (message := await self._next(timeout)) is not None:
                messages.append(message)
        return messages


def updates(
    messages: Iterable[dict[str, Any]], session_id: str | None = None, *kinds: str
) -> list[dict[str, Any]]:
    """The ``update`` objects of the ``session/update``s among ``messages``."""
    found = []
    for message in messages:
        if message.get("method") != "session/update":
            continue
        params = message.get("params") or {}
        update = params.get("update") or {}
        if session_id is not None and params.get("sessionId") != session_id:
            continue
        if kinds and update.get("sessionUpdate") not in kinds:
            continue
        found.append(update)
    return found


def text_of(messages: Iterable[dict[str, Any]], session_id: str, kind: str) -> str:
    """The concatenated text of the ``kind`` chunks (``agent_message_chunk``, ...)."""
    return "".join(
        u.get("content", {}).get("text", "")
        for u in updates(messages, session_id, kind)
        if isinstance(u.get("content"), dict)
    )


def _short(message: Any, limit: int = 300) -> str:
    text = json.dumps(message, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextlib.asynccontextmanager
async def spawn(
    command: list[str],
    env: Mapping[str, str],
    stderr_path: Path,
    *,
    cwd: Path | None = None,
    checker: Any | None = None,
    transcript: ConnectionTranscript | None = None,
    timeout: float = RECEIVE_TIMEOUT,
    services: ClientServices | None = None,
    record_violations: bool = False,
    client_info: Mapping[str, str] = TESTS_CLIENT,
) -> AsyncIterator[AgentConnection]:
    """Start the agent in its own process group, stderr to ``stderr_path``; kill the whole
    group at the end."""
    if transcript is not None:
        transcript.stderr_path = stderr_path
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            command,
            stdin=-1,
            stdout=-1,
            stderr=stderr,
            env=dict(env),
            cwd=str(cwd) if cwd is not None else None,
            start_new_session=True,
        )
        connection = AgentConnection(
            process,
            checker,
            stderr_path,
            transcript=transcript,
            timeout=timeout,
            services=services,
            record_violations=record_violations,
            client_info=client_info,
        )
        try:
            yield connection
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)
                code = await process.wait()
                if transcript is not None:
                    transcript.exit_code = code
                for stream in (process.stdin, process.stdout):
                    if stream is not None:
                        with contextlib.suppress(trio.BrokenResourceError):
                            await stream.aclose()


@contextlib.asynccontextmanager
async def connect_remote(
    url: str, token: str | None, transport: str, transcript: ConnectionTranscript, timeout: float
) -> AsyncIterator[AgentConnection]:
    """A conformance connection to a remote agent, driven as a spawned one: its stdin and
    stdout are the transport's (:mod:`acp_conformance.remote`); ending stdin ends it."""
    async with connect(url, token, transport) as remote:
        yield AgentConnection(
            remote,  # type: ignore[arg-type]
            SchemaRouter(),
            transcript=transcript,
            timeout=timeout,
            services=ClientServices(),
            record_violations=True,
            client_info=SUITE_CLIENT,
        )
