"""The inventory's files, read in a child process: each bounded in size, depth and time.

A repository's files are hostile input to the parsers, and slow ones: python-hcl2 reads some
tens of KB a second (a 1 MiB ``.tf`` takes a minute), and a file nested 100,000 deep makes a
parser recurse until it fails. So the inventory never parses in the agent itself: a child
(``python -m iaccode.iac.reader``, started when a build has files to read, ended with it)
reads one file at a time, and

- size: a file over ``MAX_FILE_BYTES`` is not read (:func:`declarations.read_file`);
- depth: brackets nested over ``parse_error.MAX_DEPTH`` are refused before parsing, and a
  parser's own RecursionError is a ParseError;
- time: a file that takes over ``FILE_SECONDS`` ends the child, which is started again for
  the next file; a crash (a C stack overflow, memory) ends only the child;
- memory: the child's address space is capped (``MEMORY_BYTES``).

What cannot be read comes back as a :class:`Skipped` with the reason, for the inventory's note.
The child answers with JSON: what a file declares, made plain (:func:`plain`), bounded in depth.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from attrs import frozen

from iaccode.iac.declarations import MAX_FILE_BYTES, Reading, read_file
from iaccode.iac.parse_error import TooDeep

log = logging.getLogger(__name__)

FILE_SECONDS = 10.0
"""Longest one file may take to read (the child is ended past it)."""
START_SECONDS = 30.0
"""Longest the child may take to start and import its parsers (a loaded machine)."""
MEMORY_BYTES = 2 * 1024 ** 3
"""The child's address space."""
PLAIN_DEPTH = 64
"""Levels of a file's data that come back from the child (the declarations are near the top)."""


@frozen
class Skipped:
    """A file left out of the inventory, and why ("took over 10 s to read")."""

    why: str


def plain(value: Any, depth: int = PLAIN_DEPTH, _seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as JSON can carry it: mappings with text keys, lists, scalars; anything else
    as text; cycles (YAML aliases) and what lies deeper than ``depth`` as None."""
    if isinstance(value, str | bool | int | float) or value is None:
        return value
    if depth <= 0 or id(value) in _seen:
        return None
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {str(key): plain(item, depth - 1, seen) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, depth - 1, seen) for item in value]
    return str(value)


def _reading(answer: dict[str, Any]) -> Reading:
    data = answer.get("data")
    if answer["kind"] == "template" and isinstance(data, list):
        data = tuple(data)  # (family, document)
    return Reading(tuple(answer["stamp"]), answer["kind"], data, answer.get("error"))


class FileReader:
    """The parent's side: :meth:`read` one file at a time; :meth:`close` when done."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._child: subprocess.Popen[bytes] | None = None

    def read(self, rel: str) -> Reading | Skipped | None:
        """What ``rel`` declares; None when it is gone; Skipped when it cannot be read."""
        try:
            if os.stat(self.root / rel).st_size > MAX_FILE_BYTES:
                return Skipped(f"over {MAX_FILE_BYTES // 1024 ** 2} MiB")
        except OSError:
            return None
        try:
            child = self._start()
        except (OSError, TimeoutError) as exc:
            log.warning("the IaC inventory's reader could not start: %s", exc)
            return Skipped("the reader could not start")
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps({"rel": rel}).encode() + b"\n")
            child.stdin.flush()
            line = _line_within(child.stdout, FILE_SECONDS)
        except (OSError, TimeoutError) as exc:
            self.close()
            if isinstance(exc, TimeoutError):
                return Skipped(f"took over {FILE_SECONDS:g} s to read")
            return Skipped("its reader stopped")
        if not line:  # the child died on this file
            self.close()
            return Skipped("its reader stopped (out of memory or stack)")
        answer = json.loads(line)
        if answer is None:
            return None
        if "skipped" in answer:
            return Skipped(answer["skipped"])
        return _reading(answer)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._child is not None and self._child.poll() is None:
            return self._child
        self._child = None
        child = subprocess.Popen(
            [sys.executable, "-P", "-m", "iaccode.iac.reader", str(self.root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=self.root, env=_child_env(), start_new_session=True)
        self._child = child
        assert child.stdout is not None
        try:
            ready = _line_within(child.stdout, START_SECONDS)
        except TimeoutError:
            self.close()
            raise
        if ready.strip() != b'"ready"':
            self.close()
            raise OSError("the reader did not start")
        return child

    def close(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()


def _child_env() -> dict[str, str]:
    """The child gets what Python needs to find our package, nothing else (no secrets)."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "SYSTEMROOT")
    return {name: os.environ[name] for name in keep if name in os.environ}


def _line_within(stream: IO[bytes], seconds: float) -> bytes:
    """One line from the child, or TimeoutError after ``seconds``."""
    import selectors

    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if selector.select(left):
                return stream.readline()  # the child writes whole lines, one per answer


# --- the child -------------------------------------------------------------------------------


def _serve(root: Path) -> None:
    """Answer one request line at a time until stdin ends."""
    import resource

    with contextlib.suppress(ValueError, OSError):  # not every system lets us lower it
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    import hcl2  # noqa: F401  (the parsers' imports are not counted in a file's time)
    import yaml  # noqa: F401

    out = sys.stdout.buffer
    out.write(b'"ready"\n')
    out.flush()
    for line in sys.stdin.buffer:
        rel = json.loads(line)["rel"]
        try:
            reading = read_file(root, rel)
            answer: Any = None if reading is None else {
                "stamp": list(reading.stamp), "kind": reading.kind,
                "data": plain(reading.data), "error": reading.error}
        except TooDeep as exc:
            answer = {"skipped": exc.message.removesuffix("; not read")}
        except RecursionError:
            answer = {"skipped": "nested too deep to read"}
        except MemoryError:
            answer = {"skipped": "too big to read"}
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
