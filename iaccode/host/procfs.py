"""The one reader of ``/proc/<pid>/stat`` (Linux): who a process's parent, group and session are.

The bash tool asks which processes are left in a command's group or session, and
:mod:`iaccode.host.process_tree` which are below a shell; both read this table. Without
``/proc`` (macOS) :func:`processes` raises OSError and the callers do without.
"""

from __future__ import annotations

import os

from attrs import frozen


@frozen
class Stat:
    ppid: int
    pgrp: int
    session: int
    zombie: bool
    """Dead and not yet reaped (``Z``), or dying (``X``): holds nothing, cannot be signalled."""
    start: int
    """Clock ticks after boot: with the pid, names one process (pids are reused)."""


def read_stat(pid: int | str) -> Stat | None:
    """The process's ``/proc/<pid>/stat``, or None when it is gone (or unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:  # gone meanwhile
        return None
    # "pid (comm) state ppid pgrp session ... starttime(22nd)"; comm may hold ") ".
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return Stat(
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            session=int(fields[3]),
            zombie=fields[0] in (b"Z", b"X"),
            start=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def processes() -> dict[int, Stat]:
    """Every process now, by pid. Raises OSError when there is no ``/proc``."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := read_stat(name)) is not None:
            table[int(name)] = stat
    return table
