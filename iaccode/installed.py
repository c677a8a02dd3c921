"""Programs the user installed: what the agent starts on its own comes from PATH, but never
from the project.

The agent starts programs no one asked for: ``git status`` when a session opens, ``terraform``
and ``cfn-lint`` after a write, ``rg`` for a search, an MCP server configured by name
(``command = "npx"``). Found the usual way, a PATH that names a folder relative to where a
program runs (``bin:$PATH``, ``./node_modules/.bin``, an empty entry: the project, when the
program runs there) or one of the project's own folders (direnv's ``PATH_add bin``, a venv
inside it) hands that start to a program the repository ships, with no question. So
:func:`which` looks only in PATH's absolute folders whose real path is outside the folders it
is told to avoid (the session's folder, its repository's root), and gives an absolute path.
The programs it starts get the same PATH and PYTHONPATH (:func:`outside`: ``terraform fmt
-diff`` runs ``diff``; ``PYTHONPATH=src`` makes a Python program import the project's
``yaml.py``), and the agent itself imports nothing from a session's folder
(:func:`forget_imports_from`: its parsers and SDKs are imported on first use, after the
session opened). A command the model runs (bash) keeps the whole environment: it asks first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

_OWN_ROOT = Path(os.path.realpath(__file__)).parents[1]
"""The folder iac-code's package is imported from (an editable install's checkout)."""


def inside(path: str | Path, folders: Iterable[Path]) -> bool:
    """Whether the real path of ``path`` is one of ``folders`` (real paths) or below one."""
    real = Path(os.path.realpath(path))
    return any(real == folder or folder in real.parents for folder in folders)


def which(name: str, avoid: Iterable[Path] = (), path: str | None = None) -> str | None:
    """The absolute path of the program ``name`` in the first absolute folder of ``path``
    (default: ``$PATH``) that is outside every folder of ``avoid``; None when there is none.
    A ``name`` with a slash in it is the caller's own choice: it comes back as it is."""
    if os.sep in name:
        return name
    avoided = [Path(os.path.realpath(folder)) for folder in avoid]
    for entry in (os.environ.get("PATH", "") if path is None else path).split(os.pathsep):
        if not os.path.isabs(entry) or inside(entry, avoided):
            continue
        candidate = os.path.join(entry, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def outside(value: str, avoid: Iterable[Path]) -> str:
    """A PATH-like ``value`` with only its absolute folders outside ``avoid``."""
    avoided = [Path(os.path.realpath(folder)) for folder in avoid]
    return os.pathsep.join(
        entry
        for entry in value.split(os.pathsep)
        if os.path.isabs(entry) and not inside(entry, avoided)
    )


def forget_imports_from(project: Path) -> list[str]:
    """Take the folders inside ``project`` (a real path) out of ``sys.path``: a
    ``PYTHONPATH`` that names the project's ``src`` would have the agent import the
    repository's ``yaml.py`` or ``anthropic/`` the first time it needs its own. The
    interpreter's own folders (a venv inside the project) and iac-code's stay. Returns what
    was taken out."""
    own = [
        Path(os.path.realpath(folder))
        for folder in {sys.prefix, sys.base_prefix, sys.exec_prefix, str(_OWN_ROOT)}
    ]
    kept, dropped = [], []
    for entry in sys.path:
        real = os.path.realpath(entry or os.getcwd())
        if inside(real, [project]) and not inside(real, own):
            dropped.append(entry)
        else:
            kept.append(entry)
    if dropped:
        sys.path[:] = kept
        for entry in dropped:
            sys.path_importer_cache.pop(entry, None)
    return dropped
