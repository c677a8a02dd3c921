"""Find and end every process a bash call started, whatever its session (Linux only).

Killing the shell's process group and session misses a process that calls ``setsid`` (or a
daemon that double-forks into a new session). Child subreapers (``prctl(PR_SET_CHILD_SUBREAPER)``)
keep those findable: a process whose parent dies is reparented to its nearest living subreaper
ancestor instead of init.

- The shell is made a subreaper in the child before it execs (the flag survives execve but is
  not inherited by fork), so while it lives everything the command started stays below it in
  the ``/proc`` parent links, whatever its session.
- The agent becomes one too (lazily, before its first shell), so what is orphaned when the
  shell exits comes to us rather than to init. Such an *adopted* orphan is a child of ours that
  we did not start: it is in another session than ours (a child we start ourselves, such as the
  grep tool's ``rg``, shares our session unless started with a session of its own; a process can
  never join our session), it is not one of our shells, and it was not a child of ours yet
  when the oldest shell whose call is still ending was started (so a child an embedding
  program started earlier is left alone).
  Shells are started under a lock the search also takes, so a shell that is being started
  (forked, not yet known) is never taken for an orphan.

A call's :class:`Tree` is its shell's descendants while the shell lives, then the adopted
orphans. Calls may run side by side: a live shell's processes are below it, never ours, so one
call cannot reach another's while that one runs; adopted orphans may come from any call whose
shell has exited, and that call is ending them too.

Without prctl or ``/proc`` (macOS) :func:`supported` is False and the tree is always empty.

:func:`end_group` ends a shell's process group and session, then the rest of its tree: TERM, a
grace period, KILL (the bash tool and the MCP stdio transport end their processes with it).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from iaccode.host.procfs import Stat, processes

if TYPE_CHECKING:
    import trio

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1

FREEZE_ROUNDS = 20
"""How many times :meth:`Tree.kill` looks for processes forked before it froze their parent."""
KILL_WAIT = 1.0
"""After KILL, how long :func:`end_group` waits for the group to disappear before giving up."""


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        return None
    try:
        prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl  # type: ignore[no-any-return]


_prctl = _load_prctl()  # None: not supported (set to None when the prctl fails)
_we_are_subreaper = False
# The shells whose calls are not over, oldest first -> our children when each was started.
_shells: dict[int, frozenset[tuple[int, int]]] = {}
_spawn_lock_var: trio.lowlevel.RunVar[trio.Lock] | None = None
"""The lock of each trio run, made at the first use: trio is imported only by those who spawn
(the terminal's supervisor, started once per command, imports this module without it: 0.15 s
of CPU less per command)."""


def supported() -> bool:
    return _prctl is not None


def _subreaper_in_child() -> None:
    """Runs in the forked child before exec: nothing but the prctl (the parent has threads)."""
    if _prctl is not None:
        _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _spawn_lock() -> trio.Lock:
    global _spawn_lock_var
    import trio

    if _spawn_lock_var is None:
        _spawn_lock_var = trio.lowlevel.RunVar("process_tree_spawn")
    try:
        return _spawn_lock_var.get()
    except LookupError:
        lock = trio.Lock()
        _spawn_lock_var.set(lock)
        return lock


async def open_shell(argv: list[str], **options: Any) -> trio.Process:
    """``trio.lowlevel.open_process`` for a bash call's shell, made a subreaper on Linux.

    Call :func:`forget` once the call has ended everything the shell started.
    """
    global _prctl, _we_are_subreaper
    import trio

    if _prctl is not None and not _we_are_subreaper:
        _we_are_subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        if not _we_are_subreaper:  # a kernel older than 3.4: do without, as on macOS
            _prctl = None
    if _prctl is None:
        return await trio.lowlevel.open_process(argv, **options)
    async with _spawn_lock():
        before = _our_children(processes())
        proc = await trio.lowlevel.open_process(argv, preexec_fn=_subreaper_in_child, **options)
        _shells[proc.pid] = before
    return proc


def forget(proc: trio.Process) -> None:
    _shells.pop(proc.pid, None)


def _descendants(table: dict[int, Stat], roots: Iterable[int]) -> set[int]:
    """``roots`` and everything below them."""
    children: dict[int, list[int]] = {}
    for pid, stat in table.items():
        children.setdefault(stat.ppid, []).append(pid)
    found: set[int] = set()
    todo = [pid for pid in roots if pid in table]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, ())
    return found


def _our_children(table: dict[int, Stat]) -> frozenset[tuple[int, int]]:
    me = os.getpid()
    return frozenset((pid, stat.start) for pid, stat in table.items() if stat.ppid == me)


def _adopted(table: dict[int, Stat]) -> list[int]:
    """Orphans reparented to us (see the module docstring), zombies included."""
    if not _shells:
        return []
    me, our_session = os.getpid(), os.getsid(0)
    earlier = next(iter(_shells.values()))  # (pid, start time): pids are reused
    return [
        pid
        for pid, stat in table.items()
        if stat.ppid == me
        and stat.session != our_session
        and pid not in _shells
        and (pid, stat.start) not in earlier
    ]


class Tree:
    """Every process a bash call started, wherever its session; empty without support."""

    def __init__(self, shell: trio.Process) -> None:
        self.shell = shell
        self.unkillable: set[int] = set()  # EPERM (a setuid program): not ours to end

    async def _members(self) -> dict[int, Stat]:
        """The live members (with their stat); reaps the adopted orphans that died."""
        if _prctl is None:
            return {}
        async with _spawn_lock():
            return self._look()

    def _look(self) -> dict[int, Stat]:
        # Poll first: while the shell is not reaped its pid cannot be reused, and once it has
        # exited its children are ours already.
        shell_alive = self.shell.poll() is None
        table = processes()
        roots = [self.shell.pid] if shell_alive else _adopted(table)
        for pid in roots:
            if not shell_alive and table[pid].zombie:
                # Reap this pid only: trio waits for its own children itself.
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        return {
            pid: table[pid]
            for pid in _descendants(table, roots)
            if not table[pid].zombie and pid not in self.unkillable
        }

    async def alive(self) -> bool:
        return bool(await self._members())

    async def terminate(self) -> None:
        """TERM (and CONT, so a stopped one sees it) to the members outside the shell's
        session: the caller signals the session itself, and twice could be seen as urgent."""
        for pid, stat in (await self._members()).items():
            if stat.session != self.shell.pid:
                self._send(pid, signal.SIGTERM)
                self._send(pid, signal.SIGCONT)

    async def kill(self) -> None:
        """SIGKILL every member. Stop them first, round after round until no new one turns
        up, so none can fork a child we would not see."""
        stopped: set[int] = set()
        for _ in range(FREEZE_ROUNDS):
            new = (await self._members()).keys() - stopped
            if not new:
                break
            for pid in new:
                self._send(pid, signal.SIGSTOP)
            stopped |= new
        for pid in stopped:
            self._send(pid, signal.SIGKILL)

    def _send(self, pid: int, sig: signal.Signals) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:
            self.unkillable.add(pid)


# --- ending a shell's group and tree ---------------------------------------------------------


async def end_group(proc: trio.Process, tree: Tree, grace: float) -> None:
    """End the shell's process group, and the rest of ``tree``: TERM, up to ``grace`` seconds,
    KILL; reap the shell.

    Bounded by ``grace + KILL_WAIT`` (and the odd look at ``/proc``); call it shielded.
    """
    import trio

    pgid = proc.pid  # start_new_session: the shell leads its own session and group
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, KILL_WAIT)):
        if await _all_done(proc, tree, pgid):
            return
        _signal_group(pgid, sig)
        if sig == signal.SIGTERM:
            _signal_group(pgid, signal.SIGCONT)  # a stopped process must run to see TERM
            await tree.terminate()
        else:
            await tree.kill()
        with trio.move_on_after(wait):
            await proc.wait()  # the shell's exit wakes us at once (no polling it in steps)
            delay = 0.002
            while not await _all_done(proc, tree, pgid):
                await trio.sleep(delay)
                delay = min(delay * 2, 0.05)
                if sig == signal.SIGKILL:  # forked before it was killed, or just orphaned
                    await tree.kill()
    if not await _all_done(proc, tree, pgid):
        log.warning("process group %d still has live processes after SIGKILL", pgid)


async def _all_done(proc: trio.Process, tree: Tree, pgid: int) -> bool:
    # The tree last: looking at it reaps the orphans that died.
    return _group_done(proc, pgid) and not await tree.alive()


def _group_done(proc: trio.Process, pgid: int) -> bool:
    return proc.poll() is not None and not group_alive(pgid)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # ESRCH: the group is already gone. EPERM: what is left is not ours to signal (setuid).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in _live_members(pgid) or []:  # jobs in groups of their own, same session
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def group_alive(pgid: int) -> bool:
    """Whether the process group, or the session its leader started, still has a process that
    is not a zombie.

    A child orphaned by the shell's exit goes to init, which may reap it lazily; a zombie
    holds no resources and no pipe, and signals cannot end it further, so it does not count.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return bool(_live_members(pgid))  # a job in a group of its own may be left
    except PermissionError:  # only processes we cannot signal are left
        return False
    return _has_live_member(pgid)


def _has_live_member(pgid: int) -> bool:
    members = _live_members(pgid)
    return True if members is None else bool(members)  # no procfs (macOS): trust killpg


def _live_members(pgid: int) -> list[int] | None:
    """Live processes in the group ``pgid`` or in the session it leads; None without procfs."""
    try:
        table = processes()
    except OSError:
        return None
    return [
        pid for pid, stat in table.items() if pgid in (stat.pgrp, stat.session) and not stat.zombie
    ]


# --- synchronous, for the terminal supervisor (iaccode.tools.supervise) -------------------------


def become_subreaper() -> bool:
    """Make this process a child subreaper; False where that is not supported."""
    return _prctl is not None and _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def set_parent_death_signal(sig: signal.Signals) -> bool:
    """Have ``sig`` sent to this process when its parent dies; False where unsupported."""
    return _prctl is not None and _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def live_descendants(root: int) -> set[int]:
    """Every live process below ``root`` (not ``root`` itself) by the ``/proc`` parent links."""
    table = processes()
    return {pid for pid in _descendants(table, [root]) if pid != root and not table[pid].zombie}


def end_descendants(grace: float, poll: float = 0.02) -> None:
    """End everything below this process, which must be a subreaper (so nothing it started
    can slip out from below it): TERM (and CONT), up to ``grace`` seconds, then, like
    :meth:`Tree.kill`, stop them round after round until no new one turns up, and KILL.
    Reaps the children that die (they are all ours, by adoption if not by birth)."""
    me = os.getpid()
    for pid in live_descendants(me):
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while _reap_and_look(me) and time.monotonic() < deadline:
        time.sleep(poll)
    stopped: set[int] = set()
    for _ in range(FREEZE_ROUNDS):
        new = _reap_and_look(me) - stopped
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped |= new
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while _reap_and_look(me) and time.monotonic() < deadline:
        time.sleep(poll)


def _reap_and_look(me: int) -> set[int]:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass
    return live_descendants(me)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
