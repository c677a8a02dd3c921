"""``session/load`` of long histories, and ``session/list`` with many sessions on disk.

Load: histories of 1,000, 10,000 and 100,000 messages are written with ``iaccode.store``
(records ``{"type": "message", "message": {...}}`` as ``iaccode/turn/transcript.py`` writes
them; user prompts keep their ACP blocks for replay). Each sample spawns a fresh agent,
initializes it, waits for one answer of the full server (an unknown ``_bench/ready``
request: initialize itself is answered before the server has loaded) and times
``session/load`` from the request to its answer, the replay of every
message as a ``session/update`` included. The baseline is ``bare.py replay``: a Python program
that reads the same file, parses every line and writes one update line per message, read by
the same client. Growth: the time for 100,000 messages over the time for 10,000 (10 is linear).

List: 10,000 sessions (``meta.json``, a short history, a lock file each, as the store writes
them); ``session/list`` is timed in a running agent, the first call (which builds the index)
apart from the median of the next ones. The baseline is the floor of any listing that checks
the disk: one ``scandir`` of the root and one ``stat`` per ``meta.json``, in this process.

    python -m tests.bench.bench_sessions [--quick]
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.bench.common import (
    Client,
    Row,
    log,
    median,
    ms,
    scratch,
    spawn_agent,
)

SIZES = [1_000, 10_000, 100_000]
LIST_SESSIONS = 10_000
CWDS = [f"/home/dev/project-{i}" for i in range(20)]

USER_TEXT = (
    "Please look at the failing test in tests/test_parser.py and explain why the "
    "tokenizer drops the last token; then fix it."
)
ASSISTANT_TEXT = (
    "The tokenizer stops one character early: `while i < len(text) - 1` skips the "
    "final character, so a token that ends the input is never emitted. I changed "
    "the loop bound to `len(text)` and added a test for input that ends in an "
    "identifier. The whole suite passes now; the change is three lines in "
    "parser/tokenize.py and one new test."
)


def message_records(count: int) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    for index in range(count):
        if index % 2 == 0:
            text = f"{USER_TEXT} ({index})"
            records.append(
                {
                    "type": "message",
                    "message": {"role": "user", "content": [{"type": "text", "text": text}]},
                    "prompt": [{"type": "text", "text": text}],
                }
            )
        else:
            records.append(
                {
                    "type": "message",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"{ASSISTANT_TEXT} ({index})"}],
                    },
                }
            )
    return records


def write_history(sessions_root: Path, cwd: Path, count: int) -> str:
    """A session of ``count`` messages, written through the store; returns its id."""
    from iaccode.store import SessionMeta, SessionStore, new_session_id, utc_now

    store = SessionStore(sessions_root)
    stamp = utc_now()
    meta = SessionMeta(
        session_id=new_session_id(),
        cwd=str(cwd),
        created_at=stamp,
        updated_at=stamp,
        model="claude-sonnet-5-5",
        mode="default",
        title=f"A history of {count} messages",
    )
    records = message_records(count)
    with store.create(meta) as file:
        for start in range(0, count, 5_000):
            file.append_many(records[start : start + 5_000])
        file.write_meta(SessionMeta(**{**meta.to_json(), "message_count": count}))
    return meta.session_id


def _load_once(home: Path, cwd: Path, session_id: str) -> tuple[float, int]:
    updates = [0]

    def count(_: bytes) -> None:
        updates[0] += 1

    with spawn_agent(home, "--model-script", str(home / "empty.json")) as agent:
        agent.initialize()
        # A round trip after initialize: the cold start rows time the start, this one the
        # load itself.
        agent.response(agent.send_request("_bench/ready", {}))
        began = time.perf_counter()
        response = agent.response(
            agent.send_request(
                "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
            ),
            300,
            on_update=count,
        )
        elapsed = time.perf_counter() - began
    assert "result" in response, response
    return elapsed, updates[0]


def load(root: Path, quick: bool) -> list[Row]:
    home = root / "home"
    (home / "sessions").mkdir(parents=True)
    (home / "empty.json").write_text('{"version": 1, "exchanges": []}')
    cwd = root / "project"
    cwd.mkdir()
    sizes = SIZES[:2] if quick else SIZES
    rows = []
    medians: dict[int, tuple[float, float]] = {}
    for size in sizes:
        repeats = 3 if size >= 100_000 or quick else 5
        log(f"load {size} messages x {repeats}")
        session_id = write_history(home / "sessions", cwd, size)
        history = home / "sessions" / session_id / "history.jsonl"
        times, bare_times = [], []
        argv = [sys.executable, str(Path(__file__).with_name("bare.py")), "replay", str(history)]
        with Client(argv) as bare:  # alternating with the agent: both see the same load
            assert bare.line(30) == b"ready"
            for index in range(repeats + 1):
                elapsed, updates = _load_once(home, cwd, session_id)
                assert updates >= size, (updates, size)
                began = time.perf_counter()
                bare.response(bare.send_request("go"), 300)
                if index:  # the first warms the page cache
                    times.append(elapsed)
                    bare_times.append(time.perf_counter() - began)
        value, base = median(times), median(bare_times)
        medians[size] = (value, base)
        target, met = ("< 300 ms", ms(value) < 300) if size == 10_000 else ("", None)
        rows.append(
            Row(
                "sessions",
                f"session/load, {size:,} messages",
                ms(value),
                "ms",
                ms(base),
                "bare replay",
                target,
                met,
                note=f"{history.stat().st_size / 1e6:.1f} MB history, "
                f"{ms(value) * 1000 / size:.0f} µs per message",
                extra={"samples_ms": [ms(t) for t in times]},
            )
        )
    if 10_000 in medians and 100_000 in medians:
        growth = medians[100_000][0] / medians[10_000][0]
        bare_growth = medians[100_000][1] / medians[10_000][1]
        rows.append(
            Row(
                "sessions",
                "session/load growth, 10,000 → 100,000 messages",
                growth,
                "×",
                bare_growth,
                "bare replay's growth",
                "linear: ≤ 12.5× (10× ± 25%)",
                growth <= 12.5,
            )
        )
    return rows


def write_sessions(root: Path, count: int) -> None:
    """``count`` sessions as the store lays them out (written directly: creating them one by
    one through the store would fsync tens of thousands of times)."""
    from iaccode.store import SessionMeta, new_session_id
    from iaccode.store.meta import format_timestamp, meta_bytes

    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    history = "".join(
        json.dumps(record, separators=(",", ":")) + "\n" for record in message_records(12)
    )
    for _ in range(count):
        created = start + timedelta(seconds=rng.randrange(30_000_000))
        meta = SessionMeta(
            session_id=new_session_id(),
            cwd=rng.choice(CWDS),
            created_at=format_timestamp(created),
            updated_at=format_timestamp(created + timedelta(seconds=rng.randrange(100_000))),
            model="claude-sonnet-5-5",
            mode="default",
            title=f"Fix the flaky test number {rng.randrange(1000)} in the parser module",
            remembered={"read_file": True},
            message_count=12,
        )
        folder = root / meta.session_id
        folder.mkdir(mode=0o700)
        (folder / "meta.json").write_bytes(meta_bytes(meta))
        (folder / "history.jsonl").write_text(history)
        (folder / "lock").write_bytes(b"")


def listing(root: Path, quick: bool) -> list[Row]:
    from iaccode.store.listing import SessionListing

    count = 2_000 if quick else LIST_SESSIONS
    home = root / "home-list"
    log(f"writing {count} sessions")
    write_sessions(home / "sessions", count)
    (home / "empty.json").write_text('{"version": 1, "exchanges": []}')
    scan = SessionListing(home / "sessions")._scan
    floor: list[float] = []
    times: list[float] = []
    with spawn_agent(home, "--model-script", str(home / "empty.json")) as agent:
        agent.initialize()
        # A round trip after initialize: the cold start rows time the start, this one the
        # load itself.
        agent.response(agent.send_request("_bench/ready", {}))
        began = time.perf_counter()
        first = agent.call("session/list", {})
        first_time = time.perf_counter() - began
        assert len(first["sessions"]) == 50 and first.get("nextCursor"), first.keys()
        for index in range(12):  # alternating with the floor: both see the same load
            params = {"cwd": CWDS[index % len(CWDS)]} if index % 2 else {}
            began = time.perf_counter()
            agent.call("session/list", params)
            times.append(time.perf_counter() - began)
            began = time.perf_counter()
            assert len(scan()) == count
            floor.append(time.perf_counter() - began)
    value, base = median(times), median(floor)
    return [
        Row(
            "sessions",
            f"session/list, {count:,} sessions (median)",
            ms(value),
            "ms",
            ms(base),
            "scandir + stat of every meta.json",
            "< 100 ms",
            ms(value) < 100,
            note=f"the first list, which builds the index, took {ms(first_time):.0f} ms",
            extra={"first_ms": ms(first_time), "samples_ms": [ms(t) for t in times]},
        )
    ]


def run(quick: bool = False) -> list[Row]:
    with scratch("sessions") as root:
        rows = load(root, quick)
        rows += listing(root, quick)
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import main

    main(["--only", "sessions", *sys.argv[1:]])
