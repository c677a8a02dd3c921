"""The agent's own process environment, emptied of its secrets once they are read.

Without this, any command could print the model key, the cloud keys and the serve token with
``cat /proc/$PPID/environ``: a command runs as the agent's user, and ``/proc/<pid>/environ``
shows the environment a process was started with, whatever it did with it since. So, at
start-up (:func:`seal`, called once by ``iaccode acp`` and ``iaccode serve`` after the config is
read), on Linux:

1. every secret variable (:mod:`iaccode.secret_env`, with the user's own names declared) is
   unset from the C-level environment, the one every child inherits by default;
2. its ``NAME=value`` in the environment block the process started with (what
   ``/proc/<pid>/environ`` reads: the kernel's ``env_start``..``env_end``) is overwritten with
   NUL bytes, through ``/proc/self/mem``;
3. the process is made non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): its ``/proc/<pid>/``
   files then belong to root, so another process of the same user can no longer read its
   environment, memory, open files or working directory (``environ``, ``mem``, ``fd/``, ``cwd``:
   permission denied) nor ptrace it. Its children are dumpable again after their ``exec``; the
   process tree code reads only ``/proc/<pid>/stat`` and the ``children`` lists, which stay
   world-readable.

Root (with ``CAP_SYS_PTRACE``, as in most containers run as root) still reads any process's
files: there step 2 is what hides the values. The interpreter's ``os.environ`` keeps them: it is
a copy in the process's own memory, where the SDKs read the model key and the gate
(``iaccode/iac/``) the cloud credentials it hands to the programs it runs. That memory is what a
non-dumpable process keeps from other users' processes of the same uid; nothing keeps it from
root.

No re-exec: the work here (a read of ``/proc/self/stat``, one write, one prctl) takes well under
a millisecond, and it runs before any thread starts (``cli.run_acp``: after the config is read,
before the preload thread), so no other thread reads the C environment while it changes.
``ctypes`` is imported by trio already, so it costs nothing here either. Elsewhere (macOS)
only step 1 is done.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable

from iaccode import secret_env

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3

_ENV_START_FIELD = 50
"""``env_start`` is field 50 of ``/proc/<pid>/stat`` (``env_end`` the 51st), since Linux 3.5."""


class Sealed:
    """What :func:`seal` did, for the log and the tests."""

    __slots__ = ("names", "scrubbed", "dumpable")

    def __init__(self, names: list[str], scrubbed: bool, dumpable: bool) -> None:
        self.names = names
        """The secret variables taken out of the process environment."""
        self.scrubbed = scrubbed
        """Whether the start-up environment block was overwritten (Linux)."""
        self.dumpable = dumpable
        """Whether the process is still dumpable (the prctl failed, or not Linux)."""


def seal(extra_names: Iterable[str] = ()) -> Sealed:
    """Declare the user's secret names, then take every secret out of this process's
    environment (see the module docstring). Call it once, before any command or server
    starts; never in a process that must keep its environment (an in-process test)."""
    secret_env.declare(extra_names)
    names = sorted(name for name, value in os.environ.items() if secret_env.is_secret(name, value))
    for name in names:
        os.unsetenv(name)  # os.environ (the interpreter's copy) keeps it for the SDKs
    scrubbed = dumpable = False
    if sys.platform.startswith("linux"):
        scrubbed = _scrub_start_block(names)
        dumpable = not _no_dumps()
    log.info(
        "took %d secret variable(s) out of the process environment%s%s",
        len(names),
        "" if scrubbed or not names else " (its start-up block could not be rewritten)",
        "; the process is not dumpable" if not dumpable else "",
    )
    return Sealed(names, scrubbed, dumpable)


def _env_range() -> tuple[int, int]:
    with open("/proc/self/stat", "rb") as file:
        data = file.read()
    fields = data[data.rfind(b")") + 2 :].split()  # from field 3 (the state) on
    start = _ENV_START_FIELD - 3
    return int(fields[start]), int(fields[start + 1])


def _scrub_start_block(names: list[str]) -> bool:
    """Overwrite each ``NAME=value`` of ``names`` in the block ``/proc/self/environ`` reads
    with NUL bytes, where it is; the other entries stay where they are (the C environment
    still points at them). True when there is nothing left to hide."""
    if not names:
        return True
    prefixes = tuple(
        f"{name}=".encode(sys.getfilesystemencoding(), "surrogateescape") for name in names
    )
    try:
        start, end = _env_range()
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            memory.seek(start)
            block = memory.read(end - start)
            offset = 0
            for entry in block.split(b"\0"):
                if entry.startswith(prefixes):
                    memory.seek(start + offset)
                    memory.write(b"\0" * len(entry))
                offset += len(entry) + 1
    except (OSError, ValueError, IndexError) as exc:
        log.warning("could not hide the secrets in /proc/%d/environ: %s", os.getpid(), exc)
        return False
    return True


def _no_dumps() -> bool:
    """Make the process non-dumpable; True when it is."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_DUMPABLE, 0) failed: errno %d", ctypes.get_errno())
        return False
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0  # type: ignore[no-any-return]
