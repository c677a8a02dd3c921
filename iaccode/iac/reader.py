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
- memory: the child's address space is capped (``MEMORY_BYTES``);
- expansion: what a file's data comes to (YAML aliases repeat one node any number of times:
  a "billion laughs" of 2 KB is 200 MB of text) is bounded by its size
  (:func:`plain`: ``EXPANSION`` times it), and the agent reads at most ``MAX_ANSWER_BYTES`` of
  an answer, within the file's time: a file bigger in memory than on disk is left out.

What cannot be read comes back as a :class:`Skipped` with the reason, for the inventory's note.
The child answers with JSON: what a file declares, made plain (:func:`plain`), bounded in depth.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from attrs import frozen

from iaccode.iac.declarations import MAX_FILE_BYTES, Reading, read_file
from iaccode.iac.parse_error import TooDeep
from iaccode.installed import outside

log = logging.getLogger(__name__)

FILE_SECONDS = 10.0
"""Longest one file may take to read (the child is ended past it)."""
START_SECONDS = 30.0
"""Longest the child may take to start and import its parsers (a loaded machine)."""
MEMORY_BYTES = 2 * 1024**3
"""The child's address space."""
PLAIN_DEPTH = 64
"""Levels of a file's data that come back from the child (the declarations are near the top)."""
EXPANSION = 8
"""A file's data may come to this many times its size (in characters and values)..."""
MIN_EXPANSION_ROOM = 64 * 1024
"""... or to this much, for a small file."""
MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""Longest answer the agent reads from the child (a line of JSON)."""


class TooBig(Exception):
    """A file's data expands past its room (:func:`plain`)."""


@frozen
class Skipped:
    """A file left out of the inventory, and why ("took over 10 s to read")."""

    why: str


def plain(value: Any, room: int | None = None, depth: int = PLAIN_DEPTH) -> Any:
    """``value`` as JSON can carry it: mappings with text keys, lists, scalars; anything else
    as text; cycles (YAML aliases) and what lies deeper than ``depth`` as None. Raises TooBig
    when it comes to more than ``room`` (characters of text, and one for each value): the
    same node reached through many aliases counts each time, as JSON would repeat it."""
    left = [math.inf if room is None else room]

    def spend(amount: int) -> None:
        left[0] -= amount
        if left[0] < 0:
            raise TooBig

    def walk(item: Any, depth: int, seen: frozenset[int]) -> Any:
        spend(1)
        if isinstance(item, str):
            spend(len(item))
            return item
        if isinstance(item, bool | int | float) or item is None:
            return item
        if depth <= 0 or id(item) in seen:
            return None
        inner = seen | {id(item)}
        if isinstance(item, dict):
            out = {}
            for key, entry in item.items():
                spend(len(text := str(key)))
                out[text] = walk(entry, depth - 1, inner)
            return out
        if isinstance(item, list | tuple):
            return [walk(entry, depth - 1, inner) for entry in item]
        return walk(str(item), depth, seen)

    return walk(value, depth, frozenset())


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
                return Skipped(f"over {MAX_FILE_BYTES // 1024**2} MiB")
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
            line = _line_within(child.stdout, FILE_SECONDS, MAX_ANSWER_BYTES)
        except (OSError, TimeoutError, TooBig) as exc:
            self.close()
            if isinstance(exc, TimeoutError):
                return Skipped(f"took over {FILE_SECONDS:g} s to read")
            if isinstance(exc, TooBig):
                return Skipped(f"what it holds comes to over {MAX_ANSWER_BYTES // 1024**2} MiB")
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
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.root,
            env=_child_env(self.root),
            start_new_session=True,
        )
        self._child = child
        assert child.stdout is not None
        try:
            ready = _line_within(child.stdout, START_SECONDS, 1024)
        except (TimeoutError, TooBig):
            self.close()
            raise TimeoutError from None
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


def _child_env(root: Path) -> dict[str, str]:
    """The child gets what Python needs to find our package, nothing else (no secrets), and
    no PATH or PYTHONPATH folder in the project (``PYTHONPATH=src``, run in the project,
    would import its ``yaml.py``: iaccode/installed.py)."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "SYSTEMROOT")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    for name in ("PATH", "PYTHONPATH"):
        if name in env:
            env[name] = outside(env[name], [root])
    return env


def _line_within(stream: IO[bytes], seconds: float, limit: int) -> bytes:
    """One line from the child (b"" when it ended first), whole within ``seconds``
    (TimeoutError) and at most ``limit`` bytes long (TooBig). Read from the descriptor
    itself, never through the stream's buffer: the child writes one line per request."""
    import selectors

    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if not selector.select(left):
                continue
            chunk = os.read(stream.fileno(), 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if chunk.endswith(b"\n"):
                return b"".join(chunks)
            if size > limit:
                raise TooBig


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
            room = (
                None if reading is None else max(MIN_EXPANSION_ROOM, EXPANSION * reading.stamp[1])
            )
            answer: Any = (
                None
                if reading is None
                else {
                    "stamp": list(reading.stamp),
                    "kind": reading.kind,
                    "data": plain(reading.data, room),
                    "error": reading.error,
                }
            )
        except TooBig:
            answer = {
                "skipped": f"its data expands to over {EXPANSION} times its size (YAML aliases)"
            }
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
