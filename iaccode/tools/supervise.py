"""The supervisor of a command run in the editor's terminal (``terminal/create``).

    python -P -m iaccode.tools.supervise --grace SECONDS -- /bin/bash -c COMMAND

A client's ``terminal/kill`` may end only the outer shell it started our command with (seen:
``bash -c 'sleep 30'`` kept running under init), so the bash tool hands the client this
module, run by the agent's own interpreter, instead of the bare shell. It

- makes itself a child subreaper, so everything the command starts (``&``, ``nohup``,
  ``setsid``, a daemon that double-forks) stays below it, findable through ``/proc``;
- asks for a signal when its parent dies (``PR_SET_PDEATHSIG``): the client killing the
  outer shell, or the client itself going away, reaches it. The kernel also sends it when
  only the *thread* that started us exits (a client spawning from a pool thread), so it is
  SIGUSR1, not TERM, and counts only when our parent really changed;
- runs the command and exits with its status (128 + N when a signal N ended it);
- ends the whole tree (TERM, ``--grace`` seconds, KILL) when it gets TERM, HUP or INT, when its
  parent dies, and when the command exits (nothing outlives the call, as with a local bash);
- when the agent gave it a gate channel (``IAC_CODE_GATE_*`` in the ``env`` of
  ``terminal/create``), says hello on it (it is the root below which the call's gates must run),
  puts the gates first on the command's PATH and, with ``IAC_CODE_HOLD_CREDENTIALS=1``, leaves
  the cloud credentials of the editor's environment out of the command's
  (:mod:`iaccode.gate`).

It prints nothing of its own on stdout (the terminal's output is the command's); problems go
to stderr. Linux only: the bash tool uses it only where :func:`process_tree.supported`. A
SIGKILL of the supervisor itself cannot be caught; then only the shell dies with it (its own
parent-death signal) and what the shell started may live on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import FrameType

from iaccode.host import process_tree

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

PARENT_DEATH = signal.SIGUSR1
"""Our parent-death signal (see the module docstring for why not TERM)."""


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise _Stop(signum)


def _on_parent_death(parent: int) -> None:
    def handler(_signum: int, _frame: FrameType | None) -> None:
        if os.getppid() != parent:  # reparented: the parent process is gone
            raise _Stop(signal.SIGHUP)

    signal.signal(PARENT_DEATH, handler)


def command_line(argv: list[str], grace: float) -> tuple[str, list[str]]:
    """(command, args) for ``terminal/create``: ``argv`` under this supervisor."""
    # -P: the project folder (the terminal's cwd) must not shadow our own modules.
    return sys.executable, [
        "-P",
        "-m",
        "iaccode.tools.supervise",
        "--grace",
        f"{grace:g}",
        "--",
        *argv,
    ]


def _kill_shell_with_us() -> None:
    """In the shell, before exec: a SIGKILL of the supervisor still ends the shell."""
    process_tree.set_parent_death_signal(signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    import argparse  # here: the agent imports this module at start-up for command_line()

    parser = argparse.ArgumentParser(prog="python -m iaccode.tools.supervise")
    parser.add_argument(
        "--grace",
        type=float,
        default=2.0,
        help="seconds between TERM and KILL when the tree is ended",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("no command to run")
    parent = os.getppid()
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)
    _on_parent_death(parent)
    try:
        if not process_tree.become_subreaper():
            print(
                "iaccode supervise: no child subreaper here; what the command leaves "
                "behind may outlive it",
                file=sys.stderr,
            )
        process_tree.set_parent_death_signal(PARENT_DEATH)
        if os.getppid() == 1:  # the parent died before we asked to hear of it
            raise _Stop(signal.SIGHUP)
        status = _run(command, _gated_env())
    except _Stop as stop:
        status = 128 + stop.signum
    for sig in (*STOP_SIGNALS, PARENT_DEATH):
        signal.signal(sig, signal.SIG_IGN)  # the tree is being ended; a repeat changes nothing
    process_tree.end_descendants(options.grace)
    return status


def _gated_env() -> dict[str, str] | None:
    """The command's environment with the agent's gates (None: no channel, ours as it is)."""
    from iaccode.gate import gates_first
    from iaccode.gate.shim import hello
    from iaccode.iac.command_env import (
        FOLDER_VARIABLE,
        HOLD_VARIABLE,
        SOCKET_VARIABLE,
        TOKEN_VARIABLE,
    )
    from iaccode.iac.credentials import is_credential
    from iaccode.secret_env import scrubbed

    socket_path, token = os.environ.get(SOCKET_VARIABLE), os.environ.get(TOKEN_VARIABLE)
    folder = os.environ.get(FOLDER_VARIABLE)
    if not (socket_path and token and folder):
        return None
    problem = hello(socket_path, token)
    if problem is not None:  # the gates will refuse: say why once
        print(f"iaccode supervise: the agent's gate channel refused us: {problem}", file=sys.stderr)
    hold = os.environ.get(HOLD_VARIABLE) == "1"
    # The editor's environment, not ours: only the credentials are ours to hold back here.
    env = scrubbed(
        os.environ,
        secrets=False,
        also=lambda name: name == HOLD_VARIABLE or (hold and is_credential(name)),
    )
    env["PATH"] = gates_first(env.get("PATH", os.defpath), folder)
    return env


def _run(command: list[str], env: dict[str, str] | None = None) -> int:
    """Run the command; its exit status once it has exited (orphans are reaped meanwhile)."""
    try:
        child = subprocess.Popen(command, preexec_fn=_kill_shell_with_us, env=env)
    except OSError as exc:
        print(f"iaccode supervise: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    while True:
        pid, wait_status = os.waitpid(-1, 0)  # adopted orphans too: reap them as they die
        if pid == child.pid:
            child.returncode = code = os.waitstatus_to_exitcode(wait_status)
            return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
