"""The synchronous driver of a spawned process speaking JSON lines (an ACP agent, a fake):
:class:`LineClient`, for benchmarks and for tests that drive one agent from plain threads.

It is deliberately lean: it reads with ``os.read`` into a buffer, hands back raw lines, and
parses only what it is asked to, so that the client, not the agent, is never the bottleneck
when 100,000 updates stream (the trio driver, :mod:`acp_conformance.driver`, parses, keeps
and checks every line). Writing never blocks: what the process writes meanwhile is read, so a
peer that does not read while it writes cannot deadlock us both.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

UPDATE_PREFIX = b'{"jsonrpc":"2.0","method":"session/update"'
"""How an agent writing compact JSON in a fixed key order starts every ``session/update`` line:
what :meth:`LineClient.response` and :meth:`LineClient.count_until_response` skip unparsed."""


class AgentGone(Exception):
    """The process closed its output (it exited, or crashed)."""


class LineClient:
    """A spawned process spoken to in JSON lines over its stdin/stdout (see the module
    docstring). ``on_line``: each line as it arrives goes there instead of to :meth:`line`."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        stderr: Path | None = None,
        cwd: Path | None = None,
        on_line: Callable[[bytes], None] | None = None,
    ) -> None:
        self.stderr_path = stderr
        err = open(stderr, "wb") if stderr is not None else subprocess.DEVNULL  # noqa: SIM115
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            bufsize=0,
        )
        if stderr is not None:
            err.close()  # type: ignore[union-attr]
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        self._on_line = on_line
        self._buffer = b""
        self._lines: deque[bytes] = deque()
        self.bytes_read = 0
        self._ids = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stderr(self) -> str:
        """Everything the process wrote on stderr so far (when it went to a file)."""
        if self.stderr_path is None:
            return ""
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def stderr_tail(self) -> str:
        return self.stderr[-3000:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    # -- sending --

    def send_raw(self, data: bytes, timeout: float | None = None) -> None:
        """Write ``data``, reading whatever the process writes meanwhile (a peer that does not
        read while it writes could otherwise deadlock us both); TimeoutError when it cannot
        all be written within ``timeout`` seconds, AgentGone when the process is gone."""
        view = memoryview(data)
        deadline = None if timeout is None else time.perf_counter() + timeout
        while view:
            try:
                view = view[os.write(self._in, view[: 1 << 20]) :]
                continue
            except BlockingIOError:
                pass
            except BrokenPipeError:
                raise AgentGone(
                    f"the process closed its input; stderr:\n{self.stderr_tail()}"
                ) from None
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                raise TimeoutError(f"could not write to the process for {timeout} s")
            readable, _, _ = select.select(
                [self._out], [self._in], [], 1.0 if left is None else min(left, 1.0)
            )
            if readable:
                self._fill(0)

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def send_request(self, method: str, params: Any = None) -> int:
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._ids

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def reply(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    # -- receiving --

    def _fill(self, timeout: float | None) -> bool:
        """Read what is there (waiting up to ``timeout``); False on timeout."""
        if timeout is not None:
            ready, _, _ = select.select([self._out], [], [], max(0.0, timeout))
            if not ready:
                return False
        try:
            chunk = os.read(self._out, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            raise AgentGone(f"the process closed its output; stderr:\n{self.stderr_tail()}")
        self.bytes_read += len(chunk)
        data = self._buffer + chunk
        *lines, self._buffer = data.split(b"\n")
        if self._on_line is None:
            self._lines.extend(lines)
        else:
            for line in lines:
                self._on_line(line)
        return True

    def line(self, timeout: float | None = 60.0) -> bytes:
        """The next raw line (TimeoutError after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        while not self._lines:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0 or not self._fill(left):
                raise TimeoutError(f"no output in {timeout} s; stderr:\n{self.stderr_tail()}")
        return self._lines.popleft()

    def poll_line(self, timeout: float) -> bytes | None:
        """The next raw line if one comes within ``timeout`` seconds, else None."""
        if not self._lines and not self._fill(timeout):
            return None
        return self._lines.popleft() if self._lines else None

    def message(self, timeout: float | None = 60.0) -> dict[str, Any]:
        return json.loads(self.line(timeout))  # type: ignore[no-any-return]

    def response(
        self,
        request_id: int,
        timeout: float = 60.0,
        on_request: Callable[[dict[str, Any]], Any] | None = None,
        on_update: Callable[[bytes], None] | None = None,
    ) -> dict[str, Any]:
        """Read until the answer to ``request_id``; updates go to ``on_update`` (raw), the
        agent's requests to ``on_request`` (its return value is sent as the result)."""
        deadline = time.perf_counter() + timeout
        while True:
            raw = self.line(deadline - time.perf_counter())
            if raw.startswith(UPDATE_PREFIX):
                if on_update is not None:
                    on_update(raw)
                continue
            message: dict[str, Any] = json.loads(raw)
            if "method" in message:
                if "id" in message:
                    if on_request is None:
                        raise AssertionError(f"unexpected request from the agent: {raw[:300]!r}")
                    result = on_request(message)
                    if result is not None:
                        self.reply(message["id"], result)
                continue
            if message.get("id") == request_id:
                return message

    def count_until_response(
        self, request_id: int, timeout: float = 300.0
    ) -> tuple[dict[str, Any], int]:
        """Read until the answer to ``request_id`` as cheaply as we can (whole chunks, lines
        counted with ``bytes.count``, only the chunk holding the answer split): returns the
        answer and how many lines came before it. For throughput, where a client that looks
        at every line would be the bottleneck. Any agent request on the way is an error."""
        marker = b'"id":%d,' % request_id
        before = 0
        while self._lines:  # lines already split off by an earlier read
            raw = self._lines.popleft()
            if marker in raw and not raw.startswith(UPDATE_PREFIX):
                return json.loads(raw), before
            before += 1
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            ready, _, _ = select.select([self._out], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError(f"no answer in {timeout} s; stderr:\n{self.stderr_tail()}")
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise AgentGone(f"the process closed its output; stderr:\n{self.stderr_tail()}")
            self.bytes_read += len(chunk)
            data = self._buffer + chunk
            if marker not in data:
                cut = data.rfind(b"\n") + 1
                before += data.count(b"\n", 0, cut)
                self._buffer = data[cut:]
                continue
            *lines, self._buffer = data.split(b"\n")
            for index, raw in enumerate(lines):
                if marker in raw and not raw.startswith(UPDATE_PREFIX):
                    message = json.loads(raw)
                    assert "method" not in message, raw[:300]
                    self._lines.extend(lines[index + 1 :])
                    return message, before
                before += 1

    def call(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        response = self.response(self.send_request(method, params), timeout)
        if "result" not in response:
            raise AssertionError(f"{method} failed: {response}; stderr:\n{self.stderr_tail()}")
        return response["result"]

    # -- ACP --

    def initialize(self, client_name: str = "bench") -> dict[str, Any]:
        return self.call(  # type: ignore[no-any-return]
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {},
                "clientInfo": {"name": client_name, "version": "0"},
            },
        )

    def new_session(self, cwd: Path) -> str:
        return str(self.call("session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"])

    def prompt_request(self, session_id: str, text: str = "go") -> int:
        return self.send_request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )

    def close(self, timeout: float = 5.0) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def __enter__(self) -> LineClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self.proc.poll() is None:
            self.proc.kill()
        self.close()
