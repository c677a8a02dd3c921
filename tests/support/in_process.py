"""The real ACP server in the test's own process, over pipes.

``async with run_in_process(env, stderr_path, checker) as agent`` gives the same
:class:`~acp_conformance.driver.AgentConnection` as a spawned ``iaccode acp``
(:func:`tests.support.agent_process.spawn_agent` chooses), so a test's body does not change.
What runs is what ``iaccode acp`` runs after its start-up (``cli.run_acp``,
``server/stdio.py``): the config from ``env`` (``Config.from_env``), the user's secret names
declared, ``make_provider``, a ``Connection`` and ``serve_agent``, the preload's modules
imported before. Not here, because only a process has them: stdio claimed, the secrets taken
out of the C environment and ``/proc/<pid>/environ`` and the process made non-dumpable
(``cli.seal_secrets``: it would change the test process), file descriptors, signals, exit
statuses as the kernel reports them, the process group; tests of those are marked
``process``.

Three things a process gives for free are put back:

- The environment: ``os.environ`` is ``env`` while the agent runs (the SDKs, the bash tool and
  the IaC guard read it there), and is put back at the end. Agents side by side must share one
  environment (:class:`_ProcessState` refuses another); the process-wide caches are emptied
  after the last one, so an agent started again finds none of its predecessor's memory.
- stderr: the log records of the agent's tasks (and its worker threads) go to
  ``stderr_path`` in the format of ``iaccode.logs``, and to ``<home>/logs/iaccode.log``, at
  the configured level, so ``agent.stderr`` reads what a process would have written.
- The end: leaving the block closes the agent's input and waits for it to shut down as after
  end of input (a process would be killed; nothing a test reads comes after that). It is
  cancelled if it has not ended after :data:`SHUTDOWN_WAIT` seconds.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import logging
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import trio
from acp_conformance.driver import AgentConnection

from iaccode.logs import FORMAT, NOISY_LOGGERS

SHUTDOWN_WAIT = 10.0
"""Seconds an agent may take to shut down at the end of its block before it is cancelled."""

KILLED = -9
"""The return code of an agent cancelled at the end (as ``trio.Process`` reports a SIGKILL)."""


class Hosted(Protocol):
    """A server run in the test's process: an agent, or ``iaccode serve``'s
    (``tests/support/serve.py``)."""

    stderr_path: Path


_AGENT: contextvars.ContextVar[Hosted | None] = contextvars.ContextVar(
    "in_process_agent", default=None
)
"""The server whose task (or worker thread) is running: its log records go to its stderr."""


class InProcessAgent:
    """The part of ``trio.Process`` that :class:`AgentConnection` uses, for a server task:
    ``stdin`` and ``stdout`` (pipes), ``wait()``, ``returncode``, ``poll()``."""

    def __init__(self, env: Mapping[str, str], stderr_path: Path) -> None:
        self.env = dict(env)
        self.stderr_path = stderr_path
        self._input, self.stdin = _pipe()
        self.stdout, self._output = _pipe()
        self.returncode: int | None = None
        self._ended = trio.Event()
        self._scope = trio.CancelScope()

    @property
    def pid(self) -> int:
        raise AssertionError(
            "the pid of an agent in the test's process (it would be the "
            "test's own): mark the test @pytest.mark.process"
        )

    def poll(self) -> int | None:
        return self.returncode

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        raise AssertionError(
            f"signal {signum} to an agent in the test's process: mark the test @pytest.mark.process"
        )

    def kill(self) -> None:
        self._scope.cancel()

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Run the server until its input ends (or :meth:`kill`); set ``returncode`` as
        ``iaccode acp`` would exit (0; 2 for a setting it refuses; 1 when it fails)."""
        _AGENT.set(self)
        task_status.started()
        try:
            with self._scope:
                try:
                    self.returncode = await _serve(self.env, self._input, self._output)
                except Exception:
                    logging.getLogger("iaccode").exception("the server failed")
                    self.returncode = 1
        finally:
            if self.returncode is None:
                self.returncode = KILLED
            with trio.CancelScope(shield=True):
                await self._output.aclose()
            self._ended.set()
            # What the editor still writes is taken, as a process that is exiting would (the
            # pipe breaks only once it is gone): a test writes initialize to an agent that
            # stops at start-up, which takes a process a second and this task no time.
            try:
                await _drain(self._input)
            finally:
                with trio.CancelScope(shield=True):
                    await self._input.aclose()


def _pipe() -> tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream]:
    """The read and write ends of a pipe: the agent's stdin or stdout, with a pipe's
    buffer (an editor that stops reading holds the agent up) and end of input."""
    read, write = os.pipe()
    return trio.lowlevel.FdStream(read), trio.lowlevel.FdStream(write)


async def _serve(
    env: Mapping[str, str], receive: trio.abc.ReceiveStream, send: trio.abc.SendStream
) -> int:
    """``cli.run_acp`` and ``stdio.serve_stdio`` on two streams, without a recorder (``--record``
    is an option: a process's)."""
    from iaccode import secret_env
    from iaccode.cli import secret_names
    from iaccode.config import Config, ConfigError
    from iaccode.llm.script import ScriptError
    from iaccode.server.provider import make_provider
    from iaccode.server.serve import serve_agent
    from iaccode.wire.connection import Connection

    log = logging.getLogger("iaccode")
    try:
        config = Config.from_env(env)
    except ConfigError as exc:
        _write_stderr(f"iaccode: {exc}\n")
        return 2
    # What cli.seal_secrets does for a process, without taking the secrets out of the test's
    # environment: the user's secret names count as secrets (undone by _forget_caches).
    secret_env.declare(secret_names(config))
    with _log_level(config.log_level), _log_file(config.log_file):
        log.info(
            "iaccode serving ACP in the test's process (%s, model %s)",
            config.provider,
            config.model,
        )
        try:
            provider = make_provider(config)
            connection = Connection(receive, send, max_line_bytes=config.max_line_bytes)
            try:
                await serve_agent(config, provider, connection)
            finally:
                aclose = getattr(provider, "aclose", None)
                if aclose is not None:
                    with trio.CancelScope(shield=True):
                        await aclose()
        except ScriptError as exc:
            log.error("the model script cannot be played: %s", exc)
            return 1
        log.info("connection closed; exiting")
    return 0


def _write_stderr(text: str) -> None:
    agent = _AGENT.get()
    assert agent is not None
    with agent.stderr_path.open("a", encoding="utf-8") as stderr:
        stderr.write(text)


# -- what a process would have of its own --------------------------------------------------


class _ProcessState:
    """What the agents in the test's process share as a process's: ``os.environ`` is theirs
    while any runs; after the last one, it is put back and the process-wide caches of the
    server are emptied, as a new process would find them."""

    def __init__(self) -> None:
        self.running = 0
        self.env: dict[str, str] = {}
        self.saved: dict[str, str] = {}

    @contextlib.contextmanager
    def entered(self, env: Mapping[str, str]) -> Iterator[None]:
        if self.running and dict(env) != self.env:
            raise AssertionError(
                "agents in one test process with different environments: "
                "mark the test @pytest.mark.process"
            )
        if not self.running:
            self.saved, self.env = dict(os.environ), dict(env)
            _replace(os.environ, self.env)
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            if not self.running:
                _replace(os.environ, self.saved)
                _forget_caches()


def _replace(target: Any, values: Mapping[str, str]) -> None:
    for name in [name for name in target if name not in values]:
        del target[name]
    for name, value in values.items():
        if target.get(name) != value:
            target[name] = value


def _forget_caches() -> None:
    """The server's process-wide state that a restarted agent must not find: the IaC
    inventories of the projects (one per folder), the secret names declared and the keys held
    (``secret_env``), the stored keys read (``llm/stored_keys.py``). The rest is derived from
    constants or values (the ``functools.cache`` functions, the redactors) or ends with the
    call that made it (the bash tool's shells)."""
    from iaccode import secret_env
    from iaccode.iac import inventory
    from iaccode.llm import stored_keys

    with inventory._PROJECTS_LOCK:
        inventory._PROJECTS.clear()
    secret_env._declared = ()
    secret_env._held.clear()
    stored_keys._cache.clear()
    stored_keys._from_keyring.clear()


PROCESS = _ProcessState()


# -- logging ---------------------------------------------------------------------------------


class _AgentRecords(logging.Filter):
    """The records of one agent: emitted in its tasks or threads, or, from a thread of no
    agent's (one the server started itself), by an ``iaccode`` logger."""

    def __init__(self, agent: Hosted) -> None:
        super().__init__()
        self.agent = agent

    def filter(self, record: logging.LogRecord) -> bool:
        current = _AGENT.get()
        if current is None:
            return record.name == "iaccode" or record.name.startswith("iaccode.")
        return current is self.agent


@contextlib.contextmanager
def _log_to(path: Path, agent: Hosted) -> Iterator[None]:
    handler = logging.FileHandler(path, mode="a", encoding="utf-8", errors="backslashreplace")
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_AgentRecords(agent))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()


@contextlib.contextmanager
def _log_level(level: str) -> Iterator[None]:
    """The root logger's level and the library loggers' as ``logs.setup_logging`` sets them."""
    root = logging.getLogger()
    loggers = [root, *(logging.getLogger(name) for name in NOISY_LOGGERS)]
    saved = [logger.level for logger in loggers]
    root.setLevel(level)
    for logger in loggers[1:]:
        logger.setLevel(max(logging.WARNING, root.level))
    try:
        yield
    finally:
        for logger, old in zip(loggers, saved, strict=True):
            logger.setLevel(old)


@contextlib.contextmanager
def _log_file(path: Path) -> Iterator[None]:
    """The agent's records in its log file too (``<home>/logs/iaccode.log``)."""
    agent = _AGENT.get()
    assert agent is not None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: the agent logs to stderr only (logs.setup_logging)
        yield
        return
    with _log_to(path, agent):
        yield


# -- the block -------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def hosting(server: Hosted, env: Mapping[str, str]) -> AsyncIterator[None]:
    """What a process gives a server, for one in the test's process while the block runs: a
    new stderr, the modules the preload imports, ``os.environ`` as ``env``, its log records
    to its stderr (from tasks run :func:`as_server_task`)."""
    await trio.Path(server.stderr_path).write_bytes(b"")  # as a spawned agent's stderr starts
    await trio.to_thread.run_sync(_preload, env)
    with PROCESS.entered(env), _log_to(server.stderr_path, server):
        yield


@contextlib.contextmanager
def as_server_task(server: Hosted, log_level: str, log_file: Path) -> Iterator[None]:
    """In the server's own task: its records (and those of the tasks and threads it starts)
    go to its stderr and to its log file, at its configured level."""
    _AGENT.set(server)
    with _log_level(log_level), _log_file(log_file):
        yield


@contextlib.asynccontextmanager
async def run_in_process(
    env: Mapping[str, str], stderr_path: Path, checker: Any | None = None, **connection: Any
) -> AsyncIterator[AgentConnection]:
    """The server in a task of the test's run, driven as a spawned agent; ``connection``:
    more arguments for :class:`AgentConnection` (``timeout``, ``services``, ...)."""
    agent = InProcessAgent(env, stderr_path)
    async with hosting(agent, env):
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(agent.serve)
                try:
                    yield AgentConnection(
                        agent,  # type: ignore[arg-type]
                        checker,
                        stderr_path,
                        **connection,
                    )
                finally:
                    with trio.CancelScope(shield=True):
                        await _shut_down(agent)
        except BaseExceptionGroup as group:  # the block's own error, not the nursery's
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise


def _preload(env: Mapping[str, str]) -> None:
    """Import what ``iaccode/preload.py`` would for this configuration (the model SDK, the turn's
    modules, the MCP client), before the agent starts: a process imports them in a thread of
    its own while it answers; here the first test would pay for all the later ones, within its
    15 s for an answer. (Not ``Preload`` itself: it changes the switch interval and freezes
    the garbage collector, which are the test process's.)"""
    from iaccode.config import Config, ConfigError
    from iaccode.preload import modules_for

    try:
        config = Config.from_env(env)
    except ConfigError:  # the agent says so in its own time
        return
    for name in modules_for(config):
        importlib.import_module(name)


async def _shut_down(agent: InProcessAgent) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await agent.stdin.aclose()
    with trio.move_on_after(SHUTDOWN_WAIT):
        await _drain(agent.stdout)
    agent.kill()
    await agent.wait()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    """Read (and drop) what the agent still writes until it closes its output, as the pipe
    of a process would take it."""
    with contextlib.suppress(trio.ClosedResourceError):
        while await stream.receive_some(1 << 20):
            pass
