"""Cold start and the ``session/new`` round trip.

- spawn -> ``initialize`` answered, against ``python -c "import trio"`` that echoes one line
  (the same client sends the same line right after the spawn and waits for a line back);
  runs alternate, medians over the repeats;
- ``session/new`` round trip in a running agent (the median of many; the first one after
  ``initialize`` is shown apart), against the round trip of a bare Python echo process;
- the first ``session/new`` after ``initialize`` with the Anthropic provider, whose SDK import
  (``preload``) runs in a worker thread just then (informational).

    python -m tests.bench.bench_startup [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.bench.common import (
    Client,
    Row,
    agent_command,
    agent_env,
    log,
    median,
    ms,
    scratch,
    spawn_agent,
)

FLOOR = [sys.executable, "-c",
         "import sys, trio; sys.stdout.buffer.write(sys.stdin.buffer.readline()); "
         "sys.stdout.flush()"]
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
        b'"clientCapabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n')


def _spawn_to_first_line(argv: list[str], env: dict[str, str], stderr: Path) -> float:
    began = time.perf_counter()
    client = Client(argv, env, stderr=stderr)
    try:
        client.send_raw(INIT)
        client.line(30)
        return time.perf_counter() - began
    finally:
        client.close()


def cold_start(repeats: int) -> list[Row]:
    with scratch("startup") as root:
        env = agent_env(root / "home", IAC_CODE_MODEL_SCRIPT=str(_empty_script(root)))
        (root / "home").mkdir()
        floor: list[float] = []
        agent: list[float] = []
        for index in range(repeats + 1):
            f = _spawn_to_first_line(FLOOR, env, root / "floor.err")
            a = _spawn_to_first_line(agent_command(), env, root / "agent.err")
            if index:  # the first pair warms the page cache
                floor.append(f)
                agent.append(a)
    value, base = median(agent), median(floor)
    return [Row("cold start", "spawn → initialize answered", ms(value), "ms", ms(base),
                "python -c 'import trio'", "≤ 1.3× floor", value <= 1.3 * base,
                extra={"agent_ms": [ms(x) for x in agent], "floor_ms": [ms(x) for x in floor]})]


def _empty_script(root: Path) -> Path:
    path = root / "empty-script.json"
    path.write_text('{"version": 1, "exchanges": []}')
    return path


def session_new(repeats: int) -> list[Row]:
    with scratch("session-new") as root:
        project = root / "project"
        project.mkdir()
        echo_times: list[float] = []
        with Client([sys.executable, str(Path(__file__).with_name("bare.py")), "echo"]) as echo:
            for _ in range(repeats + 5):
                began = time.perf_counter()
                echo.call("session/new", {"cwd": str(project), "mcpServers": []})
                echo_times.append(time.perf_counter() - began)
        echo_times = echo_times[5:]

        times: list[float] = []
        with spawn_agent(root / "home", "--model-script", str(_empty_script(root))) as agent:
            agent.initialize()
            began = time.perf_counter()
            agent.new_session(project)
            first = time.perf_counter() - began
            for _ in range(repeats):
                began = time.perf_counter()
                agent.new_session(project)
                times.append(time.perf_counter() - began)

        # The Anthropic provider: its SDK is imported in a worker thread right after initialize.
        firsts: list[float] = []
        for index in range(3):
            home = root / f"home-anthropic-{index}"
            with spawn_agent(home, ANTHROPIC_API_KEY="bench-no-network") as agent:
                agent.initialize()
                began = time.perf_counter()
                agent.new_session(project)
                firsts.append(time.perf_counter() - began)
    value, base = median(times), median(echo_times)
    return [
        Row("cold start", "session/new round trip (median)", ms(value), "ms", ms(base),
            "bare echo round trip", "< 5 ms", ms(value) < 5.0,
            note=f"n={len(times)}; the first one after initialize took {ms(first):.1f} ms",
            extra={"first_ms": ms(first), "p90_ms": ms(sorted(times)[int(len(times) * 0.9)])}),
        Row("cold start", "first session/new, Anthropic provider (SDK preloading)",
            ms(median(firsts)), "ms", ms(base), "bare echo round trip", "", None,
            note="informational: the SDK import runs in a thread right after initialize",
            extra={"runs_ms": [ms(x) for x in firsts]}),
    ]


def run(quick: bool = False) -> list[Row]:
    log("cold start")
    rows = cold_start(5 if quick else 15)
    log("session/new")
    rows += session_new(30 if quick else 200)
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import main

    main(["--only", "startup", *sys.argv[1:]])
