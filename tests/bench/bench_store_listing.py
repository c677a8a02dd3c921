"""Benchmark: ``SessionStore.list`` in process, over many sessions (``nox -s bench`` runs it as
``store_listing``; ``bench_sessions`` times ``session/list`` through the agent).

    python -m tests.bench --only store_listing [--quick]
    python -m tests.bench.bench_store_listing [--sessions 10000] [--keep DIR]   # every figure

Generates the sessions in a temporary folder (meta.json, a short history.jsonl and a lock file
each, as the store writes them: ``bench_sessions.write_sessions``), then times:

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
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.bench.bench_sessions import CWDS, LIST_SESSIONS, write_sessions
from tests.bench.common import REPO, Row, log, ms, scratch

SESSIONS = LIST_SESSIONS


def evict(root: Path) -> None:
    """Drop the metas and the index from the page cache (written back first)."""
    from iaccode.store.listing import INDEX_FILE

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
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), str(REPO)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout)


@dataclass
class Figures:
    """Seconds each way of listing took (see the module docstring)."""

    scan_only: float
    no_index: float
    cold_no_index: float
    first: float
    warm: float
    warm_all: float
    second_page: float
    after_change: float
    cold_index: float
    index_bytes: int


def measure(root: Path, count: int) -> Figures:
    from iaccode.store import SessionMeta, SessionStore
    from iaccode.store.listing import INDEX_FILE, SessionListing
    from iaccode.store.meta import meta_bytes

    began = time.perf_counter()
    write_sessions(root, count)
    log(f"generated {count} sessions in {time.perf_counter() - began:.1f} s")
    store = SessionStore(root)
    listing = SessionListing(root)
    cwd = CWDS[3]
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
    return Figures(
        scan_only,
        no_index,
        cold_no_index,
        first,
        warm,
        warm_all,
        second_page,
        after_change,
        cold_index,
        (root / INDEX_FILE).stat().st_size,
    )


def run(quick: bool = False) -> list[Row]:
    count = 2_000 if quick else SESSIONS
    with scratch("store-listing") as root:
        found = measure(root / "sessions", count)
    group = "store listing"
    return [
        Row(
            group,
            f"list 50 of {count:,} sessions in process, index up to date",
            ms(found.warm),
            "ms",
            ms(found.no_index),
            "every meta.json read, no index",
            note=f"all cwds {ms(found.warm_all):.1f} ms, the second page "
            f"{ms(found.second_page):.1f} ms, after one meta changed "
            f"{ms(found.after_change):.1f} ms; a stat of every meta.json alone "
            f"{ms(found.scan_only):.1f} ms",
        ),
        Row(
            group,
            "the first list (builds index.sqlite3)",
            ms(found.first),
            "ms",
            ms(found.no_index),
            "every meta.json read, no index",
            note=f"index {found.index_bytes / 1e6:.1f} MB",
        ),
        Row(
            group,
            "a fresh process, page cache cold, with the index",
            ms(found.cold_index),
            "ms",
            ms(found.cold_no_index),
            "the same without the index",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    parser.add_argument("--keep", type=Path, help="generate here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iaccode-bench-") as temp:
        found = measure((args.keep or Path(temp)) / "sessions", args.sessions)

    def shown(seconds: float) -> str:
        return f"{seconds * 1000:8.1f} ms"

    print(f"sessions on disk:                          {args.sessions}")
    print(f"scan + stat every meta.json only:           {shown(found.scan_only)}")
    print(f"no index, read every meta.json (warm):      {shown(found.no_index)}")
    print(f"no index, fresh process, page cache cold:   {shown(found.cold_no_index)}")
    print(f"first list (builds index.sqlite3):          {shown(found.first)}")
    print(f"list(cwd=..., limit=50), index up to date:  {shown(found.warm)}")
    print(f"list(cwd=None, limit=50), index up to date: {shown(found.warm_all)}")
    print(f"second page through the cursor:             {shown(found.second_page)}")
    print(f"list after one meta changed:                {shown(found.after_change)}")
    print(f"fresh process, page cache cold, with index: {shown(found.cold_index)}")
    print(f"index.sqlite3 size:                         {found.index_bytes / 1e6:8.1f} MB")


if __name__ == "__main__":
    main()
