"""Session metadata (``meta.json``), session ids, timestamps, the store's errors, and the atomic
JSON write every ``meta.json`` goes through.

``meta.json`` is small and rewritten whole on every change: the new text goes to a temporary
file in the same folder, is flushed and fsynced, then ``os.replace``s the old file, and the
folder is fsynced so the rename itself survives a power loss. A reader therefore sees the old
meta or the new one, never a mix, and a crash at any point leaves one of the two.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from attrs import Attribute, field, frozen

from iaccode import checks
from iaccode.choices import DEFAULT_THOUGHT_LEVEL

FORMAT_VERSION = 1
"""The session format this code writes and the newest it reads (``format`` in ``meta.json``)."""

SESSION_ID_PATTERN = re.compile(r"sess_[0-9a-f]{32}")
"""Session ids we generate; use with ``fullmatch`` (:func:`is_valid_session_id` does)."""


class StoreError(Exception):
    """A session store operation failed; the message is meant for a user."""


class SessionNotFound(StoreError):
    """No session with that id (or the id is not one we could have generated)."""


class SessionLocked(StoreError):
    """Another process (or this one, through another handle) has the session open."""


class FormatTooNew(StoreError):
    """The session was written by a newer iac-code, in a format this version cannot read."""


def new_session_id() -> str:
    """A fresh session id: ``sess_`` and 32 lowercase hex digits."""
    return "sess_" + uuid.uuid4().hex


def is_valid_session_id(value: object) -> bool:
    """True only for ids of the form we generate, so no path character ever reaches the disk."""
    return isinstance(value, str) and SESSION_ID_PATTERN.fullmatch(value) is not None


def utc_now() -> str:
    """The current time as the store writes it: ISO 8601, UTC, microseconds, ``Z``."""
    return format_timestamp(datetime.now(UTC))


def format_timestamp(moment: datetime) -> str:
    """``2025-01-31T12:00:00.000000Z`` (fixed width, so the strings also sort by time)."""
    if moment.tzinfo is None:
        raise ValueError("timestamp must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(value: str) -> datetime:
    """Parse an ISO 8601 UTC timestamp ending in ``Z``; ValueError otherwise."""
    if not isinstance(value, str) or not value.endswith("Z"):
        raise ValueError(f"expected an ISO 8601 UTC timestamp ending in 'Z', got {value!r}")
    moment = datetime.fromisoformat(value)
    if moment.utcoffset() != timedelta(0):
        raise ValueError(f"expected a UTC timestamp, got {value!r}")
    return moment


def timestamp_key(value: str) -> int:
    """Microseconds since the epoch: the sort key of a stored timestamp."""
    delta = parse_timestamp(value) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def os_error_text(exc: OSError) -> str:
    """The readable part of an OSError ("No space left on device")."""
    return exc.strerror or str(exc)


def _paths(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _check_session_id(_: object, __: object, value: Any) -> None:
    if not is_valid_session_id(value):
        raise ValueError(f"not a session id: {value!r}")


def _check_timestamp(_: object, attribute: Attribute[str], value: Any) -> None:
    parse_timestamp(checks.string(value, attribute.name))


@frozen
class SessionMeta:
    """What ``meta.json`` holds. Timestamps are ISO 8601 UTC strings ending in ``Z``
    (:func:`utc_now`); constructing one with a bad id or timestamp raises ValueError."""

    session_id: str = field(validator=_check_session_id)
    cwd: str
    created_at: str = field(validator=_check_timestamp)
    updated_at: str = field(validator=_check_timestamp)
    model: str
    mode: str
    thought_level: str = DEFAULT_THOUGHT_LEVEL
    title: str | None = None
    remembered: dict[str, bool] = field(factory=dict)
    """Tool name -> the session's standing answer (True: always allow, False: always reject)."""
    message_count: int = 0
    cost_usd: float | None = 0.0
    """What the session's model requests cost so far; None once one went to a model without a
    known price (``iaccode.llm.prices``)."""
    context_tokens: int = 0
    """The context window's use at the last request (0: no request yet)."""
    additional_directories: tuple[str, ...] = field(default=(), converter=_paths)
    """More folders that count as the project (absolute, as the client gave them), in order."""
    format: int = FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "session_id": self.session_id,
            "cwd": self.cwd,
            "title": self.title,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "model": self.model,
            "mode": self.mode,
            "thought_level": self.thought_level,
            "remembered": dict(self.remembered),
            "message_count": self.message_count,
            "cost_usd": self.cost_usd,
            "context_tokens": self.context_tokens,
            "additional_directories": list(self.additional_directories),
        }

    @classmethod
    def from_json(cls, data: object) -> SessionMeta:
        """Build from parsed ``meta.json``. StoreError (FormatTooNew for a newer format) if the
        data is not a valid meta. Unknown keys are ignored."""
        if not isinstance(data, Mapping):
            raise StoreError("session meta is not a JSON object")
        sid = data.get("session_id")
        what = f"session {sid}" if is_valid_session_id(sid) else "session"
        version = data.get("format")
        if not checks.is_int(version) or version < 1:
            raise StoreError(f"{what}: meta.json has no valid format version ({version!r})")
        if version > FORMAT_VERSION:
            raise FormatTooNew(
                f"{what} was saved by a newer iac-code (session format {version}; this version"
                f" reads format {FORMAT_VERSION}). Upgrade iac-code to open it."
            )
        try:
            return cls(
                session_id=checks.string(data.get("session_id"), "session_id"),
                cwd=checks.string(data.get("cwd"), "cwd"),
                created_at=checks.string(data.get("created_at"), "created_at"),
                updated_at=checks.string(data.get("updated_at"), "updated_at"),
                model=checks.string(data.get("model"), "model"),
                mode=checks.string(data.get("mode"), "mode"),
                thought_level=checks.string(
                    data.get("thought_level", DEFAULT_THOUGHT_LEVEL), "thought_level"
                ),
                title=checks.optional_string(data.get("title"), "title"),
                remembered=checks.table_of(
                    data.get("remembered", {}),
                    "remembered",
                    checks.boolean,
                    "an object of true/false answers",
                ),
                message_count=checks.integer(
                    data.get("message_count", 0), "message_count", minimum=0
                ),
                cost_usd=(
                    None
                    if (cost := data.get("cost_usd", 0.0)) is None
                    else checks.number(cost, "cost_usd", minimum=0)
                ),
                context_tokens=checks.integer(
                    data.get("context_tokens", 0), "context_tokens", minimum=0
                ),
                additional_directories=_directories(data.get("additional_directories", [])),
                format=version,
            )
        except ValueError as exc:  # checks.Invalid, or a bad id or timestamp
            raise StoreError(f"{what}: invalid meta.json: {exc}") from None


def _directories(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise checks.Invalid(f"additional_directories: expected a list of paths, got {value!r}")
    return tuple(value)


def parse_meta(raw: bytes, expected_id: str) -> SessionMeta:
    """Parse ``meta.json`` bytes of the session folder ``expected_id``; StoreError if invalid."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreError(f"session {expected_id}: meta.json is not valid JSON ({exc})") from None
    meta = SessionMeta.from_json(data)
    if meta.session_id != expected_id:
        raise StoreError(
            f"session {expected_id}: meta.json names another session ({meta.session_id})"
        )
    return meta


def read_meta(folder: Path, expected_id: str) -> SessionMeta:
    """Read ``<folder>/meta.json``. SessionNotFound if it is missing, StoreError if unreadable
    or invalid, FormatTooNew if newer than we know."""
    try:
        raw = (folder / "meta.json").read_bytes()
    except FileNotFoundError:
        raise SessionNotFound(f"no session {expected_id}") from None
    except OSError as exc:
        raise StoreError(f"cannot read session {expected_id}: {os_error_text(exc)}") from None
    return parse_meta(raw, expected_id)


def meta_bytes(meta: SessionMeta) -> bytes:
    # A lone surrogate (a title from a prompt, a cwd) is written as its \uXXXX escape.
    text = json.dumps(meta.to_json(), ensure_ascii=False, indent=2) + "\n"
    return text.encode("utf-8", "backslashreplace")


def write_json_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (temp file in the same folder,
    flush, fsync, ``os.replace``, fsync of the folder). Raises OSError; on failure the old file
    is intact and no temp file is left behind."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """fsync a directory so renames and creations in it are durable (where the OS allows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems cannot fsync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def write_meta_file(folder: Path, meta: SessionMeta) -> None:
    """Atomically write ``<folder>/meta.json``; StoreError with a readable message on failure."""
    try:
        write_json_atomic(folder / "meta.json", meta_bytes(meta))
    except OSError as exc:
        raise StoreError(f"cannot save session {meta.session_id}: {os_error_text(exc)}") from None
