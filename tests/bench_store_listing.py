"""Benchmark: ``SessionStore.list`` over many sessions (not a test; run it by hand).

    python tests/bench_store_listing.py [--sessions 10000] [--keep DIR]

Generates the sessions in a temporary folder (meta.json, a short history.jsonl and a lock file
each, as the store writes them), then times:

- reading every meta.json (what ``list`` would cost without the index),
- the first ``list`` (builds ``index.sqlite3``),
- ``list`` again (the index is up to date; each call still stats every meta.json),
- ``list`` in a fresh process after the metas and the index were evicted from the page cache
  (``posix_fadvise(DONTNEED)``; directory and inode caches stay warm, which we cannot drop
  without root-wide ``drop_caches``),
- the second page through the cursor, a cwd filter, and a list after one meta changed.

Each timing is the best of a few runs unless it is a one-off (first build, cold process).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iaccode.store import SessionMeta, SessionStore, new_session_id  # noqa: E402
from iaccode.store.listing import INDEX_FILE, SessionListing  # noqa: E402
from iaccode.store.meta import format_timestamp, meta_bytes  # noqa: E402

CWDS = [f"/home/dev/project-{i}" for i in range(20)]


def generate(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    record = json.dumps({"type": "user", "content": [{"type": "text", "text": "hello " * 20}]})
    for _ in range(count):
        created = start + timedelta(seconds=rng.randrange(30_000_000))
        updated = created + timedelta(seconds=rng.randrange(100_000))
        meta = SessionMeta(
            session_id=new_session_id(),
            cwd=rng.choice(CWDS),
            created_at=format_timestamp(created),
            updated_at=format_timestamp(updated),
            model="claude-sonnet-5-5",
            mode="default",
            title=f"Fix the flaky test number {rng.randrange(1000)} in the parser module",
            remembered={"read_file": True, "bash": False},
            message_count=12,
        )
        folder = root / meta.session_id
        folder.mkdir()
        (folder / "meta.json").write_bytes(meta_bytes(meta))
        (folder / "history.jsonl").write_text((record + "\n") * 12)
        (folder / "lock").write_bytes(b"")


def evict(root: Path) -> None:
    """Drop the metas and the index from the page cache (written back first)."""
    os.sync()
    paths = [root / INDEX_FILE, *(entry / "meta.json" for entry in root.iterdir())]
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def best(fn: object, runs: int = 5) -> float:
    assert callable(fn)
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def once(fn: object) -> float:
    assert callable(fn)
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def cold_child(root: Path, use_index: bool) -> float:
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[2]);"
        "from pathlib import Path;"
        "from iaccode.store.listing import SessionListing;"
        "l = SessionListing(Path(sys.argv[1]));"
        "t = time.perf_counter();"
        + (
            "l.list_page(cwd=None, cursor=None, limit=50);"
            if use_index
            else "l._list_from_disk(l._scan(), None, None, 50);"
        )
        + "print(time.perf_counter() - t)"
    )
    repo = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), repo], check=True, capture_output=True, text=True
    )
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="generate here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iaccode-bench-") as temp:
        root = (args.keep or Path(temp)) / "sessions"
        began = time.perf_counter()
        generate(root, args.sessions)
        print(f"generated {args.sessions} sessions in {time.perf_counter() - began:.1f} s")
        store = SessionStore(root)
        listing = SessionListing(root)
        cwd = CWDS[3]

        def ms(seconds: float) -> str:
            return f"{seconds * 1000:8.1f} ms"

        no_index = best(lambda: listing._list_from_disk(listing._scan(), cwd, None, 50), 3)
        scan_only = best(listing._scan)
        first = once(lambda: store.list(cwd=cwd, cursor=None, limit=50))
        warm = best(lambda: store.list(cwd=cwd, cursor=None, limit=50))
        warm_all = best(lambda: store.list(cwd=None, cursor=None, limit=50))
        page1, cursor = store.list(cwd=None, cursor=None, limit=50)
        second_page = best(lambda: store.list(cwd=None, cursor=cursor, limit=50))
        assert len(page1) == 50 and cursor is not None

        # One meta changes (as write_meta does: a new file replaces the old one).
        victim = page1[-1]
        changed = SessionMeta(**{**victim.to_json(), "title": "renamed"})
        folder = root / victim.session_id
        (folder / "meta.json.new").write_bytes(meta_bytes(changed))
        os.replace(folder / "meta.json.new", folder / "meta.json")
        after_change = once(lambda: store.list(cwd=None, cursor=None, limit=50))

        evict(root)
        cold_no_index = cold_child(root, use_index=False)
        evict(root)
        cold_index = cold_child(root, use_index=True)

        print(f"sessions on disk:                          {args.sessions}")
        print(f"scan + stat every meta.json only:           {ms(scan_only)}")
        print(f"no index, read every meta.json (warm):      {ms(no_index)}")
        print(f"no index, fresh process, page cache cold:   {ms(cold_no_index)}")
        print(f"first list (builds index.sqlite3):          {ms(first)}")
        print(f"list(cwd=..., limit=50), index up to date:  {ms(warm)}")
        print(f"list(cwd=None, limit=50), index up to date: {ms(warm_all)}")
        print(f"second page through the cursor:             {ms(second_page)}")
        print(f"list after one meta changed:                {ms(after_change)}")
        print(f"fresh process, page cache cold, with index: {ms(cold_index)}")
        index_size = (root / INDEX_FILE).stat().st_size
        print(f"index.sqlite3 size:                         {index_size / 1e6:8.1f} MB")


if __name__ == "__main__":
    main()
