"""Cancel latency: from sending ``session/cancel`` to receiving the prompt's answer.

Three cases, each in its own agent (``--model-script``), p50 and p99 over the repeats:

- while streaming: the model streams text deltas as fast as it can; the cancel is sent once
  the 50th update has arrived;
- while bash runs: the model asks for ``bash`` with ``sleep 30`` (mode ``bypass``, set with
  ``session/set_mode``); the cancel is sent 20 ms after the call is reported ``in_progress``;
- while a permission question waits: the model asks for ``bash`` in mode ``default``; the
  client leaves ``session/request_permission`` unanswered and sends the cancel 20 ms after it.

The baseline is the round trip of a bare Python echo process over the same pipes (the floor of
any request and answer). With fewer than 100 samples p99 is the maximum.

    python -m tests.bench.bench_cancel [--quick]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.common import (
    Client,
    Row,
    log,
    median,
    ms,
    percentile,
    scratch,
    spawn_agent,
    text_chunks,
    write_script,
)

STREAM_CHUNKS = 5_000
CANCEL_AFTER_UPDATES = 50
SETTLE = 0.02
"""Seconds between the tool running (or the question arriving) and the cancel."""


def _cancel_and_time(agent: Client, session: str, request_id: int) -> tuple[float, dict[str, Any]]:
    began = time.perf_counter()
    agent.notify("session/cancel", {"sessionId": session})
    response = agent.response(request_id, 30, on_request=lambda message: None)
    return time.perf_counter() - began, response


def streaming(root: Path, repeats: int) -> list[float]:
    from acp_conformance.script import reply

    script = write_script(
        root / "stream.json", [reply(text_chunks(STREAM_CHUNKS)) for _ in range(repeats)]
    )
    times = []
    with spawn_agent(root / "home-stream", "--model-script", str(script)) as agent:
        agent.initialize()
        session = agent.new_session(root)
        for _ in range(repeats):
            request_id = agent.prompt_request(session)
            seen = 0
            while seen < CANCEL_AFTER_UPDATES:
                line = agent.line(30)
                if b'"agent_message_chunk"' in line:
                    seen += 1
            elapsed, response = _cancel_and_time(agent, session, request_id)
            stop = response.get("result", {}).get("stopReason")
            assert stop == "cancelled", f"the stream ended before the cancel: {response}"
            times.append(elapsed)
    return times


def _bash_script(path: Path, repeats: int) -> Path:
    from acp_conformance.script import ToolUse, reply

    return write_script(
        path,
        [
            reply(
                "",
                tool_uses=[ToolUse(f"toolu_{i:04d}", "bash", {"command": "sleep 30"})],
                stop_reason="tool_use",
            )
            for i in range(repeats)
        ],
    )


def bash(root: Path, repeats: int) -> list[float]:
    script = _bash_script(root / "bash.json", repeats)
    times = []
    with spawn_agent(root / "home-bash", "--model-script", str(script)) as agent:
        agent.initialize()
        session = agent.new_session(root)
        agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
        for _ in range(repeats):
            request_id = agent.prompt_request(session)
            while True:
                line = agent.line(30)
                if b'"tool_call_update"' in line and b'"in_progress"' in line:
                    break
            time.sleep(SETTLE)
            elapsed, response = _cancel_and_time(agent, session, request_id)
            assert response.get("result", {}).get("stopReason") == "cancelled", response
            times.append(elapsed)
    return times


def permission(root: Path, repeats: int) -> list[float]:
    script = _bash_script(root / "permission.json", repeats)
    times = []
    with spawn_agent(root / "home-permission", "--model-script", str(script)) as agent:
        agent.initialize()
        session = agent.new_session(root)
        for _ in range(repeats):
            request_id = agent.prompt_request(session)
            while True:
                line = agent.line(30)
                if b'"session/request_permission"' in line:
                    question = json.loads(line)
                    assert question["params"]["toolCall"]["toolCallId"].startswith("toolu_")
                    break
            time.sleep(SETTLE)
            elapsed, response = _cancel_and_time(agent, session, request_id)
            assert response.get("result", {}).get("stopReason") == "cancelled", response
            times.append(elapsed)
    return times


def echo_round_trip(repeats: int = 200) -> float:
    times = []
    with Client([sys.executable, str(Path(__file__).with_name("bare.py")), "echo"]) as echo:
        for _ in range(repeats):
            began = time.perf_counter()
            echo.call("ping", {})
            times.append(time.perf_counter() - began)
    return median(times[10:])


def run(quick: bool = False) -> list[Row]:
    rows = []
    with scratch("cancel") as root:
        floor = echo_round_trip()
        cases = [
            ("while streaming", streaming, 10 if quick else 100),
            ("while bash runs", bash, 5 if quick else 40),
            ("while a permission question waits", permission, 10 if quick else 100),
        ]
        for label, measure, repeats in cases:
            log(f"cancel {label} x {repeats}")
            times = measure(root, repeats)
            p50, p99 = percentile(times, 50), percentile(times, 99)
            note = f"n={len(times)}, p50 {ms(p50):.1f} ms, max {ms(max(times)):.1f} ms"
            rows.append(
                Row(
                    "cancel",
                    f"p99 {label}",
                    ms(p99),
                    "ms",
                    ms(floor),
                    "bare echo round trip",
                    "< 50 ms",
                    ms(p99) < 50,
                    note=note,
                    extra={"samples_ms": [ms(t) for t in times]},
                )
            )
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import main

    main(["--only", "cancel", *sys.argv[1:]])
