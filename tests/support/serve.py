"""``iaccode serve`` as the remote tests start it: in the test's process by default
(:func:`serve_in_process`: ``serve_remote`` in a task of the test, stopped through its stop
hook), or spawned (:func:`spawn_server`) where the process is the point: signals, exit
statuses, what it prints, the port in use. :func:`start_server` chooses as
:func:`tests.support.agent_process.spawn_agent` does (the ``process`` mark,
``--agent-processes``)."""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from tests.support import agent_process
from tests.support.in_process import KILLED, SHUTDOWN_WAIT, as_server_task, hosting


class _Server:
    """What the tests read of a server: its URL, its token, its stderr (the log records)."""

    def __init__(self, stderr_path: Path, token: str) -> None:
        self.stderr_path = stderr_path
        self.token = token
        self.url = ""

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def wait_log(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        """Wait until the server's stderr matches ``pattern``."""
        with trio.fail_after(timeout):
            while not (found := re.search(pattern, self.stderr)):  # noqa: ASYNC110 - a file
                await trio.sleep(0.05)
        return found


class ServerProcess(_Server):
    """A running ``iaccode serve`` (its URL and token, from what it printed on stderr)."""

    def __init__(self, process: trio.Process, stderr_path: Path, token: str) -> None:
        super().__init__(stderr_path, token)
        self.process = process

    async def wait_listening(self, timeout: float = 30.0) -> None:
        with trio.fail_after(timeout):
            while not (found := re.search(r"serving ACP on (http://\S+)", self.stderr)):
                if self.process.returncode is not None:
                    raise AssertionError(f"iaccode serve exited: {self.stderr[-3000:]}")
                await trio.sleep(0.05)
        self.url = found.group(1)

    def terminate(self) -> None:
        """Shut down as a user's SIGTERM asks."""
        self.process.send_signal(signal.SIGTERM)

    async def wait(self) -> int:
        return await self.process.wait()


class ServerInProcess(_Server):
    """``serve_remote`` in a task of the test's process, on loopback port 0: what ``iaccode
    serve`` runs after its start-up (``cli.run_serve``: the config from the environment,
    the user's secret names declared, ``serve.run``), its log records in ``stderr``.
    :meth:`terminate` sets its stop hook: the shutdown a SIGTERM starts."""

    def __init__(self, env: Mapping[str, str], stderr_path: Path, token: str) -> None:
        super().__init__(stderr_path, token)
        self.env = dict(env)
        self.returncode: int | None = None
        self._stop = trio.Event()
        self._ended = trio.Event()
        self._scope = trio.CancelScope()

    def terminate(self) -> None:
        self._stop.set()

    def kill(self) -> None:
        """End it now (a process would get SIGKILL)."""
        self._scope.cancel()

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until stopped; ``returncode`` as ``iaccode serve`` would exit (0, or 1 when
        it fails). Started with the server's URL (an OSError when it cannot listen)."""
        from iaccode import secret_env
        from iaccode.cli import secret_names
        from iaccode.config import Config
        from iaccode.remote.serve import serve_remote

        config = Config.from_env(self.env)
        secret_env.declare(secret_names(config))
        try:
            with self._scope, as_server_task(self, config.log_level, config.log_file):
                try:
                    await serve_remote(
                        config,
                        "127.0.0.1",
                        0,
                        self.token,
                        False,
                        stop=self._stop,
                        task_status=task_status,
                    )
                    self.returncode = 0
                except Exception:
                    logging.getLogger("iaccode").exception("the server failed")
                    self.returncode = 1
        finally:
            if self.returncode is None:
                self.returncode = KILLED
            self._ended.set()


@contextlib.asynccontextmanager
async def serve_in_process(
    env: Mapping[str, str], stderr_path: Path, token: str
) -> AsyncIterator[ServerInProcess]:
    """``iaccode serve`` in the test's process with IAC_CODE_SERVE_TOKEN=token; stopped at
    the end as by SIGTERM (cancelled after :data:`SHUTDOWN_WAIT` seconds)."""
    env = {**env, "IAC_CODE_SERVE_TOKEN": token}
    server = ServerInProcess(env, stderr_path, token)
    async with hosting(server, env):
        try:
            async with trio.open_nursery() as nursery:
                server.url = (await nursery.start(server.serve))[0]
                try:
                    yield server
                finally:
                    with trio.CancelScope(shield=True):
                        server.terminate()
                        with trio.move_on_after(SHUTDOWN_WAIT):
                            await server.wait()
                        server.kill()
                        await server.wait()
        except BaseExceptionGroup as group:  # the block's own error, not the nursery's
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise


Server = ServerInProcess | ServerProcess

SERVE_COMMAND = [sys.executable, "-m", "iaccode", "serve", "--port", "0"]


@contextlib.asynccontextmanager
async def spawn_server(
    env: Mapping[str, str], stderr_path: Path, token: str, args: Sequence[str] = ()
) -> AsyncIterator[ServerProcess]:
    """Start ``iaccode serve --port 0`` with IAC_CODE_SERVE_TOKEN=token; SIGTERM it at the end
    (SIGKILL after 10 s)."""
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            [*SERVE_COMMAND, *args],
            stdin=subprocess.DEVNULL,
            stdout=stderr,
            stderr=stderr,
            env={**env, "IAC_CODE_SERVE_TOKEN": token},
            start_new_session=True,
        )
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


@contextlib.asynccontextmanager
async def start_server(
    env: Mapping[str, str], stderr_path: Path, token: str, *, process: bool | None = None
) -> AsyncIterator[Server]:
    """``iaccode serve`` in the test's process, or spawned (``process``; by default as the
    test is marked)."""
    if process is None:
        process = agent_process.SPAWN_BY_DEFAULT
    server: Server
    if process:
        async with spawn_server(env, stderr_path, token) as server:
            yield server
    else:
        async with serve_in_process(env, stderr_path, token) as server:
            yield server
