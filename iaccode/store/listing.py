"""Listing sessions, fast with many of them: a small SQLite cache, checked against the disk on
every call.

Reading every ``meta.json`` is the simple way, and it is correct, but it does not scale: with
10,000 sessions it means 10,000 opens, reads and JSON parses on every ``session/list``, about
0.6 s warm and 2 s with a cold page cache on the machine it was measured on
(``tests/bench/bench_store_listing.py``). So ``<root>/index.sqlite3`` caches, per session, its
``cwd`` and its ``updated_at`` (as a sort key), together with the signature (inode, mtime in ns,
size) of the ``meta.json`` they were read from. A list then costs one directory scan, one
``stat`` per session (no file is opened), one read of the small index, and the reading of the
page's own ``meta.json`` files (about 0.07 s for 10,000 sessions, most of it the stats).

The cache is never trusted blindly and nobody has to keep it up to date: each ``list`` compares
the signatures, re-reads only the metas whose signature changed, and forgets the sessions that
are gone. Every meta write is an ``os.replace`` of a new file, so a change gets a new inode and
mtime: a change by any process, any version, or by hand is seen. Writers (``create``,
``write_meta``, ``delete``) therefore never touch the index, and the ``meta.json`` files stay
the source of truth: the index may be deleted at any time and the next ``list`` rebuilds it. A
corrupt index is deleted and rebuilt; one that cannot be used at all (read-only home, a
filesystem where SQLite locking fails) makes ``list`` read every meta, slower but correct. WAL
mode lets several agent processes list at once; the cache is updated in one short transaction,
and a busy index is simply not updated that time. (If the per-session ``stat`` ever becomes the
bottleneck, the next step is for writers to update the index and for ``list`` to trust it.)

Pages are ordered by ``updated_at``, newest first, ties by session id. The cursor is an opaque
token holding the (``updated_at``, id) of the last session returned; the next page starts after
it, so sessions that change between pages do not shift the others.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import heapq
import json
import logging
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from iaccode.store.meta import (
    SESSION_ID_PATTERN,
    SessionMeta,
    StoreError,
    is_valid_session_id,
    os_error_text,
    parse_meta,
    timestamp_key,
)

log = logging.getLogger(__name__)

INDEX_FILE = "index.sqlite3"
SCHEMA_VERSION = 1
_CURSOR_PREFIX = "c1."
_BUSY_TIMEOUT = 2.0

Signature = tuple[int, int, int]
"""(inode, mtime in ns, size) of a ``meta.json``."""

Row = tuple[str, int, int, int, str | None, int | None]
"""An index row: id, signature, cwd, sort key (the last two None: an invalid meta)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    ino INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    cwd TEXT,
    sort_key INTEGER
) WITHOUT ROWID
"""


def _index_cwd(cwd: str) -> str:
    """``cwd`` as the index keeps it. SQLite takes UTF-8 only: a folder name that is not UTF-8
    (a lone surrogate in Python) is kept as NUL + hex, which no real path can equal."""
    try:
        cwd.encode("utf-8")
    except UnicodeEncodeError:
        return "\0" + cwd.encode("utf-8", "surrogatepass").hex()
    return cwd


def encode_cursor(sort_key: int, session_id: str) -> str:
    raw = json.dumps([sort_key, session_id], separators=(",", ":")).encode("ascii")
    return _CURSOR_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str]:
    """StoreError for anything :func:`encode_cursor` did not make."""
    invalid = StoreError("invalid session list cursor")
    if not isinstance(cursor, str) or not cursor.startswith(_CURSOR_PREFIX) or len(cursor) > 200:
        raise invalid
    body = cursor[len(_CURSOR_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        value = json.loads(raw.decode("ascii"))
    except (binascii.Error, ValueError):
        raise invalid from None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not isinstance(value[0], int)
        or isinstance(value[0], bool)
        or not is_valid_session_id(value[1])
    ):
        raise invalid
    return value[0], value[1]


class SessionListing:
    """``SessionStore.list`` (see the module docstring).

    No method here is called ``list``: it would shadow the builtin in the annotations."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index_path = root / INDEX_FILE
        self._warned = False

    def list_page(
        self, *, cwd: str | None, cursor: str | None, limit: int = 50
    ) -> tuple[list[SessionMeta], str | None]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        after = decode_cursor(cursor) if cursor is not None else None
        on_disk = self._scan()
        if not on_disk:
            return [], None
        for attempt in (1, 2):
            try:
                return self._list_with_index(on_disk, cwd, after, limit)
            except sqlite3.DatabaseError as exc:
                if attempt == 1 and not isinstance(exc, sqlite3.OperationalError):
                    log.warning("rebuilding the damaged session index %s: %s", self.index_path, exc)
                    self._remove_index()
                    continue
                self._warn(f"listing sessions without the index {self.index_path}: {exc}")
        return self._list_from_disk(on_disk, cwd, after, limit)

    # -- without the index ---------------------------------------------------------------------

    def _list_from_disk(
        self,
        on_disk: dict[str, Signature],
        cwd: str | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> tuple[list[SessionMeta], str | None]:
        metas: dict[str, SessionMeta] = {}
        candidates: list[tuple[int, str]] = []
        for sid in on_disk:
            meta, _ = self._read_meta(sid)
            if meta is not None and (cwd is None or meta.cwd == cwd):
                metas[sid] = meta
                candidates.append((timestamp_key(meta.updated_at), sid))
        page, more = _page(candidates, after, limit)
        return [metas[sid] for _, sid in page], _next_cursor(page, more)

    def _scan(self) -> dict[str, Signature]:
        """Signature of every session's ``meta.json``: one scandir and one stat each."""
        found: dict[str, Signature] = {}
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return found
        except OSError as exc:
            raise StoreError(f"cannot list sessions in {self.root}: {os_error_text(exc)}") from None
        is_session = SESSION_ID_PATTERN.fullmatch
        try:
            with os.scandir(root_fd) as scan:
                for entry in scan:
                    name = entry.name
                    if is_session(name) is None:
                        continue
                    try:
                        st = os.stat(f"{name}/meta.json", dir_fd=root_fd)
                    except OSError:
                        continue  # not a session, or deleted meanwhile
                    found[name] = (st.st_ino, st.st_mtime_ns, st.st_size)
        finally:
            os.close(root_fd)
        return found

    def _read_meta(self, session_id: str) -> tuple[SessionMeta | None, Signature | None]:
        """One meta and the signature of the file it came from; meta None if invalid, both
        None if the file is gone or unreadable."""
        path = self.root / session_id / "meta.json"
        try:
            with open(path, "rb") as file:
                st = os.fstat(file.fileno())
                raw = file.read()
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            log.warning("session list skips %s: %s", session_id, os_error_text(exc))
            return None, None
        signature = (st.st_ino, st.st_mtime_ns, st.st_size)
        try:
            return parse_meta(raw, session_id), signature
        except StoreError as exc:
            log.warning("session list skips %s: %s", session_id, exc)
            return None, signature

    # -- with the index ------------------------------------------------------------------------

    def _list_with_index(
        self,
        on_disk: dict[str, Signature],
        cwd: str | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> tuple[list[SessionMeta], str | None]:
        with contextlib.closing(_connect(self.index_path)) as db:
            unseen = dict(on_disk)
            candidates: list[tuple[int, str]] = []
            stale: list[str] = []
            gone: list[str] = []
            rows = db.execute("SELECT session_id, ino, mtime_ns, size, cwd, sort_key FROM sessions")
            for sid, ino, mtime_ns, size, row_cwd, key in rows:
                signature = unseen.pop(sid, None)
                if signature is None:
                    gone.append(sid)
                elif signature != (ino, mtime_ns, size):
                    stale.append(sid)
                elif key is not None and (cwd is None or row_cwd == _index_cwd(cwd)):
                    candidates.append((key, sid))
            fresh: dict[str, SessionMeta] = {}
            changed: list[Row] = []
            for sid in [*stale, *unseen]:
                meta, read_signature = self._read_meta(sid)
                if read_signature is None:
                    gone.append(sid)
                elif meta is None:  # remembered as invalid until the file changes
                    changed.append((sid, *read_signature, None, None))
                else:
                    key = timestamp_key(meta.updated_at)
                    changed.append((sid, *read_signature, _index_cwd(meta.cwd), key))
                    fresh[sid] = meta
                    if cwd is None or meta.cwd == cwd:
                        candidates.append((key, sid))
            if changed or gone:
                self._save(db, changed, gone)
            page, more = _page(candidates, after, limit)
        metas = [fresh.get(sid) or self._read_meta(sid)[0] for _, sid in page]
        return [meta for meta in metas if meta is not None], _next_cursor(page, more)

    def _save(
        self,
        db: sqlite3.Connection,
        changed: list[Row],
        gone: list[str],
    ) -> None:
        """Update the cache in one transaction; skip it if the index is busy or read-only."""
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?)", changed)
            db.executemany("DELETE FROM sessions WHERE session_id = ?", [(sid,) for sid in gone])
            db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            self._warn(f"cannot update the session index {self.index_path}: {exc}")

    def _remove_index(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.index_path}{suffix}")

    def _warn(self, message: str) -> None:
        if self._warned:
            log.debug("%s", message)
        else:
            self._warned = True
            log.warning("%s", message)


def _next_cursor(page: list[tuple[int, str]], more: bool) -> str | None:
    return encode_cursor(*page[-1]) if more and page else None


def _page(
    candidates: list[tuple[int, str]], after: tuple[int, str] | None, limit: int
) -> tuple[list[tuple[int, str]], bool]:
    """The ``limit`` largest (sort key, id) below ``after``, and whether more follow."""
    keys: Iterable[tuple[int, str]] = candidates
    if after is not None:
        keys = (item for item in candidates if item < after)
    page = heapq.nlargest(limit + 1, keys)
    return page[:limit], len(page) > limit


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=_BUSY_TIMEOUT, isolation_level=None)
    try:
        db.execute("PRAGMA synchronous=NORMAL")
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version != SCHEMA_VERSION:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            (version,) = db.execute("PRAGMA user_version").fetchone()
            if version != SCHEMA_VERSION:
                db.execute("DROP TABLE IF EXISTS sessions")
                db.execute(_SCHEMA)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
    except BaseException:
        db.close()
        raise
    return db
