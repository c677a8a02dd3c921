"""The session store on a real disk: round trips, atomic metas, invalid ids, torn and garbled
histories, locks within and across processes, fork, listing with the index, delete, and write
failures."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from iaccode.store import (
    FormatTooNew,
    SessionFile,
    SessionLocked,
    SessionMeta,
    SessionNotFound,
    SessionStore,
    StoreError,
    is_valid_session_id,
    new_session_id,
    utc_now,
)
from iaccode.store import listing as listing_module
from iaccode.store.listing import INDEX_FILE
from iaccode.store.meta import format_timestamp, parse_timestamp

REPO = Path(__file__).resolve().parents[2]


def make_meta(
    session_id: str | None = None,
    *,
    cwd: str = "/work/project",
    updated: datetime | None = None,
    **changes: Any,
) -> SessionMeta:
    now = updated or datetime.now(UTC)
    return SessionMeta(
        session_id=new_session_id() if session_id is None else session_id,
        cwd=cwd,
        created_at=format_timestamp(now),
        updated_at=format_timestamp(now),
        model="claude-sonnet-5-5",
        mode="default",
        **changes,
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "home" / "sessions"


@pytest.fixture
def store(root: Path) -> SessionStore:
    return SessionStore(root)


@pytest.fixture
def opened(store: SessionStore) -> Iterator[SessionFile]:
    session = store.create(make_meta())
    yield session
    session.close()


def history(store: SessionStore, session_id: str) -> bytes:
    return (store.root / session_id / "history.jsonl").read_bytes()


def snapshot(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


# -- ids and metas ---------------------------------------------------------------------------


def test_new_session_ids_are_valid_and_unique() -> None:
    ids = {new_session_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(is_valid_session_id(sid) and len(sid) == 37 for sid in ids)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "../x",
        "sess_../../etc",
        "x" * 5000,
        "sess_" + "A" * 32,
        "sess_" + "0" * 31,
        "sess_" + "0" * 32 + "\n",
        "sess_" + "0" * 31 + "/",
        "/etc/passwd",
        ".",
        "..",
    ],
)
def test_invalid_session_ids_are_not_found_and_touch_nothing(
    store: SessionStore, tmp_path: Path, bad: str
) -> None:
    assert not is_valid_session_id(bad)
    before = snapshot(tmp_path)
    with pytest.raises(SessionNotFound):
        store.open(bad)
    with pytest.raises(SessionNotFound):
        store.read(bad)
    with pytest.raises(SessionNotFound):
        store.delete(bad)
    with pytest.raises(SessionNotFound):
        store.exists(bad)
    with pytest.raises(SessionNotFound):
        store.fork(bad, make_meta())
    assert snapshot(tmp_path) == before
    with pytest.raises(ValueError):
        make_meta(bad)


def test_meta_json_round_trip_and_validation() -> None:
    meta = make_meta(title="Fix it", remembered={"bash": True, "write_file": False})
    data = meta.to_json()
    assert data["format"] == 1 and data["title"] == "Fix it"
    assert data["updated_at"].endswith("Z")
    assert SessionMeta.from_json(json.loads(json.dumps(data))) == meta
    assert SessionMeta.from_json({**data, "future_field": 1}) == meta
    bad: object
    for bad in (
        [],
        {**data, "session_id": "../x"},
        {**data, "format": "1"},
        {**data, "format": True},
        {**data, "cwd": None},
        {**data, "updated_at": "2025-01-01T00:00:00+02:00"},
        {**data, "updated_at": "yesterday"},
        {**data, "remembered": {"bash": "yes"}},
        {**data, "message_count": -1},
        {**data, "title": 3},
        {**data, "cost_usd": "0.5"},
        {**data, "cost_usd": -1},
        {**data, "context_tokens": 1.5},
    ):
        with pytest.raises(StoreError) as info:
            SessionMeta.from_json(bad)
        assert not isinstance(info.value, FormatTooNew)
    with pytest.raises(FormatTooNew, match="newer iac-code"):
        SessionMeta.from_json({**data, "format": 2})


def test_meta_keeps_the_cost_and_context_use() -> None:
    meta = make_meta()
    assert (meta.cost_usd, meta.context_tokens) == (0.0, 0)
    spent = SessionMeta(**{**meta.to_json(), "cost_usd": 0.0123, "context_tokens": 4096})
    assert SessionMeta.from_json(json.loads(json.dumps(spent.to_json()))) == spent
    unpriced = SessionMeta(**{**meta.to_json(), "cost_usd": None})
    assert SessionMeta.from_json(unpriced.to_json()).cost_usd is None
    older = {
        key: value
        for key, value in meta.to_json().items()
        if key not in ("cost_usd", "context_tokens")
    }  # saved before they were kept
    assert SessionMeta.from_json(older) == meta


def test_timestamps() -> None:
    now = utc_now()
    assert now.endswith("Z") and len(now) == len("2025-01-01T00:00:00.000000Z")
    assert parse_timestamp(now).tzinfo is not None
    assert parse_timestamp("2025-01-01T00:00:00Z") == datetime(2025, 1, 1, tzinfo=UTC)


# -- create, append, open --------------------------------------------------------------------


def test_create_append_open_round_trip(store: SessionStore) -> None:
    meta = make_meta(title="héllo")
    with store.create(meta) as session:
        assert store.exists(meta.session_id)
        session.append({"role": "user", "text": "hi\nthere ✓"})
        session.append_many([{"n": 1}, {"n": 2}])
        session.append_many([])
    assert session.closed
    session.close()  # idempotent

    folder = store.root / meta.session_id
    assert sorted(p.name for p in folder.iterdir()) == ["history.jsonl", "lock", "meta.json"]
    raw = history(store, meta.session_id)
    assert raw.count(b"\n") == 3 and raw.endswith(b"\n")
    assert json.loads((folder / "meta.json").read_text())["session_id"] == meta.session_id

    reopened, loaded, records = store.open(meta.session_id)
    with reopened:
        assert loaded == meta
        assert records == [{"role": "user", "text": "hi\nthere ✓"}, {"n": 1}, {"n": 2}]
        reopened.append({"n": 3})
    assert store.read(meta.session_id)[1][-1] == {"n": 3}


def test_sessions_are_private(store: SessionStore, opened: SessionFile) -> None:
    assert store.root.stat().st_mode & 0o077 == 0
    assert opened.folder.stat().st_mode & 0o077 == 0
    assert (opened.folder / "history.jsonl").stat().st_mode & 0o077 == 0


def test_write_meta_is_atomic(
    store: SessionStore, opened: SessionFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta, _ = store.read(opened.session_id)
    newer = SessionMeta(**{**meta.to_json(), "title": "Renamed", "message_count": 4})
    opened.write_meta(newer)
    assert store.read(opened.session_id)[0] == newer

    def failing_replace(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(StoreError, match="No space left on device"):
        opened.write_meta(SessionMeta(**{**meta.to_json(), "title": "Lost"}))
    monkeypatch.undo()
    assert store.read(opened.session_id)[0] == newer
    assert sorted(p.name for p in opened.folder.iterdir()) == ["history.jsonl", "lock", "meta.json"]
    with pytest.raises(ValueError):
        opened.write_meta(make_meta())


def test_records_must_be_json_objects(opened: SessionFile, store: SessionStore) -> None:
    with pytest.raises(StoreError):
        opened.append(["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        opened.append({"x": object()})
    with pytest.raises(StoreError):
        opened.append({"x": float("nan")})
    opened.append({"lone": "\ud800"})
    opened.append({"ok": True})
    assert store.read(opened.session_id)[1] == [{"lone": "\ud800"}, {"ok": True}]


def test_create_refuses_an_existing_session(store: SessionStore, opened: SessionFile) -> None:
    meta = store.read(opened.session_id)[0]
    with pytest.raises(SessionLocked):
        store.create(meta)
    opened.close()
    with pytest.raises(StoreError, match="already exists"):
        store.create(meta)
    assert store.read(meta.session_id)[0] == meta


def test_closed_session_refuses_writes(opened: SessionFile) -> None:
    opened.close()
    with pytest.raises(StoreError, match="closed"):
        opened.append({"x": 1})


# -- repair ----------------------------------------------------------------------------------


def test_torn_last_line_is_dropped_and_cut_back(
    store: SessionStore, opened: SessionFile, caplog: pytest.LogCaptureFixture
) -> None:
    sid = opened.session_id
    opened.append_many([{"n": 1}, {"n": 2}])
    opened.close()
    path = store.root / sid / "history.jsonl"
    good = path.read_bytes()
    with path.open("ab") as raw:
        raw.write(b'{"n": 3, "text": "half a li')

    with caplog.at_level(logging.WARNING):
        assert store.read(sid)[1] == [{"n": 1}, {"n": 2}]
    assert "incomplete last line" in caplog.text
    assert path.read_bytes() != good  # read() repairs nothing

    session, _, records = store.open(sid)
    with session:
        assert records == [{"n": 1}, {"n": 2}]
        assert path.read_bytes() == good
        session.append({"n": 4})
    assert store.read(sid)[1] == [{"n": 1}, {"n": 2}, {"n": 4}]


def test_garbage_lines(
    store: SessionStore, opened: SessionFile, caplog: pytest.LogCaptureFixture
) -> None:
    sid = opened.session_id
    opened.append({"n": 1})
    path = store.root / sid / "history.jsonl"
    with path.open("ab") as raw:
        raw.write(b"not json\n[1, 2]\n\xff\xfe\n\n")
    opened.append({"n": 2})
    with path.open("ab") as raw:
        raw.write(b"trailing garbage\n")
    opened.close()

    with caplog.at_level(logging.WARNING):
        session, _, records = store.open(sid)
    with session:
        assert records == [{"n": 1}, {"n": 2}]
        assert "skipping line 2" in caplog.text and "dropping line 7" in caplog.text
        assert path.read_bytes().endswith(b'{"n":2}\n')  # the trailing garbage is cut
        session.append({"n": 3})
    assert store.read(sid)[1] == [{"n": 1}, {"n": 2}, {"n": 3}]


def test_format_too_new(store: SessionStore, opened: SessionFile) -> None:
    sid = opened.session_id
    opened.close()
    meta_path = store.root / sid / "meta.json"
    data = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**data, "format": 2}))
    with pytest.raises(FormatTooNew, match="format 2"):
        store.open(sid)
    with pytest.raises(FormatTooNew):
        store.read(sid)
    assert store.list(cwd=None, cursor=None) == ([], None)
    meta_path.write_text(json.dumps(data))
    session, _, _ = store.open(sid)  # the failed opens released the lock
    session.close()


# -- locks -----------------------------------------------------------------------------------


def test_second_open_in_the_same_process_is_locked(
    store: SessionStore, opened: SessionFile
) -> None:
    with pytest.raises(SessionLocked, match="already open in this iaccode process"):
        store.open(opened.session_id)
    opened.close()
    session, _, _ = store.open(opened.session_id)
    with pytest.raises(SessionLocked):
        store.open(opened.session_id)
    session.close()


CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from iaccode.store import SessionStore
    store = SessionStore(Path(sys.argv[1]))
    session, meta, records = store.open(sys.argv[2])
    for n in range(int(sys.argv[3])):
        session.append({"from": "child", "n": n})
    print("ready", flush=True)
    if sys.argv[4] == "die":
        os.kill(os.getpid(), 9)
    time.sleep(60)
    """
)


def spawn_holder(
    store: SessionStore, session_id: str, appends: int = 0, then: str = "sleep"
) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store.root), session_id, str(appends), then],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if line != "ready\n":
        child.kill()
        _, err = child.communicate()
        pytest.fail(f"the child did not open the session: {err}")
    return child


def test_lock_across_processes_dies_with_the_holder(store: SessionStore) -> None:
    meta = make_meta()
    store.create(meta).close()
    with spawn_holder(store, meta.session_id, appends=2) as child:
        try:
            holder = f"another iaccode process \\(pid {child.pid}\\)"
            with pytest.raises(SessionLocked, match=holder):
                store.open(meta.session_id)
            with pytest.raises(SessionLocked):
                store.delete(meta.session_id)
            with pytest.raises(SessionLocked):
                store.create(meta)
            # Reading and forking do not need the lock.
            assert len(store.read(meta.session_id)[1]) == 2
            fork, records = store.fork(meta.session_id, make_meta())
            fork.close()
            assert len(records) == 2
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate()
    assert child.returncode == -signal.SIGKILL
    session, _, records = store.open(meta.session_id)
    session.close()
    assert [r["n"] for r in records] == [0, 1]
    assert store.delete(meta.session_id)


def test_kill_9_right_after_append_loses_nothing(store: SessionStore) -> None:
    meta = make_meta()
    store.create(meta).close()
    with spawn_holder(store, meta.session_id, appends=50, then="die") as child:
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    session, _, records = store.open(meta.session_id)
    session.close()
    assert [r["n"] for r in records] == list(range(50))


# -- fork ------------------------------------------------------------------------------------


def test_fork_copies_complete_records_only(store: SessionStore, opened: SessionFile) -> None:
    opened.append_many([{"n": 1}, {"n": 2}])
    source_path = store.root / opened.session_id / "history.jsonl"
    with source_path.open("ab") as raw:  # another writer, mid-line
        raw.write(b'{"n": 3, "half')

    new_meta = make_meta(title="fork")
    fork, records = store.fork(opened.session_id, new_meta)
    with fork:
        assert records == [{"n": 1}, {"n": 2}]
        assert history(store, new_meta.session_id) == b'{"n":1}\n{"n":2}\n'
        assert store.read(new_meta.session_id)[0] == new_meta
        with pytest.raises(SessionLocked):
            store.open(new_meta.session_id)
        fork.append({"fork": True})
    with source_path.open("ab") as raw:  # the other writer finishes its line
        raw.write(b'": 0}\n')
    opened.append({"source": True})
    assert store.read(opened.session_id)[1] == [
        {"n": 1},
        {"n": 2},
        {"n": 3, "half": 0},
        {"source": True},
    ]
    assert store.read(new_meta.session_id)[1] == [{"n": 1}, {"n": 2}, {"fork": True}]


def test_fork_errors(store: SessionStore, opened: SessionFile) -> None:
    with pytest.raises(SessionNotFound):
        store.fork(new_session_id(), make_meta())
    with pytest.raises(SessionLocked):
        store.fork(opened.session_id, store.read(opened.session_id)[0])
    assert not [p for p in store.root.iterdir() if p.name.startswith(".")]


# -- list ------------------------------------------------------------------------------------


def populate(store: SessionStore, count: int, cwds: list[str]) -> list[SessionMeta]:
    start = datetime(2025, 3, 1, tzinfo=UTC)
    metas = []
    for n in range(count):
        # Some share an updated_at, so ties are ordered by id.
        meta = make_meta(cwd=cwds[n % len(cwds)], updated=start + timedelta(minutes=n // 3))
        store.create(meta).close()
        metas.append(meta)
    return metas


def newest_first(metas: list[SessionMeta]) -> list[str]:
    ordered = sorted(metas, key=lambda m: (m.updated_at, m.session_id), reverse=True)
    return [m.session_id for m in ordered]


def list_all(store: SessionStore, cwd: str | None, limit: int) -> tuple[list[str], list[int]]:
    ids: list[str] = []
    sizes: list[int] = []
    cursor = None
    while True:
        page, cursor = store.list(cwd=cwd, cursor=cursor, limit=limit)
        ids += [m.session_id for m in page]
        sizes.append(len(page))
        if cursor is None:
            return ids, sizes


def test_list_pages_newest_first(store: SessionStore) -> None:
    metas = populate(store, 120, ["/a"])
    ids, sizes = list_all(store, None, 50)
    assert sizes == [50, 50, 20]
    assert ids == newest_first(metas)
    assert (store.root / INDEX_FILE).exists()
    # Again, now from the index; and an exact multiple of the page size.
    assert list_all(store, None, 40) == (newest_first(metas), [40, 40, 40])
    assert list_all(store, "/a", 200) == (newest_first(metas), [120])


def test_list_filters_by_cwd(store: SessionStore) -> None:
    metas = populate(store, 30, ["/a", "/b", "/a/sub"])
    for cwd in ("/a", "/b", "/a/sub"):
        expected = newest_first([m for m in metas if m.cwd == cwd])
        assert list_all(store, cwd, 4)[0] == expected
    assert store.list(cwd="/elsewhere", cursor=None) == ([], None)


def test_list_sees_every_change(store: SessionStore) -> None:
    metas = populate(store, 10, ["/a"])
    store.list(cwd=None, cursor=None)  # builds the index
    oldest = metas[0]
    session, meta, _ = store.open(oldest.session_id)
    touched = SessionMeta(**{**meta.to_json(), "updated_at": utc_now(), "title": "now"})
    session.write_meta(touched)
    session.close()
    assert store.delete(metas[-1].session_id)
    late = make_meta(cwd="/a", updated=datetime(2020, 1, 1, tzinfo=UTC))
    store.create(late).close()

    page, _ = store.list(cwd=None, cursor=None)
    assert page[0] == touched
    assert page[-1] == late
    assert metas[-1].session_id not in {m.session_id for m in page}
    assert len(page) == 10


def test_list_skips_broken_sessions(store: SessionStore, caplog: pytest.LogCaptureFixture) -> None:
    metas = populate(store, 3, ["/a"])
    (store.root / metas[0].session_id / "meta.json").write_text("{not json")
    (store.root / new_session_id()).mkdir()  # no meta at all
    (store.root / "notes.txt").write_text("not a session")
    (store.root / ".creating-leftover").mkdir()
    with caplog.at_level(logging.WARNING):
        page, _ = store.list(cwd=None, cursor=None)
    assert [m.session_id for m in page] == newest_first(metas[1:])
    assert "skips" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        store.list(cwd=None, cursor=None)
    assert caplog.text == ""  # the broken meta is remembered until it changes


def test_list_rebuilds_a_lost_or_damaged_index(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    metas = populate(store, 5, ["/a"])
    expected = newest_first(metas)
    assert [m.session_id for m in store.list(cwd=None, cursor=None)[0]] == expected
    index = store.root / INDEX_FILE
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    assert [m.session_id for m in store.list(cwd=None, cursor=None)[0]] == expected
    index.write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.WARNING):
        assert [m.session_id for m in store.list(cwd=None, cursor=None)[0]] == expected
    assert "rebuilding" in caplog.text
    with sqlite3.connect(index) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone() == (5,)
    db.close()


def test_list_without_a_usable_index(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    metas = populate(store, 12, ["/a", "/b"])

    def broken(_: Path) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(listing_module, "_connect", broken)
    assert list_all(store, None, 5)[0] == newest_first(metas)
    assert list_all(store, "/b", 5)[0] == newest_first([m for m in metas if m.cwd == "/b"])


def test_list_invalid_cursor_and_limit(store: SessionStore) -> None:
    populate(store, 3, ["/a"])
    _, cursor = store.list(cwd=None, cursor=None, limit=1)
    assert cursor is not None
    for bad in ("", "garbage", "c1.", "c1.!!!!", cursor[:-3], cursor + "x", "c1.WzEsMl0"):
        with pytest.raises(StoreError, match="cursor"):
            store.list(cwd=None, cursor=bad)
    with pytest.raises(ValueError):
        store.list(cwd=None, cursor=None, limit=0)


def test_list_of_a_missing_root(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "nowhere")
    assert store.list(cwd=None, cursor=None) == ([], None)
    assert not (tmp_path / "nowhere").exists()


# -- delete ----------------------------------------------------------------------------------


def test_delete_is_idempotent(store: SessionStore, opened: SessionFile) -> None:
    sid = opened.session_id
    with pytest.raises(SessionLocked, match="this iaccode process"):
        store.delete(sid)
    opened.close()
    assert store.delete(sid) is True
    assert not store.exists(sid)
    assert store.delete(sid) is False
    assert store.delete(new_session_id()) is False
    with pytest.raises(SessionNotFound):
        store.open(sid)
    with pytest.raises(SessionNotFound):
        store.read(sid)
    assert list(store.root.iterdir()) == []


def test_interrupted_create_and_delete_are_swept(store: SessionStore) -> None:
    store.root.mkdir(parents=True)
    old = datetime.now().timestamp() - 3600
    leftovers = {
        ".creating-a": "",  # crashed mid-create
        ".creating-b": "locked",  # still running in another process (held lock)
        ".creating-c": "new",  # just started, not locked yet
        ".deleting-d": "",  # crashed mid-delete
    }
    held = None
    for name, state in leftovers.items():
        folder = store.root / name
        folder.mkdir()
        (folder / "lock").write_text("")
        if state == "locked":
            held = os.open(folder / "lock", os.O_RDWR)
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if state != "new":
            os.utime(folder, (old, old))
    try:
        store.create(make_meta()).close()
        hidden = sorted(p.name for p in store.root.iterdir() if p.name.startswith("."))
        assert hidden == [".creating-b", ".creating-c"]
    finally:
        assert held is not None
        os.close(held)


# -- write failures --------------------------------------------------------------------------


def test_disk_full_during_append_leaves_a_clean_history(
    store: SessionStore, opened: SessionFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = opened.session_id
    opened.append({"n": 1})
    before = history(store, sid)
    real_write = opened._file.write

    def half_then_full(data: Any) -> int:
        real_write(bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(opened._file, "write", half_then_full)
    with pytest.raises(StoreError, match="No space left on device"):
        opened.append({"n": 2, "text": "x" * 100})
    with pytest.raises(StoreError, match="No space left on device"):
        opened.append_many([{"n": 3}, {"n": 4}])
    assert history(store, sid) == before
    monkeypatch.undo()

    opened.append({"n": 5})
    opened.close()
    session, _, records = store.open(sid)
    session.close()
    assert records == [{"n": 1}, {"n": 5}]


def test_failed_cut_back_is_retried_on_the_next_append(
    store: SessionStore, opened: SessionFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = opened.session_id
    opened.append({"n": 1})
    real_write = opened._file.write

    def half_then_fail(data: Any) -> int:
        real_write(bytes(data)[:5])
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    def no_truncate(*_: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with monkeypatch.context() as patch:
        patch.setattr(opened._file, "write", half_then_fail)
        patch.setattr(os, "ftruncate", no_truncate)
        with pytest.raises(StoreError):
            opened.append({"n": 2})
    assert history(store, sid) == b'{"n":1}\n{"n":'
    opened.append({"n": 3})
    assert history(store, sid) == b'{"n":1}\n{"n":3}\n'


def permissions_enforced(folder: Path) -> bool:
    """False when we may write anyway (root, CAP_DAC_OVERRIDE)."""
    probe = folder / "probe"
    probe.mkdir(mode=0o500)
    try:
        (probe / "file").touch()
    except PermissionError:
        return True
    finally:
        probe.chmod(0o700)
        (probe / "file").unlink(missing_ok=True)
        probe.rmdir()
    return False


def test_read_only_folder(store: SessionStore, opened: SessionFile, tmp_path: Path) -> None:
    if not permissions_enforced(tmp_path):
        pytest.skip("file permissions are not enforced for this user (root)")
    sid = opened.session_id
    meta = store.read(sid)[0]
    opened.folder.chmod(0o500)
    try:
        with pytest.raises(StoreError):
            opened.write_meta(SessionMeta(**{**meta.to_json(), "title": "x"}))
        opened.append({"n": 1})  # the history is already open
    finally:
        opened.folder.chmod(0o700)
    assert store.read(sid) == (meta, [{"n": 1}])


def test_read_only_history_file(store: SessionStore, opened: SessionFile, tmp_path: Path) -> None:
    if not permissions_enforced(tmp_path):
        pytest.skip("file permissions are not enforced for this user (root)")
    sid = opened.session_id
    opened.append({"n": 1})
    opened.close()
    path = store.root / sid / "history.jsonl"
    path.chmod(0o400)
    try:
        with pytest.raises(StoreError, match="Permission denied"):
            store.open(sid)
    finally:
        path.chmod(0o600)
    session, _, records = store.open(sid)  # not left locked
    session.close()
    assert records == [{"n": 1}]
