"""The ripgrep runner glob and grep share.

``rg`` walks big trees fast and knows .gitignore; where it is missing (or ``USE_RG`` is off)
glob and grep walk in Python instead (:func:`iaccode.host.search.ignore.walk_files`). What rg
prints is read line by line and bounded in memory; a cancelled call kills it. rg runs without
``--follow``, so a symbolic link in the tree leads nowhere.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import trio
from attrs import frozen

from iaccode.host.exception_groups import sole
from iaccode.installed import inside, which

USE_RG = True
"""Use ripgrep when it can be found (tests turn this off to run the Python fallback)."""
_STDERR_BYTES = 64 * 1024
RG_IGNORE_FLAGS = ["--no-require-git", "--no-ignore-parent", "--no-messages"]
""".gitignore files count without a git repo too, and only from the search root down: the
rules above it (up to the work tree's top) are applied afterwards by
:class:`~iaccode.host.search.ignore.GitIgnores`, so a stray .gitignore in a parent folder (a
home directory's, say) never hides the project."""


@functools.cache
def _locate_rg() -> str | None:
    # The ripgrep wheel puts rg beside the interpreter, which may not be on PATH.
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return which("rg")


def find_rg(project: Path | None = None) -> str | None:
    """The ``rg`` binary to run, or None to use the Python fallback: the user's, never one
    from a PATH folder inside ``project`` (:mod:`iaccode.installed`)."""
    found = _locate_rg() if USE_RG else None
    if found is not None and project is not None and inside(found, [project]):
        return which("rg", [project])
    return found


@frozen
class RgRun:
    lines: list[str]
    """Output lines kept (at most ``max_lines + 1``)."""
    returncode: int
    errors: str
    stopped: bool
    """More output was coming: rg was killed once ``max_lines`` were exceeded."""


async def run_rg(
    rg: str, args: list[str], cwd: Path, max_lines: int, keep: Callable[[str], bool] | None = None
) -> RgRun:
    """Run ``rg`` and collect its output lines, bounded in memory: rg is killed once more than
    ``max_lines`` lines are kept. ``keep`` filters lines; it runs in a worker thread (it may
    read files). Raises OSError when rg cannot be started; a cancelled call kills rg.
    """
    try:
        return await _run_rg(rg, args, cwd, max_lines, keep)
    except BaseExceptionGroup as group:
        # Our nursery wraps the one interesting exception in a group: a cancellation, or a
        # failure to start rg. Hand it on bare.
        for kind in (trio.Cancelled, OSError):
            if (bare := sole(group, kind)) is not None:
                raise bare from None
        raise


async def _kill(process: trio.Process) -> None:
    process.kill()


async def _run_rg(
    rg: str, args: list[str], cwd: Path, max_lines: int, keep: Callable[[str], bool] | None
) -> RgRun:
    lines: list[str] = []
    errors = bytearray()
    stopped = False

    async def drain(stream: trio.abc.ReceiveStream) -> None:
        async with stream:
            async for chunk in stream:
                errors.extend(chunk[: max(0, _STDERR_BYTES - len(errors))])

    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                [rg, *args],
                cwd=str(cwd),
                check=False,
                deliver_cancel=_kill,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
        assert process.stdout is not None and process.stderr is not None
        nursery.start_soon(drain, process.stderr)
        pending = bytearray()
        async with process.stdout:
            async for chunk in process.stdout:
                pending.extend(chunk)
                *complete, rest = pending.split(b"\n")
                pending = bytearray(rest)
                lines += await _filter(complete, keep)
                if len(lines) > max_lines:
                    stopped = True
                    process.kill()
                    break
            if pending and not stopped:
                lines += await _filter([bytes(pending)], keep)
    returncode = process.returncode if process.returncode is not None else -1
    return RgRun(lines[: max_lines + 1], returncode, errors.decode("utf-8", "replace"), stopped)


async def _filter(
    raw: list[bytearray] | list[bytes], keep: Callable[[str], bool] | None
) -> list[str]:
    lines = [line.decode("utf-8", "replace") for line in raw]
    if keep is None or not lines:
        return lines
    return await trio.to_thread.run_sync(lambda: [line for line in lines if keep(line)])
