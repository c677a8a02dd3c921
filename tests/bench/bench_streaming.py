"""Streaming throughput: a scripted model that emits 100,000 text deltas as fast as it can.

The agent plays a model script (``--model-script``) whose one answer has 100,000 text chunks;
the client sends ``session/prompt`` and reads until the answer, counting the ``session/update``
lines and the bytes. The baseline is ``bare.py stream``: a tiny Python program that writes the
same number of ``session/update`` lines (``json.dumps`` each) to stdout, read by the same
client the same way. Updates per second and bytes per second, medians over the repeats.

    python -m tests.bench.bench_streaming [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.bench.common import (
    Client,
    Row,
    log,
    median,
    scratch,
    spawn_agent,
    text_chunks,
    write_script,
)

DELTAS = 100_000


def _runs(root: Path, repeats: int, deltas: int
          ) -> tuple[list[tuple[float, int, int]], list[tuple[float, int, int]]]:
    """(seconds, updates, bytes) of each run, the agent's and the bare loop's, alternating (the
    machine's load changes; both see the same)."""
    from iaccode.llm.script import reply

    chunks = text_chunks(deltas)
    script = write_script(root / "script.json", [reply(chunks) for _ in range(repeats)])
    project = root / "project"
    project.mkdir()
    agent_runs: list[tuple[float, int, int]] = []
    bare_runs: list[tuple[float, int, int]] = []
    argv = [sys.executable, str(Path(__file__).with_name("bare.py")), "stream", str(deltas)]
    with spawn_agent(root / "home", "--model-script", str(script)) as agent, Client(argv) as bare:
        agent.initialize()
        assert bare.line(30) == b"ready"
        for _ in range(repeats):
            session = agent.new_session(project)
            before = agent.bytes_read
            began = time.perf_counter()
            response, updates = agent.count_until_response(agent.prompt_request(session))
            elapsed = time.perf_counter() - began
            assert response["result"]["stopReason"] == "end_turn", response
            assert updates >= deltas, updates
            agent_runs.append((elapsed, updates, agent.bytes_read - before))

            before = bare.bytes_read
            began = time.perf_counter()
            _, updates = bare.count_until_response(bare.send_request("go"))
            bare_runs.append((time.perf_counter() - began, updates, bare.bytes_read - before))
    return agent_runs, bare_runs


def run(quick: bool = False) -> list[Row]:
    repeats = 2 if quick else 5
    deltas = 20_000 if quick else DELTAS
    log(f"streaming {deltas} deltas x {repeats}")
    with scratch("streaming") as root:
        agent, bare = _runs(root, repeats, deltas)
    rate = median([n / t for t, n, _ in agent])
    bare_rate = median([n / t for t, n, _ in bare])
    byte_rate = median([b / t for t, _, b in agent]) / 1e6
    bare_byte_rate = median([b / t for t, _, b in bare]) / 1e6
    seconds = median([t for t, _, _ in agent])
    note = f"{deltas:,} deltas in {seconds:.2f} s (median of {repeats})"
    return [
        Row("streaming", "updates per second", rate, "/s", bare_rate, "bare loop",
            "≥ 0.5× bare loop", rate >= 0.5 * bare_rate, note=note,
            extra={"agent_runs": agent, "bare_runs": bare}),
        Row("streaming", "stdout bytes per second", byte_rate, "MB/s", bare_byte_rate,
            "bare loop", "≥ 0.5× bare loop", byte_rate >= 0.5 * bare_byte_rate),
    ]


if __name__ == "__main__":
    from tests.bench.__main__ import main

    main(["--only", "streaming", *sys.argv[1:]])
