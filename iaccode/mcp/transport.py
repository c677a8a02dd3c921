"""The transports: a stdio server as a process whose whole tree ends with it, HTTP and SSE.

The SDK's own ``stdio_client`` kills the server's process group only when the server does not
exit by itself after its stdin closes, so a child the server started (in its group, or in a
session of its own, as a daemon does) outlives it. Here the server is started the way the
bash tool starts a shell (:func:`iaccode.host.process_tree.open_shell`: a child subreaper, so
everything it starts stays findable through ``/proc``) and ended the same way
(:func:`iaccode.host.process_tree.end_group`: TERM, a grace period, KILL, escapees included).
The JSON lines are read and written as the SDK's transport does; the protocol (handshake, requests,
cancellation) is the SDK's ``Client``.

HTTP (streamable HTTP) and SSE are the SDK's transports as they are.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from iaccode.host import process_tree
from iaccode.installed import outside, which
from iaccode.mcp.config import ServerSpec
from iaccode.secret_env import scrubbed

log = logging.getLogger(__name__)

STDIN_CLOSE_GRACE = 1.0
"""Seconds a stdio server may take to exit by itself once its stdin is closed."""
KILL_GRACE = 1.0
"""Then seconds between TERM and KILL for what is left of its tree."""
STDERR_DRAIN = 0.5
"""After it has ended, how long we read what is left of its stderr."""
STDERR_TAIL = 4000
"""Bytes of a stdio server's stderr kept for the log (the rest is read and dropped)."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest JSON-RPC line taken from a stdio server; a longer one ends the connection."""
READ_CHUNK = 1 << 16


class StdioProcess:
    """One stdio server process; :meth:`open` is the SDK transport (read and write streams)."""

    def __init__(self, spec: ServerSpec, cwd: Path) -> None:
        self._spec = spec
        self._cwd = cwd
        self.ended = trio.Event()
        """Set when the server's stdout ends: it exited, or will not talk any more."""
        self.ended_by_itself = False
        """Its stdout ended before we began to stop it (it exited, or it crashed)."""
        self._stopping = False
        self.returncode: int | None = None
        self.problem: str | None = None
        """Why we stopped reading it, when it was not the end of its output."""
        self._stderr = bytearray()

    @property
    def exit_reason(self) -> str:
        """How it ended, once it has: "exited with status 1", "was killed by SIGKILL"."""
        code = self.returncode
        if code is None or code >= 0:
            return f"exited with status {code}"
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"

    @property
    def stderr_tail(self) -> str:
        """The last :data:`STDERR_TAIL` bytes it wrote to stderr (for the log)."""
        return self._stderr.decode(errors="replace").strip()

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[Any]:
        """Start the server; on exit (cancelled too) end it and everything it started.

        Raises OSError when it cannot be started (the message says why).
        """
        from mcp.client.stdio import get_default_environment

        spec = self._spec
        # A command named bare is the user's program, never one a PATH folder inside the
        # project holds (``bin:$PATH``: the repository's ``npx``): iaccode/installed.py.
        program = which(spec.command, [self._cwd])
        if program is None:
            raise OSError(f"{spec.command}: not found (on PATH outside the project)")
        env = scrubbed(get_default_environment())
        if "PATH" in env:  # what it starts by name too (npx starts node)
            env["PATH"] = outside(env["PATH"], [self._cwd])
        try:
            proc = await process_tree.open_shell(
                [program, *spec.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._cwd,
                start_new_session=True,
                env=env | dict(spec.env),
            )
        except FileNotFoundError:
            raise OSError(f"{spec.command}: not found") from None
        except PermissionError:
            raise OSError(f"{spec.command}: permission denied") from None
        except OSError as exc:
            raise OSError(f"{spec.command}: {exc.strerror or exc}") from None
        tree = process_tree.Tree(proc)
        stderr_done = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._keep_stderr, proc, stderr_done)
                try:
                    async with self._talk(proc) as streams:
                        yield streams
                finally:
                    with trio.CancelScope(shield=True):
                        await self._stop(proc, tree)
                        with trio.move_on_after(STDERR_DRAIN):  # a survivor may hold it open
                            await stderr_done.wait()
                    nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None:
                        await stream.aclose()

    @contextlib.asynccontextmanager
    async def _talk(self, proc: trio.Process) -> AsyncIterator[Any]:
        """JSON-RPC lines in and out, as the SDK's ``stdio_client`` reads and writes them."""
        import anyio  # loaded with the SDK, in a worker thread (``connection.load_sdk``)
        from mcp.shared.message import SessionMessage

        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout
        read_in, read_out = anyio.create_memory_object_stream[Any](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)

        async def read() -> None:
            buffer = bytearray()
            try:
                async with read_in:
                    while True:
                        chunk = await stdout.receive_some(READ_CHUNK)
                        if not chunk:
                            self.ended_by_itself = not self._stopping
                            return
                        buffer += chunk
                        while (end := buffer.find(b"\n")) >= 0:
                            line = bytes(buffer[:end])
                            del buffer[: end + 1]
                            if line.strip():
                                await read_in.send(_parse(line))
                        if len(buffer) > MAX_LINE_BYTES:
                            self.problem = f"it sent a line of over {MAX_LINE_BYTES} bytes"
                            return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, trio.ClosedResourceError):
                pass  # our side is closing
            finally:
                self.ended.set()

        async def write() -> None:
            try:
                async with write_out:
                    async for message in write_out:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await stdin.send_all(data.encode() + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await read_in.aclose()  # the server stopped reading: pending requests fail

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            nursery.start_soon(write)
            try:
                yield read_out, write_in
            finally:
                nursery.cancel_scope.cancel()

    async def _keep_stderr(self, proc: trio.Process, done: trio.Event) -> None:
        """Read its stderr to the end, keeping the tail (memory stays bounded)."""
        assert proc.stderr is not None
        try:
            while chunk := await proc.stderr.receive_some(READ_CHUNK):
                self._stderr += chunk
                del self._stderr[:-STDERR_TAIL]
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        finally:
            done.set()

    async def _stop(self, proc: trio.Process, tree: process_tree.Tree) -> None:
        """Close its stdin (MCP's shutdown), wait a little, then end the whole tree."""
        self._stopping = True
        try:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                assert proc.stdin is not None
                await proc.stdin.aclose()
            with trio.move_on_after(STDIN_CLOSE_GRACE):
                await proc.wait()
            await process_tree.end_group(proc, tree, KILL_GRACE)
        finally:
            process_tree.forget(proc)
            self.returncode = proc.returncode


def _parse(line: bytes) -> Any:
    """One line from the server: a message for the session, or the error it could not be."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        log.warning("MCP server sent a line that is not JSON-RPC: %.200r", line)
        return exc


def remote(spec: ServerSpec, stack: contextlib.AsyncExitStack) -> Any:
    """The SDK transport for an HTTP or SSE server (headers sent with every request)."""
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(spec.url, headers=dict(spec.headers))
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client  # what the SDK uses itself

    http = create_mcp_http_client(headers=dict(spec.headers))
    stack.push_async_callback(http.aclose)  # the transport leaves a client it was given open
    return streamable_http_client(spec.url, http_client=http)
