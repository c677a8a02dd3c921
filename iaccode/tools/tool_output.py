"""Tool output too long for the model, kept whole in a file it can read back.

    $IAC_CODE_HOME/tool-output/<session id>/<tool call id>.txt

The model gets the head and the tail, a line saying how much was cut, and the path; read_file
of the session's folder runs without a question (it is ours, see ``permissions.decide``). The
folder goes when its session is deleted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iaccode.tools.base import truncate

log = logging.getLogger(__name__)

FOLDER = "tool-output"
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def output_dir(home: Path, session_id: str) -> Path:
    return home / FOLDER / session_id


def _file_name(call_id: str) -> str:
    """The call id when it is a plain name (it comes from the model), else a hash of it."""
    if _SAFE_ID.fullmatch(call_id):
        return f"{call_id}.txt"
    return f"{hashlib.sha256(call_id.encode()).hexdigest()[:32]}.txt"


def save(folder: Path, call_id: str, text: str) -> Path:
    """Write the whole output (blocking; OSError if it cannot)."""
    from iaccode.private_files import private_dir  # a session opens without it

    private_dir(folder)  # tool output is private, like the histories
    path = folder / _file_name(call_id)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as out:
        out.write(text)
    return path


def shortened(text: str, limit: int, saved: Path | None) -> str:
    """What the model gets: head and tail with the cut marked, and where the rest is."""
    short = truncate(text, limit)
    if saved is None:
        return short
    return (
        f"{short}\n\n[The whole output ({len(text):,} characters) is saved in {saved}; "
        "read it with read_file, using offset and limit.]"
    )


def remove(home: Path, session_id: str) -> None:
    """Remove a session's saved output (blocking; nothing there is fine)."""
    folder = output_dir(home, session_id)
    if os.path.lexists(folder):
        shutil.rmtree(folder, ignore_errors=True)


def copy_for_fork(home: Path, source_id: str, fork_id: str) -> Callable[[Any], Any] | None:
    """Copy the source session's saved output to the fork's folder (blocking; OSError if it
    cannot) and return what rewrites a copied history record so that it names the copies:
    the fork reads them as its own, without a question, and keeps them when the source is
    deleted. None when the source saved nothing."""
    source = Path(os.path.realpath(output_dir(home, source_id)))
    if not source.is_dir():
        return None
    fork = output_dir(home, fork_id)
    shutil.copytree(source, fork, symlinks=True)
    old, new = f"{source}{os.sep}", f"{os.path.realpath(fork)}{os.sep}"

    def renamed(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(old, new)
        if isinstance(value, list):
            return [renamed(item) for item in value]
        if isinstance(value, dict):
            return {key: renamed(item) for key, item in value.items()}
        return value

    return renamed
