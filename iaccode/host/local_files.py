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

Paths given here are real paths (:func:`~iaccode.tools.base.resolve_path`), the very ones the
permission check judged, and they are opened without following a symbolic link anywhere: from
``/``, one folder at a time, each opened with ``O_NOFOLLOW`` relative to the descriptor of the
one before (missing folders of a write are made the same way), then the file itself with
``O_NOFOLLOW``. A link met on the way means the path changed after it was checked (a folder or
the file swapped for a symlink that may lead out of the project): the call is refused ("changed
while being opened"), never carried out somewhere else. A write keeps the folder's descriptor:
its temporary file is created in it and renamed within it (``dir_fd``), so swapping the folder
afterwards cannot redirect the write either.

Disk work runs in worker threads, never on the trio loop.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

import trio

from iaccode.tool_result import ToolFailure

BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary."""
WRITE_CHUNK_BYTES = 1024 * 1024
"""Bytes written per worker-thread call: a cancelled write stops between chunks."""
_READ_CHUNK = 1024 * 1024


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it; both real paths, compared by components."""
    return path == root or root in path.parents


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


_DIR_FLAGS = (
    os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
)  # O_PATH: search permission is enough
"""How each folder on the way to a file is opened: never through a symbolic link."""


def changed(path: Path, verb: str) -> ToolFailure:
    return ToolFailure(
        f"Cannot {verb} {path}: it changed while being opened (part of the path "
        "is now a symbolic link, which may lead somewhere that was not checked): "
        "refused."
    )


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_dir_at(dir_fd: int, name: str, path: Path, verb: str, create: bool) -> int:
    try:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=dir_fd)
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(name, dir_fd):
            raise changed(path, verb) from exc
        raise


def open_parent(path: Path, verb: str, create: bool = False) -> int:
    """A descriptor of the folder holding the real path ``path``, reached from ``/`` without
    following a symbolic link (a link on the way: :func:`changed`); ``create`` makes missing
    folders. Raises OSError as opening would (FileNotFoundError, NotADirectoryError, ...)."""
    if not path.is_absolute():
        raise ValueError(f"not an absolute path: {path}")
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in path.parent.parts[1:]:
            inner = _open_dir_at(fd, name, path, verb, create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_verified(
    path: Path, flags: int, verb: str, check: Callable[[os.stat_result], None] | None = None
) -> int:
    """Open the real path ``path`` with ``flags`` following no symbolic link on the way (see
    the module's docstring). ``check`` sees the entry's ``lstat`` before it is opened (to
    refuse FIFOs and devices unopened); a link there is refused as :func:`changed`."""
    if not path.name:  # the root folder itself
        return os.open(path, flags | os.O_CLOEXEC)
    parent = open_parent(path, verb)
    try:
        if check is not None:
            st = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise changed(path, verb)
            check(st)
        try:
            return os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except OSError as exc:
            if _is_link(path.name, parent):
                raise changed(path, verb) from exc
            raise
    finally:
        os.close(parent)


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
                "sed -n)."
            )

    async def read_bytes(self, path: Path) -> bytes:
        """The file's bytes (any content), with the same refusals as text but binary."""
        return await trio.to_thread.run_sync(self._read_bytes, path, abandon_on_cancel=True)

    def _read_bytes(self, path: Path) -> bytes:
        try:
            flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
            fd = open_verified(path, flags, "read", lambda st: self._check(st, path))
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
            raise ToolFailure(
                f"Cannot read {path}: it grew past the {self.max_bytes:,} byte "
                "limit while being read."
            )
        return b"".join(chunks)

    def _read(self, path: Path) -> str:
        data = self._read_bytes(path)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise ToolFailure(f"Cannot read {path}: it is a binary file (it contains NUL bytes).")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolFailure(
                f"Cannot read {path}: it is not UTF-8 text (invalid byte at "
                f"offset {exc.start}); it may be binary or in another "
                "encoding."
            ) from exc

    async def write_text(self, path: Path, text: str) -> None:
        data = text.encode("utf-8")
        folder, fd, temp = await trio.to_thread.run_sync(_open_temp, path)
        try:
            try:
                view = memoryview(data)
                for start in range(0, len(data), WRITE_CHUNK_BYTES):
                    await trio.to_thread.run_sync(
                        _write_all, fd, view[start : start + WRITE_CHUNK_BYTES]
                    )
                await trio.to_thread.run_sync(os.fsync, fd)
            finally:
                os.close(fd)
            await trio.to_thread.run_sync(_commit, folder, temp, path.name)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            if isinstance(exc, OSError):
                raise _os_failure(exc, path, "write") from exc
            raise
        finally:
            os.close(folder)


def make_parents(path: Path) -> None:
    """Make the missing folders of the real path ``path``, as a write here would, following no
    symbolic link on the way (for a write the editor does: it may not make them). Blocking."""
    os.close(_open_folder(path))


def _open_folder(path: Path) -> int:
    """The descriptor of the real path's folder, made if missing; ToolFailure if it cannot."""
    try:
        return open_parent(path, "write", create=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ToolFailure(
            f"Cannot write {path}: a parent of it is a file, not a directory."
        ) from exc
    except OSError as exc:
        raise _os_failure(exc, path, "write") from exc


def _open_temp(path: Path) -> tuple[int, int, str]:
    """The descriptor of the real path's folder (made if missing), and a new empty temporary
    file in it (descriptor and name)."""
    if not path.name:
        raise ToolFailure(f"Cannot write {path}: it {_kind_refusal(stat.S_IFDIR)}.")
    folder = _open_folder(path)
    try:
        try:
            existing: os.stat_result | None = os.stat(
                path.name, dir_fd=folder, follow_symlinks=False
            )
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            raise changed(path, "write")
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise ToolFailure(f"Cannot write {path}: it {_kind_refusal(existing.st_mode)}.")
        temp = f".{path.name}.{secrets.token_hex(6)}.tmp"
        # 0o666 less the umask, as a new file would get; an existing file's mode is kept.
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666,
            dir_fd=folder,
        )
    except OSError as exc:
        os.close(folder)
        raise _os_failure(exc, path, "write") from exc
    except BaseException:
        os.close(folder)
        raise
    if existing is not None:
        try:
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            os.close(folder)
            raise _os_failure(exc, path, "write") from exc
    return folder, fd, temp


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _commit(folder: int, temp: str, name: str) -> None:
    """Rename ``temp`` over ``name``, both in the folder ``folder`` was opened on (a link put
    at ``name`` meanwhile is replaced, never followed)."""
    os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    with contextlib.suppress(OSError):  # make the rename itself durable, where supported
        dir_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def join_display(prefix: str, rel: str) -> str:
    """A path under a folder shown as ``prefix`` (``.`` for the project directory)."""
    if prefix == ".":
        return rel
    return prefix.rstrip("/") + "/" + rel
