"""Text files on the local disk: the :class:`FileAccess` the tools use when the editor does not
serve ``fs/*`` (and the fallback for what it cannot).

Reading refuses what is not a plain text file before it reads a byte of it: directories,
FIFOs, sockets and devices (so a FIFO can never block and ``/dev/zero`` is never read), files
over the size limit, and binary files (a NUL byte near the start, or not UTF-8). The file is
opened with ``O_NONBLOCK`` and checked again on the open descriptor, so a FIFO swapped in
between the check and the open cannot block either.

Writing is atomic: the text goes to a temporary file beside the target, is flushed to disk and
then renamed over the target, keeping the old file's permission bits. A write that fails or is
cancelled removes its temporary file and leaves the old file as it was.

Disk work runs in worker threads, never on the trio loop.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

import trio

from iaccode.tools.base import ToolFailure, is_inside

BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary."""
WRITE_CHUNK_BYTES = 1024 * 1024
"""Bytes written per worker-thread call: a cancelled write stops between chunks."""
_READ_CHUNK = 1024 * 1024


def display_path(path: Path, cwd: Path) -> str:
    """``path`` as the model should see it: relative to ``cwd`` when inside it, else absolute."""
    if is_inside(path, cwd):
        return os.path.relpath(path, cwd)
    return str(path)


def _kind_refusal(mode: int) -> str | None:
    """Why a file of this ``st_mode`` cannot be read as text, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory (use list_files to see what is in it)"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    return "is not a regular file"


def _os_failure(exc: OSError, path: Path, verb: str) -> ToolFailure:
    if verb == "read" and isinstance(exc, FileNotFoundError | NotADirectoryError):
        return ToolFailure(f"File not found: {path}")
    if isinstance(exc, PermissionError):
        return ToolFailure(f"Cannot {verb} {path}: permission denied.")
    return ToolFailure(f"Cannot {verb} {path}: {exc.strerror or exc}.")


class LocalFiles:
    """:class:`FileAccess` on the local disk."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    async def read_text(self, path: Path) -> str:
        # Reading changes nothing, so a cancelled read may leave its (bounded) thread behind.
        return await trio.to_thread.run_sync(self._read, path, abandon_on_cancel=True)

    def _check(self, st: os.stat_result, path: Path) -> None:
        refusal = _kind_refusal(st.st_mode)
        if refusal is not None:
            raise ToolFailure(f"Cannot read {path}: it {refusal}.")
        if st.st_size > self.max_bytes:
            raise ToolFailure(
                f"Cannot read {path}: it is {st.st_size:,} bytes, over the {self.max_bytes:,} "
                "byte limit. Search it with grep, or read parts of it with bash (head, tail, "
                "sed -n).")

    def _read(self, path: Path) -> str:
        try:
            self._check(os.stat(path), path)
            flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
            fd = os.open(path, flags)
        except OSError as exc:
            raise _os_failure(exc, path, "read") from exc
        try:
            self._check(os.fstat(fd), path)  # the file opened may not be the one checked
            chunks: list[bytes] = []
            size = 0
            while size <= self.max_bytes:
                chunk = os.read(fd, min(_READ_CHUNK, self.max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            raise _os_failure(exc, path, "read") from exc
        finally:
            os.close(fd)
        if size > self.max_bytes:
            raise ToolFailure(f"Cannot read {path}: it grew past the {self.max_bytes:,} byte "
                              "limit while being read.")
        data = b"".join(chunks)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise ToolFailure(f"Cannot read {path}: it is a binary file (it contains NUL bytes).")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolFailure(f"Cannot read {path}: it is not UTF-8 text (invalid byte at "
                              f"offset {exc.start}); it may be binary or in another "
                              "encoding.") from exc

    async def write_text(self, path: Path, text: str) -> None:
        data = text.encode("utf-8")
        target, fd, temp = await trio.to_thread.run_sync(_open_temp, path)
        try:
            try:
                view = memoryview(data)
                for start in range(0, len(data), WRITE_CHUNK_BYTES):
                    await trio.to_thread.run_sync(_write_all, fd,
                                                  view[start:start + WRITE_CHUNK_BYTES])
                await trio.to_thread.run_sync(os.fsync, fd)
            finally:
                os.close(fd)
            await trio.to_thread.run_sync(_commit, temp, target)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, OSError):
                raise _os_failure(exc, path, "write") from exc
            raise


def _open_temp(path: Path) -> tuple[Path, int, Path]:
    """The real target, and a new empty temporary file beside it (descriptor and path)."""
    target = Path(os.path.realpath(path))  # writing through a symlink writes its target
    try:
        existing: os.stat_result | None = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        existing = None
    except OSError as exc:
        raise _os_failure(exc, path, "write") from exc
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise ToolFailure(f"Cannot write {path}: it {_kind_refusal(existing.st_mode)}.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ToolFailure(f"Cannot write {path}: a parent of it is a file, not a "
                          "directory.") from exc
    except OSError as exc:
        raise _os_failure(exc, path, "write") from exc
    temp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    try:
        # 0o666 less the umask, as a new file would get; an existing file's mode is kept.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise _os_failure(exc, path, "write") from exc
    if existing is not None:
        try:
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise _os_failure(exc, path, "write") from exc
    return target, fd, temp


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _commit(temp: Path, target: Path) -> None:
    os.replace(temp, target)
    with contextlib.suppress(OSError):  # make the rename itself durable, where supported
        dir_fd = os.open(target.parent, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
