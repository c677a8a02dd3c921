"""Streaming throughput: a scripted model that emits 100,000 text deltas as fast as it can.

The agent plays a model script (``--model-script``) whose one answer has 100,000 text chunks;
the client sends ``session/prompt`` and reads until the answer, counting the ``session/update``
lines and the bytes. The baseline is ``bare.py stream``: a tiny Python program that writes the
same number of ``session/update`` lines (``json.dumps`` each) to stdout, read by the same
client the same way. Updates per second and bytes per second, medians over the repeats.

The same client then measures each provider on its real SDK: the Anthropic provider against
the fake Messages API and the OpenAI-compatible provider against the fake Chat Completions API
(``acp_conformance.fakes``, each serving from its own process over loopback HTTP + SSE),
20,000 deltas per answer. Their baseline is the scripted model's rate from this run (no
HTTP), so the ratio is what the SDK, the HTTP stream and the fake cost.

    python -m tests.bench.bench_streaming [--quick]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
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
PROVIDER_DELTAS = 20_000
ROOT = Path(__file__).resolve().parents[2]

PROVIDERS: dict[str, tuple[str, Callable[[str], dict[str, str]]]] = {
    "Anthropic": (
        "acp_conformance.fakes.messages",
        lambda url: {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": url},
    ),
    "OpenAI-compatible": (
        "acp_conformance.fakes.chat",
        lambda url: {
            "IAC_CODE_PROVIDER": "openai",
            "OPENAI_API_KEY": "bench",
            "IAC_CODE_BASE_URL": url,
        },
    ),
}
"""Provider -> (the fake API serving it, the environment pointing the agent at it)."""


def _one_answer(agent: Client, project: Path, deltas: int) -> tuple[float, int, int]:
    """(seconds, updates, bytes) of one prompt in a new session, answered with ``deltas``."""
    session = agent.new_session(project)
    before = agent.bytes_read
    began = time.perf_counter()
    response, updates = agent.count_until_response(agent.prompt_request(session))
    elapsed = time.perf_counter() - began
    assert response["result"]["stopReason"] == "end_turn", response
    assert updates >= deltas, updates
    return elapsed, updates, agent.bytes_read - before


def _runs(
    root: Path, repeats: int, deltas: int
) -> tuple[list[tuple[float, int, int]], list[tuple[float, int, int]]]:
    """(seconds, updates, bytes) of each run, the agent's and the bare loop's, alternating (the
    machine's load changes; both see the same)."""
    from acp_conformance.script import reply

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
            agent_runs.append(_one_answer(agent, project, deltas))

            before = bare.bytes_read
            began = time.perf_counter()
            _, updates = bare.count_until_response(bare.send_request("go"))
            bare_runs.append((time.perf_counter() - began, updates, bare.bytes_read - before))
    return agent_runs, bare_runs


def _provider_runs(
    root: Path, provider: str, repeats: int, deltas: int
) -> list[tuple[float, int, int]]:
    """(seconds, updates, bytes) of each answer streamed through ``provider``'s SDK."""
    from acp_conformance.script import reply

    module, environment = PROVIDERS[provider]
    folder = root / provider
    folder.mkdir()
    # A first, short answer imports the SDK and opens the connection: not measured.
    script = write_script(
        folder / "script.json", [reply("warm up"), *[reply(text_chunks(deltas))] * repeats]
    )
    server_argv = [sys.executable, "-m", module, "--script", str(script)]
    with Client(server_argv, cwd=ROOT, stderr=folder / "server.log") as server:
        ready = server.line(30).decode()
        assert ready.startswith("READY "), ready
        env = environment(ready.split(" ", 1)[1].strip())
        with spawn_agent(folder / "home", **env) as agent:
            agent.initialize()
            response, _ = agent.count_until_response(
                agent.prompt_request(agent.new_session(root / "project"))
            )
            assert response["result"]["stopReason"] == "end_turn", response
            runs = [_one_answer(agent, root / "project", deltas) for _ in range(repeats)]
        server.proc.terminate()  # the fake serves until SIGTERM
    return runs


def run(quick: bool = False) -> list[Row]:
    repeats = 2 if quick else 5
    deltas = 20_000 if quick else DELTAS
    log(f"streaming {deltas} deltas x {repeats}")
    provider_deltas = 5_000 if quick else PROVIDER_DELTAS
    with scratch("streaming") as root:
        agent, bare = _runs(root, repeats, deltas)
        through = {}
        for provider in PROVIDERS:
            log(f"streaming {provider_deltas} deltas x {repeats} through the {provider} provider")
            through[provider] = _provider_runs(root, provider, repeats, provider_deltas)
    rate = median([n / t for t, n, _ in agent])
    bare_rate = median([n / t for t, n, _ in bare])
    byte_rate = median([b / t for t, _, b in agent]) / 1e6
    bare_byte_rate = median([b / t for t, _, b in bare]) / 1e6
    seconds = median([t for t, _, _ in agent])
    note = f"{deltas:,} deltas in {seconds:.2f} s (median of {repeats})"
    rows = [
        Row(
            "streaming",
            "updates per second",
            rate,
            "/s",
            bare_rate,
            "bare loop",
            "≥ 0.5× bare loop",
            rate >= 0.5 * bare_rate,
            note=note,
            extra={"agent_runs": agent, "bare_runs": bare},
        ),
        Row(
            "streaming",
            "stdout bytes per second",
            byte_rate,
            "MB/s",
            bare_byte_rate,
            "bare loop",
            "≥ 0.5× bare loop",
            byte_rate >= 0.5 * bare_byte_rate,
        ),
    ]
    for provider, runs in through.items():
        seconds = median([t for t, _, _ in runs])
        rows.append(
            Row(
                "streaming",
                f"updates per second, {provider} provider (its SDK, fake API over loopback)",
                median([n / t for t, n, _ in runs]),
                "/s",
                rate,
                "scripted model",
                note=f"{provider_deltas:,} deltas in {seconds:.2f} s (median of {repeats}); "
                f"informational: the fake API in Python shares the cores",
                extra={"runs": runs},
            )
        )
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import main

    main(["--only", "streaming", *sys.argv[1:]])
