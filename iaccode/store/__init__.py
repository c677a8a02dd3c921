"""Session history on disk: one folder per session under ``$IAC_CODE_HOME/sessions/``.

- ``meta.py``: :class:`SessionMeta` (the small, rewritten-on-every-change ``meta.json``), session
  ids, timestamps, the errors, and the atomic JSON write.
- ``store.py``: :class:`SessionStore` (create, open, read, fork, list, delete) and
  :class:`SessionFile` (one open, locked session: append records, rewrite the meta).
- ``listing.py``: ``list()`` over thousands of sessions, through a disposable SQLite cache.

Everything here is synchronous and uses the standard library only; callers on trio wrap the
slow calls in ``trio.to_thread.run_sync``. The on-disk format is described in
``docs/session-store.md``.
"""

from __future__ import annotations

from iaccode.store.meta import (
    FORMAT_VERSION,
    SESSION_ID_PATTERN,
    FormatTooNew,
    SessionLocked,
    SessionMeta,
    SessionNotFound,
    StoreError,
    is_valid_session_id,
    new_session_id,
    utc_now,
)
from iaccode.store.store import SessionFile, SessionStore

__all__ = [
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
