"""Folders an agent process keeps under the system's temporary folder while it lives, and the
sweep of those a killed agent left behind.

    /tmp/iaccode-<kind>-<pid>-XXXXXXXX/     0700, the agent's (gates, approved plans)

An agent removes its folders when it exits (``atexit``), which a process killed with SIGKILL,
or by a signal it does not handle, never does: every editor that kills its agent left one gate
folder behind, and the test suites thousands. So the folder's name carries the process id, and
before an agent makes a folder of a kind it removes those of the same kind whose process is
gone. Only folders of this user, not links, are touched; a folder whose process id has been
taken by another live process stays until that one ends too.

Where processes of one user share the folder across PID namespaces (containers with one /tmp),
a process of another namespace looks gone: its gates are swept, and its next command finds
them put back (:meth:`iaccode.gate.folder.GateFolder.restore`) or, mid-command, fails closed
(a gate without its code refuses to run anything).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def process_folder(kind: str, parent: str | None = None) -> Path:
    """A new private folder (0700) of this process for ``kind`` (``gates``, ``plans``); the
    abandoned ones of that kind are swept first. The caller removes it (:func:`remove_folder`)."""
    parent = parent or tempfile.gettempdir()
    sweep_abandoned(kind, parent)
    return Path(tempfile.mkdtemp(prefix=f"iaccode-{kind}-{os.getpid()}-", dir=parent))


def sweep_abandoned(kind: str, parent: str) -> list[Path]:
    """Remove the folders of ``kind`` under ``parent`` whose process is gone; those removed."""
    name = re.compile(rf"iaccode-{re.escape(kind)}-(\d+)-[^/]+")
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError as exc:
        log.info("cannot list %s for abandoned %s folders: %s", parent, kind, exc)
        return []
    for entry in entries:
        found = name.fullmatch(entry.name)
        if found is None or _alive(int(found.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            remove_folder(Path(entry.path))
            removed.append(Path(entry.path))
    if removed:
        log.info("removed %d %s folder(s) of agents that are gone", len(removed), kind)
    return removed


def remove_folder(root: Path) -> None:
    """Remove ``root`` and what it holds, its read-only folders included (a gone folder:
    nothing to do)."""
    for folder, _subfolders, _files in os.walk(root):  # links are not followed
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700, follow_symlinks=False)
    shutil.rmtree(root, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone; a number no process can have
        return False
    except PermissionError:  # another user's
        return True
    return True
