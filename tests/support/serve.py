"""``iaccode serve`` as the remote tests start it: its URL and token, from what it printed."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import trio


class ServerProcess:
    """A running ``iaccode serve`` (its URL and token, from what it printed on stderr)."""

    def __init__(self, process: trio.Process, stderr_path: Path, token: str) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self.token = token
        self.url = ""

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def wait_listening(self, timeout: float = 30.0) -> None:
        with trio.fail_after(timeout):
            while not (found := re.search(r"serving ACP on (http://\S+)", self.stderr)):
                if self.process.returncode is not None:
                    raise AssertionError(f"iaccode serve exited: {self.stderr[-3000:]}")
                await trio.sleep(0.05)
        self.url = found.group(1)

    async def wait_log(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        """Wait until the server's stderr matches ``pattern``."""
        with trio.fail_after(timeout):
            while not (found := re.search(pattern, self.stderr)):  # noqa: ASYNC110 - a file
                await trio.sleep(0.05)
        return found


SERVE_COMMAND = [sys.executable, "-m", "iaccode", "serve", "--port", "0"]


@contextlib.asynccontextmanager
async def spawn_server(env: Mapping[str, str], stderr_path: Path, token: str,
                       args: Sequence[str] = ()) -> AsyncIterator[ServerProcess]:
    """Start ``iaccode serve --port 0`` with IAC_CODE_SERVE_TOKEN=token; SIGTERM it at the end
    (SIGKILL after 10 s)."""
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            [*SERVE_COMMAND, *args], stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
            env={**env, "IAC_CODE_SERVE_TOKEN": token}, start_new_session=True)
        server = ServerProcess(process, stderr_path, token)
        try:
            await server.wait_listening()
            yield server
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    process.terminate()
                    with trio.move_on_after(10):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
