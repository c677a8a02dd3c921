"""Files and folders only their owner may read: ``$IAC_CODE_HOME`` and everything in it (the
config, sessions, saved tool output, the log) and the transcripts ``--record`` writes.

They hold what the user and the model said, what commands printed and the project's files, so
they are created 0600 (files) and 0700 (folders), whatever the umask, and a file of ours found
readable by others (an older version's log, a transcript written over) is made private again.
A folder that existed before is left as it is, except the home itself (:func:`private_home`):
it is ours, and another user must not list the sessions in it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """``path`` as a folder, each missing part of it created 0700; returns it."""
    missing = []
    here = path
    while not here.exists() and here.parent != here:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made meanwhile (another agent): theirs is as good
            pass
        else:
            os.chmod(folder, DIR_MODE)  # mkdir's mode goes through the umask
    path.mkdir(mode=DIR_MODE, exist_ok=True)  # FileExistsError when it is not a folder
    return path


def private_home(home: Path) -> None:
    """Create the data dir 0700, or make it 0700 when it is ours and others can read it (not a
    shared folder: a sticky one, like /tmp, is left alone). Raises OSError (a read-only disk):
    the caller goes on without."""
    private_dir(home)
    info = home.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o077 and not info.st_mode & stat.S_ISVTX:
        os.chmod(home, DIR_MODE)


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of ``path`` created 0600 (``flags`` without ``O_CREAT``); an existing regular
    file of ours readable by others becomes 0600."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        info = os.fstat(fd)
        # A regular file only: a log pointed at /dev/null or /dev/full is not ours to change.
        if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077 and info.st_uid == os.geteuid():
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd
