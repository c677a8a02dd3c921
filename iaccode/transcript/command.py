"""``iaccode replay PATH [--agent CMD] [--update]``: exit 0 when the replay matches, 1 with a
readable diff naming the first message that diverged, 2 when the transcript cannot be used."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import trio

from iaccode.transcript.format import TranscriptError
from iaccode.transcript.replay import replay, write_updated


def run_replay(path: Path, agent: str | None, update: bool) -> int:
    command = shlex.split(agent) if agent else None
    try:
        result = trio.run(lambda: replay(path, agent_command=command, update=update))
    except TranscriptError as exc:
        print(f"iaccode replay: {exc}", file=sys.stderr)
        return 2
    if update:
        write_updated(path, result.actual_records)
        print(f"{path}: rewritten from this run ({result.compared} agent messages)")
        return 0
    if result.divergence is not None:
        print(f"{path}: replay diverged\n{result.divergence}", file=sys.stderr)
        return 1
    print(f"{path}: {result.compared} agent messages match")
    return 0
