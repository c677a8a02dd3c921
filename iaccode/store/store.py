"""The session store: one folder per session, an append-only history, a process lock.

Layout (``docs/session-store.md`` has the full format)::

    <root>/<session_id>/meta.json       rewritten atomically on every change (meta.py)
    <root>/<session_id>/history.jsonl   one JSON object per line, appended
    <root>/<session_id>/lock            flock()ed while a process has the session open
    <root>/index.sqlite3                a disposable listing cache (listing.py)

Durability. ``append`` hands each record to the OS with one ``write`` before it returns, so a
crash of the process (``kill -9``, an unhandled error) loses nothing that was appended. It does
not fsync: an fsync costs milliseconds to tens of milliseconds per call on ordinary disks, a
turn appends many records, and what an fsync adds is survival of a power loss or kernel crash,
which can at worst lose the last few seconds of history and leave a torn last line, which the
next open repairs. ``close`` fsyncs once. ``meta.json`` and session creation are fsynced, since
they are rare and a torn meta would make the whole session unreadable.

Repair. A history whose last line is incomplete or unparsable (a crash mid-append) loads
without that line; ``open`` also truncates the file back to the end of the last good line so
the next append starts on a clean line. An unparsable line in the middle is skipped with a
warning and the rest is kept. When an append fails (disk full, permissions), the file is cut
back to its last good length right away or, if that fails too, before the next append.

Locking. ``open``, ``create`` and ``fork`` take ``fcntl.flock(LOCK_EX | LOCK_NB)`` on the
session's ``lock`` file and keep it until ``close``. flock locks belong to the open file, so a
second open in the same process is refused as well, and the kernel drops them when the process
dies, ``kill -9`` included: a crashed agent never leaves a session locked. The lock descriptor
is close-on-exec, so commands the agent runs do not inherit it. The pid written into ``lock``
is only there to name the holder in the error message.

Creation and deletion are atomic renames: a new session is assembled in a hidden
``.creating-*`` folder and renamed into place (two fsyncs: ``meta.json``'s data before the
rename, the root folder after it; a fork's history too. The hidden folder's own entries need
no fsync of their own: journaling filesystems (ext4, xfs) commit every earlier metadata change
with the root's fsync); a deleted one is renamed to a hidden
``.deleting-*`` folder and removed from there. Leftovers of a crash in between are swept
(once per store, when ten minutes old and unlocked) by the next ``create`` or ``delete``.

Session ids are checked against :data:`SESSION_ID_PATTERN` before any path is built, so an id
from a client can never name anything outside the root.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import fcntl
import gc
import hashlib
import io
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from iaccode.store.meta import (
    FORMAT_VERSION,
    SESSION_ID_PATTERN,
    FormatTooNew,
    SessionLocked,
    SessionMeta,
    SessionNotFound,
    StoreError,
    fsync_dir,
    is_valid_session_id,
    meta_bytes,
    new_session_id,
    os_error_text,
    read_meta,
    utc_now,
    write_json_atomic,
    write_meta_file,
)

if TYPE_CHECKING:
    from iaccode.store.listing import SessionListing

__all__ = [  # the whole API, also importable from here
    "FORMAT_VERSION",
    "SESSION_ID_PATTERN",
    "FormatTooNew",
    "SessionFile",
    "SessionLocked",
    "SessionMeta",
    "SessionNotFound",
    "SessionStore",
    "StoreError",
    "is_valid_session_id",
    "new_session_id",
    "utc_now",
]

log = logging.getLogger(__name__)

META = "meta.json"
HISTORY = "history.jsonl"
LOCK = "lock"
IMAGES = "images"
"""Large images of the history, one file each, named by the SHA-256 of their bytes."""
_IMAGE_NAME = re.compile(r"images/[0-9a-f]{64}\.(?:png|jpg|gif|webp)")

Record = dict[str, Any]

SWEEP_AGE = 600.0
"""Seconds before a hidden ``.creating-*`` / ``.deleting-*`` folder counts as a leftover."""

_CREATING = ".creating-"
_DELETING = ".deleting-"


class SessionStore:
    """All sessions under one root folder (``$IAC_CODE_HOME/sessions``), created on first use.

    Every method checks the session id first and raises :class:`SessionNotFound` for one that
    is not of the form :func:`new_session_id` makes. Methods are synchronous and may block on
    the disk: call them from a worker thread in async code.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._listing: SessionListing | None = None
        """Made by the first ``list`` (sqlite3 is not imported to open a session)."""
        self._swept = False

    # -- opening -------------------------------------------------------------------------------

    def create(self, meta: SessionMeta) -> SessionFile:
        """Create the session ``meta.session_id`` with an empty history and open it (locked).
        SessionLocked if a session with that id exists and is open elsewhere, StoreError if it
        exists or cannot be created."""
        return self._create(meta, b"")

    def open(self, session_id: str) -> tuple[SessionFile, SessionMeta, builtins.list[Record]]:
        """Open a session for appending: take its lock, load its meta and every valid record,
        and repair a torn tail. SessionNotFound, SessionLocked, FormatTooNew, StoreError."""
        folder = self._folder(session_id)
        if not folder.is_dir():
            raise SessionNotFound(f"no session {session_id}")
        lock_fd = _lock(folder, session_id)
        try:
            meta = read_meta(folder, session_id)
            _remove_temp_files(folder)
            history, records, good_end = _open_history(folder, session_id)
        except BaseException:
            _unlock(lock_fd)
            raise
        return SessionFile(session_id, folder, lock_fd, history, good_end), meta, records

    def read(self, session_id: str) -> tuple[SessionMeta, builtins.list[Record]]:
        """Meta and records of a session without locking it (it may be open elsewhere and
        growing): complete lines only. SessionNotFound, FormatTooNew, StoreError."""
        folder = self._folder(session_id)
        meta = read_meta(folder, session_id)
        try:
            data = (folder / HISTORY).read_bytes()
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise StoreError(
                f"cannot read the history of session {session_id}: {os_error_text(exc)}"
            ) from None
        records, _ = parse_history(data, folder / HISTORY)
        return meta, records

    def fork(
        self,
        source_id: str,
        new_meta: SessionMeta,
        edit: Callable[[Record], Record] | None = None,
    ) -> tuple[SessionFile, builtins.list[Record]]:
        """A new session ``new_meta.session_id`` holding a copy of the source's complete
        records (each passed through ``edit`` when given), opened (locked). The source may be
        open and growing, here or in another process; it is not locked or changed. The two are
        independent afterwards."""
        self._folder(source_id)
        self._folder(new_meta.session_id)
        _, records = self.read(source_id)
        if edit is not None:
            records = [edit(record) for record in records]
        data = b"".join(encode_record(record) for record in records)
        file = self._create(new_meta, data)
        images = self._folder(source_id) / IMAGES
        if images.is_dir():
            try:
                shutil.copytree(images, file.folder / IMAGES, dirs_exist_ok=True)
            except OSError as exc:
                log.warning("fork of %s: images not copied: %s", source_id, exc)
        return file, records

    # -- the rest ------------------------------------------------------------------------------

    def list(
        self, *, cwd: str | None, cursor: str | None, limit: int = 50
    ) -> tuple[builtins.list[SessionMeta], str | None]:
        """Sessions, most recently updated first, only those whose ``cwd`` equals ``cwd`` when
        given. Returns a page of at most ``limit`` and the cursor of the next page (None after
        the last). StoreError for a cursor we did not make. Unreadable sessions are skipped."""
        if self._listing is None:
            from iaccode.store.listing import SessionListing

            self._listing = SessionListing(self.root)
        return self._listing.list_page(cwd=cwd, cursor=cursor, limit=limit)

    def delete(self, session_id: str) -> bool:
        """Remove a session; True if there was one. SessionLocked if any process, this one
        included, has it open (close it first)."""
        folder = self._folder(session_id)
        if not os.path.lexists(folder):
            return False
        try:
            lock_fd = _lock(folder, session_id)
        except SessionNotFound:
            return False
        try:
            self._sweep_once()
            tomb = self.root / f"{_DELETING}{session_id}-{uuid.uuid4().hex[:8]}"
            try:
                os.rename(folder, tomb)
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise StoreError(
                    f"cannot delete session {session_id}: {os_error_text(exc)}"
                ) from None
            _fsync_dir_quietly(self.root)
            shutil.rmtree(tomb, ignore_errors=True)
            if os.path.lexists(tomb):
                log.warning("session %s deleted, but %s could not be removed", session_id, tomb)
            return True
        finally:
            _unlock(lock_fd)

    def exists(self, session_id: str) -> bool:
        """True if the session exists (SessionNotFound for an invalid id, like every method)."""
        return (self._folder(session_id) / META).is_file()

    # -- internals -----------------------------------------------------------------------------

    def _folder(self, session_id: str) -> Path:
        if not is_valid_session_id(session_id):
            shown = repr(session_id) if len(str(session_id)) <= 80 else "(an invalid id)"
            raise SessionNotFound(f"no session {shown}")
        return self.root / session_id

    def _create(self, meta: SessionMeta, history: bytes) -> SessionFile:
        session_id = meta.session_id
        folder = self._folder(session_id)
        from iaccode.private_files import private_dir  # with the first session made, off the loop

        try:
            private_dir(self.root)  # the home too, when it is missing: 0700 both
        except OSError as exc:
            raise StoreError(
                f"cannot create the session folder {self.root}: {os_error_text(exc)}"
            ) from None
        self._sweep_once()
        if os.path.lexists(folder):
            raise _exists_error(folder, session_id)
        temp = self.root / f"{_CREATING}{session_id}-{uuid.uuid4().hex[:8]}"
        lock_fd: int | None = None
        file: io.FileIO | None = None
        try:
            temp.mkdir(mode=0o700)
            lock_fd = os.open(temp / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_pid(lock_fd)
            fd = os.open(temp / HISTORY, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            file = io.FileIO(fd, "a", closefd=True)
            if history:
                _write_all(file, history)
                os.fsync(file.fileno())
            _write_new_file(temp / META, meta_bytes(meta))
            if os.path.lexists(folder):
                raise _exists_error(folder, session_id)
            try:
                os.rename(temp, folder)
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    raise _exists_error(folder, session_id) from None
                raise
        except BaseException as exc:
            if file is not None:
                file.close()
            if lock_fd is not None:
                os.close(lock_fd)
            shutil.rmtree(temp, ignore_errors=True)
            if isinstance(exc, OSError):
                raise StoreError(
                    f"cannot create session {session_id}: {os_error_text(exc)}"
                ) from None
            raise
        _fsync_dir_quietly(self.root)
        return SessionFile(session_id, folder, lock_fd, file, len(history))

    def _sweep_once(self) -> None:
        """Remove what a crash left mid-create or mid-delete: hidden folders untouched for
        ``SWEEP_AGE`` seconds whose lock nobody holds (so never a create still running)."""
        if self._swept:
            return
        self._swept = True
        cutoff = time.time() - SWEEP_AGE
        try:
            with os.scandir(self.root) as scan:
                entries = [e for e in scan if e.name.startswith((_CREATING, _DELETING))]
        except OSError:
            return
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_mtime > cutoff:
                    continue
                fd = os.open(os.path.join(entry.path, LOCK), os.O_RDWR)
            except FileNotFoundError:
                fd = None
            except OSError:
                continue
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # still in use
                finally:
                    os.close(fd)
            log.info("removing %s, left over from an interrupted create or delete", entry.path)
            shutil.rmtree(entry.path, ignore_errors=True)


class SessionFile:
    """One open, locked session. Methods are thread-safe (serialized); call ``close`` when done
    (it is idempotent; a ``with`` block does it too)."""

    def __init__(
        self, session_id: str, folder: Path, lock_fd: int, history: io.FileIO, good_end: int
    ) -> None:
        self.session_id = session_id
        self.folder = folder
        self._lock_fd = lock_fd
        self._file = history
        self._good_end = good_end
        """Length of the history up to its last complete, good line."""
        self._dirty = False
        """A failed append may have left bytes past ``_good_end``."""
        self._closed = False
        self._mutex = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed

    def append(self, record: Record) -> None:
        """Append one record (a dict that JSON can encode) as one line, handed to the OS before
        this returns. StoreError if it cannot be written; the history stays loadable and the
        session usable."""
        self.append_many([record])

    def append_many(self, records: builtins.list[Record]) -> None:
        """Append several records with one write: all of them, or (on StoreError) none."""
        self.append_encoded(b"".join(encode_record(record) for record in records))

    def append_encoded(self, data: bytes) -> None:
        """Append whole lines made by :func:`encode_record`, with one write: all of them, or
        (on StoreError) none."""
        with self._mutex:
            self._check_open()
            if self._dirty:
                self._cut_back()
            if not data:
                return
            try:
                _write_all(self._file, data)
                self._file.flush()
            except OSError as exc:
                self._dirty = True
                try:
                    self._cut_back()
                except StoreError as cut:
                    log.warning("%s", cut)
                raise StoreError(
                    f"cannot save to session {self.session_id}: {os_error_text(exc)}"
                ) from None
            self._good_end += len(data)

    def save_image(self, data: bytes, extension: str) -> str:
        """Keep an image beside the history (written durably, before the line naming it);
        returns its name relative to the session folder. StoreError if it cannot be saved."""
        name = f"{IMAGES}/{hashlib.sha256(data).hexdigest()}.{extension}"
        path = self.folder / name
        if path.is_file():
            return name  # the same bytes, saved before
        try:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            write_json_atomic(path, data)
        except OSError as exc:
            raise StoreError(
                f"cannot save an image of session {self.session_id}: {os_error_text(exc)}"
            ) from None
        return name

    def load_image(self, name: str) -> bytes | None:
        """An image saved by :meth:`save_image`; None if the name is not one of ours or the
        file is gone."""
        if not isinstance(name, str) or not _IMAGE_NAME.fullmatch(name):
            return None
        try:
            return (self.folder / name).read_bytes()
        except OSError:
            return None

    def write_meta(self, meta: SessionMeta) -> None:
        """Replace ``meta.json`` atomically. StoreError if it cannot be written (the old meta
        stays)."""
        if meta.session_id != self.session_id:
            raise ValueError(f"meta of {meta.session_id} written to session {self.session_id}")
        with self._mutex:
            self._check_open()
            write_meta_file(self.folder, meta)

    def close(self) -> None:
        """fsync the history and release the lock. Idempotent; never raises for disk errors."""
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            try:
                if self._dirty:
                    self._cut_back()
                os.fsync(self._file.fileno())
            except (OSError, StoreError) as exc:
                log.warning("closing session %s: %s", self.session_id, exc)
            finally:
                self._file.close()
                _unlock(self._lock_fd)

    def __enter__(self) -> SessionFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SessionFile {self.session_id} {state}>"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"session {self.session_id} is closed")

    def _cut_back(self) -> None:
        try:
            os.ftruncate(self._file.fileno(), self._good_end)
        except OSError as exc:
            raise StoreError(
                f"cannot repair the history of session {self.session_id}: {os_error_text(exc)}"
            ) from None
        self._dirty = False


# -- history lines ---------------------------------------------------------------------------


def encode_record(record: Record) -> bytes:
    """One history line: compact JSON, UTF-8, ``\\n``-terminated. StoreError if the record is
    not a dict or JSON cannot encode it."""
    if not isinstance(record, dict):
        raise StoreError(f"a history record must be a JSON object, got {type(record).__name__}")
    try:
        try:
            text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            return (text + "\n").encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: escape them instead
            text = json.dumps(record, separators=(",", ":"), allow_nan=False)
            return (text + "\n").encode("ascii")
    except (TypeError, ValueError) as exc:
        raise StoreError(f"a history record cannot be saved as JSON: {exc}") from None


def parse_history(data: bytes, path: Path) -> tuple[builtins.list[Record], int]:
    """The valid records of a history file, and the length up to the end of the last valid
    line. Invalid lines in the middle are skipped; the incomplete or invalid lines at the end
    are not counted (the caller may truncate them). Each dropped line is logged.

    The cyclic garbage collector is paused meanwhile: a long history is hundreds of thousands
    of new dicts and lists, and every collection on the way would walk all of them again
    (a quarter of the parse at 10,000 messages, half of it at 100,000). JSON makes no cycles;
    the next collection takes them in once."""
    if not gc.isenabled():
        return _parse_history(data, path)
    gc.disable()
    try:
        return _parse_history(data, path)
    finally:
        gc.enable()


def _parse_history(data: bytes, path: Path) -> tuple[builtins.list[Record], int]:
    records: builtins.list[Record] = []
    good_end = 0
    pending: builtins.list[int] = []  # invalid complete lines after the last good one
    offset = 0
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the data ends with a newline
    for number, line in enumerate(lines, start=1):
        record = _parse_line(line)
        offset += len(line) + 1
        if record is None:
            pending.append(number)
            continue
        for bad in pending:
            log.warning("%s: skipping line %d, which is not a JSON object", path, bad)
        pending.clear()
        records.append(record)
        good_end = offset
    for bad in pending:
        log.warning("%s: dropping line %d at the end, which is not a JSON object", path, bad)
    if tail:
        log.warning(
            "%s: ignoring an incomplete last line (%d bytes): a crash mid-write, or a write"
            " in progress",
            path,
            len(tail),
        )
    return records, good_end


def _parse_line(line: bytes) -> Record | None:
    try:
        value = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _open_history(folder: Path, session_id: str) -> tuple[io.FileIO, builtins.list[Record], int]:
    path = folder / HISTORY
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as exc:
        raise StoreError(
            f"cannot open the history of session {session_id}: {os_error_text(exc)}"
        ) from None
    file = io.FileIO(fd, "a+", closefd=True)
    try:
        file.seek(0)
        data = file.readall()
        records, good_end = parse_history(data, path)
        if good_end < len(data):
            log.warning("%s: cutting the history back to its last good line", path)
            os.ftruncate(fd, good_end)
            os.fsync(fd)
    except OSError as exc:
        file.close()
        raise StoreError(
            f"cannot read the history of session {session_id}: {os_error_text(exc)}"
        ) from None
    except BaseException:
        file.close()
        raise
    return file, records, good_end


def _write_all(file: io.FileIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = file.write(view)
        if not written:
            raise OSError(errno.EIO, "the history file accepted no data")
        view = view[written:]


# -- locks -----------------------------------------------------------------------------------


def _lock(folder: Path, session_id: str) -> int:
    """flock the session's lock file; the descriptor holds the lock until ``_unlock``."""
    path = folder / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileNotFoundError:
        raise SessionNotFound(f"no session {session_id}") from None
    except OSError as exc:
        raise StoreError(f"cannot lock session {session_id}: {os_error_text(exc)}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        pid = _read_pid(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLocked(_locked_message(session_id, pid)) from None
        raise StoreError(f"cannot lock session {session_id}: {os_error_text(exc)}") from None
    # The folder may have been deleted (renamed away) between our open and our flock.
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        same = False
    if not same:
        os.close(fd)
        raise SessionNotFound(f"no session {session_id}")
    _write_pid(fd)
    return fd


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)  # no stale pid in the file
    os.close(fd)


def _write_pid(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # informational only


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text.isdigit() else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _locked_message(session_id: str, pid: int | None) -> str:
    if pid == os.getpid():
        return f"session {session_id} is already open in this iaccode process"
    holder = f"pid {pid}" if pid is not None else "pid unknown"
    return f"session {session_id} is open in another iaccode process ({holder})"


def _exists_error(folder: Path, session_id: str) -> StoreError:
    try:
        fd = _lock(folder, session_id)
    except SessionLocked as locked:
        return locked
    except StoreError:
        pass
    else:
        _unlock(fd)
    return StoreError(f"session {session_id} already exists")


# -- small helpers ---------------------------------------------------------------------------


def _remove_temp_files(folder: Path) -> None:
    """Temp files of an interrupted meta write (we hold the lock: no write is running)."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(f".{META}.") and entry.name.endswith(".tmp"):
                    os.unlink(entry.path)
    except OSError as exc:
        log.debug("cleaning %s: %s", folder, exc)


def _write_new_file(path: Path, data: bytes) -> None:
    """Write a file of the hidden folder a create assembles, durably: no temp file and rename,
    since nobody sees the folder before it is complete."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _fsync_dir_quietly(folder: Path) -> None:
    try:
        fsync_dir(folder)
    except OSError as exc:
        log.warning("cannot fsync %s: %s", folder, os_error_text(exc))
