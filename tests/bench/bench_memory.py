"""Memory: RSS of the agent at idle, per idle session, and with 50 sessions streaming at once.

- idle: RSS after ``initialize`` (and half a second to settle), scripted model; against the RSS
  of ``python -c "import trio"`` idling on stdin (the floor of our stack). Also the RSS with
  the Anthropic provider once its SDK has been preloaded (what an editor with an API key
  sees), against the smallest installed peer (``peers.py``) idle after the same
  ``initialize`` (its whole process tree), and the SDK's own cost: ``python -c "import
  anthropic"`` against a bare ``python``;
- per idle session: (RSS after 1,000 ``session/new`` - RSS before) / 1,000; against the same
  for ``bare.py sessions``: trio tasks that each hold a nursery and two open files, which is
  what a live session minimally holds;
- 50 sessions streaming at once: the peak RSS (sampled every 10 ms) while 50 prompts stream
  2,000 deltas each, against the RSS of the same agent just before.

    python -m tests.bench.bench_memory [--quick]
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

from tests.bench import peers
from tests.bench.common import (
    MIB,
    Client,
    Row,
    log,
    rss_bytes,
    scratch,
    spawn_agent,
    text_chunks,
    write_script,
)

KIB = 1024
IDLE = "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.readline()"
IDLE_FLOOR = [sys.executable, "-c", "import trio; " + IDLE]
IDLE_SDK = [sys.executable, "-c", "import anthropic; " + IDLE]
IDLE_PYTHON = [sys.executable, "-c", IDLE]


def _settled_rss(pid: int, seconds: float = 0.5) -> int:
    time.sleep(seconds)
    return rss_bytes(pid)


def _tree_rss(pid: int) -> int:
    """RSS of a process and its children (a Node agent may start helpers)."""
    import psutil

    total = rss_bytes(pid)
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):  # gone meanwhile: it holds no memory now
            total += int(child.memory_info().rss)
    return total


def _idle_rss(argv: list[str]) -> int:
    with Client(argv) as process:
        assert process.line(60) == b"ready"
        return _settled_rss(process.pid)


def _peer_idle_rss(peer: peers.Peer, home: Path) -> int:
    """The peer's RSS after ``initialize``, once it stops growing."""
    with Client(peer.argv, peer.environment(home), stderr=home / "stderr.log") as client:
        client.initialize()
        rss, previous = _tree_rss(client.pid), 0
        deadline = time.perf_counter() + 20
        while abs(rss - previous) > 256 * KIB and time.perf_counter() < deadline:
            time.sleep(1.0)
            previous, rss = rss, _tree_rss(client.pid)
        client.proc.kill()
    return rss


def idle(root: Path) -> list[Row]:
    script = root / "empty.json"
    script.write_text('{"version": 1, "exchanges": []}')
    floor_rss = _idle_rss(IDLE_FLOOR)
    with spawn_agent(root / "home-idle", "--model-script", str(script)) as agent:
        agent.initialize()
        rss = _settled_rss(agent.pid)
    with spawn_agent(root / "home-sdk", ANTHROPIC_API_KEY="bench-no-network") as agent:
        agent.initialize()
        # The SDK is imported in the background once the loop is quiet (iaccode/preload.py):
        # wait until RSS settles.
        sdk_rss, previous = rss_bytes(agent.pid), 0
        deadline = time.perf_counter() + 20
        while abs(sdk_rss - previous) > 256 * KIB and time.perf_counter() < deadline:
            previous, sdk_rss = sdk_rss, _settled_rss(agent.pid, 1.0)
    python_rss, sdk_alone = _idle_rss(IDLE_PYTHON), _idle_rss(IDLE_SDK)
    rows = [
        Row(
            "memory",
            "RSS at idle",
            rss / MIB,
            "MiB",
            floor_rss / MIB,
            "idle python + trio",
            "< 60 MiB",
            rss < 60 * MIB,
        ),
        Row(
            "memory",
            "RSS at idle, Anthropic provider (SDK preloaded)",
            sdk_rss / MIB,
            "MiB",
            floor_rss / MIB,
            "idle python + trio",
            "< 60 MiB",
            sdk_rss < 60 * MIB,
            note="with an API key the SDK is imported in the background after initialize",
        ),
        Row(
            "memory",
            "the Anthropic SDK alone: python -c 'import anthropic'",
            sdk_alone / MIB,
            "MiB",
            python_rss / MIB,
            "idle python",
            "",
            None,
            note=f"the SDK with httpx and pydantic adds {(sdk_alone - python_rss) / MIB:.1f} MiB",
        ),
    ]
    found = {
        peer.label: _peer_idle_rss(peer, root / f"peer-{peer.name}") for peer in peers.installed()
    }
    if found:
        best = min(found, key=found.__getitem__)
        others = ", ".join(f"{label} {value / MIB:.1f} MiB" for label, value in found.items())
        rows.append(
            Row(
                "memory",
                "RSS at idle, Anthropic provider, against the peers",
                sdk_rss / MIB,
                "MiB",
                found[best] / MIB,
                best,
                "≤ 1.0× smallest peer",
                sdk_rss <= found[best],
                note=f"each after initialize, settled (its process tree): {others}",
            )
        )
    return rows


def per_session(root: Path, count: int) -> list[Row]:
    script = root / "empty.json"
    project = root / "project"
    project.mkdir(exist_ok=True)
    with spawn_agent(root / "home-sessions", "--model-script", str(script)) as agent:
        agent.initialize()
        agent.new_session(project)  # first-use costs (imports, converter hooks) not counted
        before = _settled_rss(agent.pid)
        for _ in range(count):
            agent.new_session(project)
        after = _settled_rss(agent.pid)
    argv = [sys.executable, str(Path(__file__).with_name("bare.py")), "sessions", str(count)]
    with Client(argv) as bare:
        assert bare.line(30) == b"ready"
        bare_before = _settled_rss(bare.pid)
        bare.send_raw(b"go\n")
        assert bare.line(60) == b"started"
        bare_after = _settled_rss(bare.pid)
        bare.send_raw(b"stop\n")
    value = (after - before) / count / KIB
    base = (bare_after - bare_before) / count / KIB
    return [
        Row(
            "memory",
            "RSS per idle session",
            value,
            "KiB",
            base,
            "trio task + nursery + 2 open files",
            "< 100 KiB",
            value < 100,
            note=f"{count:,} sessions from session/new: {before / MIB:.1f} → {after / MIB:.1f} MiB",
        )
    ]


def streaming(root: Path, sessions: int, deltas: int) -> list[Row]:
    from acp_conformance.script import reply

    script = write_script(root / "many.json", [reply(text_chunks(deltas)) for _ in range(sessions)])
    project = root / "project"
    project.mkdir(exist_ok=True)
    with spawn_agent(root / "home-many", "--model-script", str(script)) as agent:
        agent.initialize()
        ids = [agent.new_session(project) for _ in range(sessions)]
        before = _settled_rss(agent.pid)
        pending = {agent.prompt_request(session) for session in ids}
        peak = before
        last_sample = 0.0
        began = time.perf_counter()
        while pending:
            now = time.perf_counter()
            if now - last_sample >= 0.01:
                peak = max(peak, rss_bytes(agent.pid))
                last_sample = now
            line = agent.poll_line(0.01)
            if line is None or line.startswith(b'{"jsonrpc":"2.0","method"'):
                continue
            if b'"result"' in line or b'"error"' in line:
                import json

                message = json.loads(line)
                assert message.get("result", {}).get("stopReason") == "end_turn", message
                pending.discard(message["id"])
        elapsed = time.perf_counter() - began
        peak = max(peak, rss_bytes(agent.pid))
    return [
        Row(
            "memory",
            f"peak RSS, {sessions} sessions streaming at once",
            peak / MIB,
            "MiB",
            before / MIB,
            "the same agent just before",
            "",
            None,
            note=f"{sessions} × {deltas:,} deltas in {elapsed:.1f} s; the scripted model "
            "holds all its events in memory from the start",
        )
    ]


def run(quick: bool = False) -> list[Row]:
    with scratch("memory") as root:
        log("memory at idle")
        rows = idle(root)
        count = 200 if quick else 1_000
        log(f"memory per idle session ({count})")
        rows += per_session(root, count)
        log("memory with 50 sessions streaming")
        rows += streaming(root, 50, 500 if quick else 2_000)
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import main

    main(["--only", "memory", *sys.argv[1:]])
