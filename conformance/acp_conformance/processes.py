"""What a test can see of other processes: alive or not, their group, their parent, from
``/proc/<pid>/stat`` (read in one place, :func:`stat_fields`); the TCP connections they hold
(:func:`tcp_peer_ports`). Zombies count as dead: init may reap orphans lazily."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (``[0]`` the state letter,
    ``[1]`` the parent's pid, ``[2]`` the process group), or None when the process is gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()


def state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (``R``, ``S``, ``Z``, ...), or None when it is gone."""
    fields = stat_fields(pid)
    return fields[0].decode() if fields else None


def pid_alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it is dead for our purposes)."""
    if not os.path.isdir("/proc"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state(pid) not in (None, "Z", "X")


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid`` (None when it is gone)."""
    fields = stat_fields(pid)
    return int(fields[1]) if fields else None


def group_gone(pgid: int) -> bool:
    """No live process in the group. Init may reap orphans lazily, so zombies may linger."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    if not os.path.isdir("/proc"):
        return False
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = stat_fields(name)
        if fields and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return False
    return True


async def wait_until(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll a condition another process makes true (no event of ours can tell us); fail the
    test after ``timeout`` seconds."""
    import trio

    with trio.fail_after(timeout):
        while not condition():  # noqa: ASYNC110 - another process changes it
            await trio.sleep(0.02)


def pid_files_written(folder: Path, *names: str) -> bool:
    """Each of the files holds a pid (a command wrote ``echo $! > NAME``)."""
    return all((folder / name).exists() and (folder / name).read_text().strip() for name in names)


def tcp_peer_ports(pid: int) -> set[int]:
    """The remote ports of the TCP connections ``pid`` holds open (listening sockets left
    out), from ``/proc/<pid>/fd`` and ``/proc/net/tcp``/``tcp6``."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
    except OSError:
        return set()
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                # local, remote ("hexaddr:hexport"), state ("0A" = listening), ..., inode
                if fields[9] in inodes and fields[3] != "0A":
                    ports.add(int(fields[2].rsplit(":", 1)[1], 16))
    return ports
