"""The agent's folder of gates: one executable per infrastructure CLI, first on every command's
PATH, and the channels' sockets beside them.

    /tmp/iaccode-gates-<pid>-XXXXXX/  0500, made once per agent process, removed at exit
                                      (or by the next agent, if this one was killed:
                                      :mod:`iaccode.host.scratch`)
      bin/terraform, bin/kubectl ...  the gate program (:mod:`iaccode.gate.shim`), one each (0500)
      shim.code                       the shim, compiled (0400)
      run/c1.sock, run/c2.sock ...    one Unix socket per running bash call (run/ is 0700)

A short path under the system's temporary folder rather than under ``$IAC_CODE_HOME``: a Unix
socket's path may hold at most 107 bytes (``/tmp`` when ``$TMPDIR`` is too long for them).
Each gate is ``#!<this interpreter> -IS`` (isolated, no site: it starts in a few milliseconds
and nothing in the project can change what it runs), the name of its CLI, and the shim's
source; where the interpreter's path cannot stand in a ``#!`` line (a space in it, or too
long) a ``/bin/sh`` line runs it instead.

The real program behind a gate is looked up on the PATH the command had, passing over this
folder and any other gate (a file with the shim's mark: a copy, another agent's folder).

The gates are the user's files, so a command can remove or rewrite them (read-only, they need
a ``chmod`` first; root needs none): the text reader asks when a line names them
(:mod:`iaccode.iac.guard`), and :meth:`GateFolder.restore` puts them back before each call and
says whether they had been changed.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import marshal
import os
import sys
import tempfile
import threading
from pathlib import Path

from iaccode.gate import gates_first, shim
from iaccode.host.scratch import process_folder, remove_folder
from iaccode.iac.clis import GATED

log = logging.getLogger(__name__)

SOCKET_PATH_MAX = 107
"""Longest path of a Unix socket (``sun_path`` holds 108 bytes with its NUL)."""
SOCKET_PATH_ROOM = len("/iaccode-gates-4194304-abcdefgh/run/c999999.sock")
"""What the folder's name and a socket in it add to the parent's path, at most."""

SHEBANG_MAX = 200
"""Longest interpreter path put in a ``#!`` line (Linux reads up to 255 bytes of it)."""


class GateFolder:
    """The gates of this agent process (:func:`gate_folder`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.run = root / "run"
        self._sockets = itertools.count(1)
        self._written: dict[Path, bytes] = {}

    @classmethod
    def create(cls, parent: str | None = None) -> GateFolder:
        parent = parent or tempfile.gettempdir()
        if len(os.fsencode(parent)) + SOCKET_PATH_ROOM > SOCKET_PATH_MAX:
            parent = "/tmp"
        root = process_folder("gates", parent)
        folder = cls(root)
        folder.run.mkdir(mode=0o700)
        source = Path(shim.__file__).read_text(encoding="utf-8")
        # Compiled once here: a script run by path is compiled at every start (milliseconds).
        code = root / "shim.code"
        folder._written[code] = marshal.dumps(compile(source, shim.__file__, "exec"))
        for name in sorted(GATED):
            folder._written[folder.bin / name] = _gate_text(name, code).encode()
        folder.restore()
        return folder

    def restore(self) -> bool:
        """Put back every gate a command removed or changed (and the folders' modes); whether
        anything had to be."""
        changed = False
        for path, data in self._written.items():
            try:
                intact = path.read_bytes() == data and os.access(path, os.X_OK) == (
                    path.parent == self.bin
                )
            except OSError:
                intact = False
            if not intact:
                changed = True
                self._writable(path.parent)
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                path.write_bytes(data)
                path.chmod(0o500 if path.parent == self.bin else 0o400)
        for folder in (self.bin, self.root):
            if folder.stat().st_mode & 0o777 != 0o500:
                folder.chmod(0o500)
        return changed

    def _writable(self, folder: Path) -> None:
        if not folder.exists():
            self._writable(folder.parent)
            folder.mkdir(mode=0o700)
        else:
            folder.chmod(0o700)

    def new_socket(self) -> Path:
        if not self.run.is_dir():  # removed by a command: made again (our socket goes there)
            self._writable(self.root)
            self.run.mkdir(mode=0o700, exist_ok=True)
            self.root.chmod(0o500)
        return self.run / f"c{next(self._sockets)}.sock"

    def remove(self) -> None:
        remove_folder(self.root)

    def path_for_commands(self, path: str) -> str:
        """``path`` with the gates first (and not again further on)."""
        return gates_first(path, str(self.bin))

    def real_program(self, cli: str, path: str) -> str | None:
        """The program ``cli`` names on ``path``, past every gate; None: not installed."""
        for folder in path.split(os.pathsep):
            if not folder or folder == str(self.bin):
                continue
            candidate = os.path.join(folder, cli)
            if (
                os.path.isfile(candidate)
                and os.access(candidate, os.X_OK)
                and not is_gate(candidate)
            ):
                return candidate
        return None


def is_gate(path: str) -> bool:
    """Whether the file at ``path`` is a gate (ours, a copy, another agent's)."""
    try:
        with open(path, "rb") as file:
            head = file.read(512)
    except OSError:
        return False
    return shim.MARK.encode() in head


_RUN = """try:
    _code = open({code!r}, "rb").read()
except OSError:
    import posix
    posix.write(2, b"iac-code gate: " + CLI.encode() + b" was not run: its agent is gone\\n")
    raise SystemExit(126) from None
import marshal
exec(marshal.loads(_code))
"""


def _gate_text(cli: str, code: Path) -> str:
    python = sys.executable or "/usr/bin/python3"
    body = f"# {shim.MARK} for {cli}: see iaccode/gate/shim.py\nCLI = {cli!r}\n" + _RUN.format(
        code=str(code)
    )
    if " " in python or len(python) > SHEBANG_MAX or "\n" in python:
        # The shell reads the file up to "exec"; Python reads it whole (the first lines are a
        # string it evaluates and drops).
        quoted = "'" + python.replace("'", "'\\''") + "'"
        return f'#!/bin/sh\n"""": \nexec {quoted} -IS "$0" "$@"\n"""\n{body}'
    return f"#!{python} -IS\n{body}"


_lock = threading.Lock()
_folder: GateFolder | None = None


def gate_folder() -> GateFolder:
    """This process's folder of gates, made on first use and removed when the process exits."""
    global _folder
    with _lock:
        if _folder is None:
            _folder = GateFolder.create()
            atexit.register(_folder.remove)
            log.info("gates for %d CLIs in %s", len(GATED), _folder.bin)
        return _folder
