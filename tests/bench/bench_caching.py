"""Prompt caching: the input tokens a 30-request tool loop is billed, with and without caching.

A real ``iaccode acp`` with the Anthropic provider talks to the fake Messages API with its
prompt-cache accounting on (``acp_conformance/fakes/prompt_cache.py``): the fake reads the
breakpoints the provider marked in each request and computes, from the request bytes, which
prefix was read from cache, which was written, and what is plain input. The model reads 29 Terraform
files one call at a time, then answers: 30 requests, each its predecessor plus one tool result.

Billed input is priced with the API's published multipliers: a cache write costs 1.25x an
input token, a cache read 0.1x. The baseline is the same requests without caching: every
input token at 1x. The figure is deterministic (token counts, not timings).

    python -m tests.bench.bench_caching
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.bench.common import Row, log, scratch, spawn_agent

REQUESTS = 30
WRITE_PRICE = 1.25
READ_PRICE = 0.1
TARGET_SHARE = 0.35
"""Cached billing should be at most this share of the uncached (a long loop reads ~all)."""


def _workspace(project: Path, files: int) -> None:
    project.mkdir()
    for number in range(files):
        body = "".join(
            f'resource "aws_instance" "web_{number}_{i}" {{\n  ami = "ami-{number:04d}{i:04d}"\n'
            f'  instance_type = "t3.micro"\n  tags = {{ Name = "web-{number}-{i}" }}\n}}\n\n'
            for i in range(12)
        )
        (project / f"module_{number:02d}.tf").write_text(body)


def measure(root: Path) -> list[dict[str, int]]:
    """Each request's usage as the fake API computed it."""
    from acp_conformance.fakes.messages import FakeModelServer
    from acp_conformance.script import ToolUse, reply

    project = root / "project"
    _workspace(project, REQUESTS - 1)
    exchanges = [
        reply(
            f"Reading module {n:02d}.",
            tool_uses=[ToolUse(f"toolu_{n:02d}", "read_file", {"path": f"module_{n:02d}.tf"})],
        )
        for n in range(REQUESTS - 1)
    ]
    exchanges.append(reply("Read all the modules: every instance is a t3.micro."))
    with (
        FakeModelServer(exchanges, prompt_cache=True) as server,
        spawn_agent(
            root / "home", ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=server.base_url
        ) as agent,
    ):
        agent.initialize()
        session = agent.new_session(project)
        response = agent.response(agent.prompt_request(session, "Read every module."), 120)
        assert response["result"]["stopReason"] == "end_turn", response
        usage = server.cache_usage
        assert len(usage) == REQUESTS, (len(usage), server.problems)
    return usage


def run(quick: bool = False) -> list[Row]:
    log(f"a {REQUESTS}-request tool loop against the fake API's prompt cache")
    with scratch("caching") as root:
        usage = measure(root)
    read = sum(u["cache_read_input_tokens"] for u in usage)
    written = sum(u["cache_creation_input_tokens"] for u in usage)
    plain = sum(u["input_tokens"] for u in usage)
    uncached = plain + read + written
    billed = plain + WRITE_PRICE * written + READ_PRICE * read
    note = (
        f"{REQUESTS} requests, {uncached:,} input tokens: {read:,} read from cache (0.1×), "
        f"{written:,} written (1.25×), {plain:,} uncached"
    )
    return [
        Row(
            "caching",
            f"input tokens billed, {REQUESTS}-request tool loop",
            billed,
            "tokens",
            uncached,
            "the same requests without caching",
            f"≤ {TARGET_SHARE}× uncached",
            billed <= TARGET_SHARE * uncached,
            note=note,
            extra={"usage": usage},
        )
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
