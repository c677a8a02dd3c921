"""Path races under a hostile model: a symlink flipped between the check and the use.

A real ``iaccode acp`` (real SDK, fake Messages API) runs in ``accept_edits`` mode, so reads and
edits inside the project run without a question and anything outside asks. Meanwhile a process
of the test flips two symlinks in the project as fast as it can, each between an inside target
and an outside one: ``link`` (a file: ``inside.txt`` / the outside ``secret.txt``) and
``linkdir`` (a folder: ``sub`` / an outside folder with its own ``f.txt``). The model asks for
read_file, write_file and edit_file through both, many times. Every call either asked (the test
rejects it), or read or wrote the inside file, or failed with a clear message; the secret
never reaches the model or the editor, and nothing outside the project changes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    asked_ids,
    http_agent,
    reject,
    request_tool_results,
    start,
    tree_snapshot,
)

CATEGORY = "path_races"
SECRET = "SECRET-RACE-OUTSIDE"
CALLS_PER_CASE = 25
"""Calls per (tool, link): 50 per tool, 150 in all."""
CALLS_PER_ANSWER = 5
CHANGED = "changed while being opened"


@pytest.fixture
def model_server():  # type: ignore[no-untyped-def]
    with FakeModelServer() as server:
        yield server


_FLIP = """
import json, os, signal, sys
workspace, pairs = json.loads(sys.argv[1])
stop = False
def halt(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, halt)
print("ready", flush=True)
flips = 0
while not stop:
    for side in (0, 1):
        for name, targets in pairs.items():
            temp = os.path.join(workspace, "." + name + ".flip")
            os.symlink(targets[side], temp)
            os.replace(temp, os.path.join(workspace, name))
        flips += 1
print(flips, flush=True)
"""


class Flipper:
    """Flips ``link`` and ``linkdir`` between their inside and outside targets, atomically (a
    new link under a temporary name, renamed over the old one), in a process of its own: a
    thread of the test would flip only when the test's own driver lets go of the GIL, so a
    burst of the agent's checks could all see one side and the race would not be run."""

    def __init__(self, workspace: Path, pairs: dict[str, tuple[Path, Path]]) -> None:
        self.workspace = workspace
        self.pairs = pairs
        self.flips = 0
        self._process: subprocess.Popen[str] | None = None

    def point(self, name: str, target: Path) -> None:
        temp = self.workspace / f".{name}.flip"
        os.symlink(target, temp)
        os.replace(temp, self.workspace / name)

    def __enter__(self) -> Flipper:
        pairs = {
            name: [str(inside), str(outside)] for name, (inside, outside) in self.pairs.items()
        }
        self._process = subprocess.Popen(
            [sys.executable, "-c", _FLIP, json.dumps([str(self.workspace), pairs])],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        assert self._process.stdout.readline() == "ready\n"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGTERM)
        out, _ = self._process.communicate(timeout=10)
        self.flips = int(out)


def racing_calls() -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """Per tool, the calls on both links."""
    calls: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for tool in ("read_file", "write_file", "edit_file"):
        calls[tool] = []
        for tag, path in (("f", "link"), ("d", "linkdir/f.txt")):
            for n in range(CALLS_PER_CASE):
                args: dict[str, Any] = {"path": path}
                if tool == "write_file":
                    args["content"] = "INSIDE alpha\n"
                elif tool == "edit_file":
                    args.update(old_string="alpha", new_string="alpha!")
                calls[tool].append((f"toolu_{tool}_{tag}{n}", tool, args))
    return calls


def uses(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    return reply(tool_uses=[ToolUse(call_id, name, args) for call_id, name, args in calls])


async def test_regression_symlink_swapped_between_check_and_use(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    x = workspace.parent
    (workspace / "inside.txt").write_text("INSIDE alpha\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "f.txt").write_text("INSIDE alpha\n")
    (x / "secret.txt").write_text(f"{SECRET} alpha\n")
    (x / "outdir").mkdir()
    (x / "outdir" / "f.txt").write_text(f"{SECRET} alpha\n")
    pairs = {
        "link": (workspace / "inside.txt", x / "secret.txt"),
        "linkdir": (workspace / "sub", x / "outdir"),
    }
    calls = racing_calls()
    # A few calls per answer: an answer's calls are checked in one quick burst, which a busy
    # machine may run inside one time slice of the flipper; many bursts see both sides.
    model_server.enqueue(
        *(
            uses(c[i : i + CALLS_PER_ANSWER])
            for c in calls.values()
            for i in range(0, len(c), CALLS_PER_ANSWER)
        ),
        reply("done"),
    )

    async with http_agent(tmp_path, model_server.base_url) as agent:
        session = await start(agent, workspace)
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "accept_edits"})
        flipper = Flipper(workspace, pairs)
        for name, (inside, _) in pairs.items():
            flipper.point(name, inside)
        before = tree_snapshot(x, skip=workspace)
        with flipper:
            response, updates, requests = await agent.run_prompt(
                session, "race", reject, timeout=120
            )
        assert response["result"]["stopReason"] == "end_turn", response

    asked = asked_ids(requests)
    results = request_tool_results(model_server.requests[-1].body)
    outcomes: dict[str, dict[str, int]] = {}
    for tool, tool_calls in calls.items():
        counts = outcomes[tool] = {"asked": 0, "inside": 0, "refused": 0}
        for call_id, _, args in tool_calls:
            content = results[call_id]["content"]
            assert SECRET not in content, (call_id, content)
            if call_id in asked:
                assert content == "Permission denied.", (call_id, content)
                counts["asked"] += 1
            elif results[call_id]["is_error"]:
                assert CHANGED in content, (call_id, content)
                counts["refused"] += 1
            else:
                shown = "inside.txt" if args["path"] == "link" else "sub/f.txt"
                expected = {
                    "read_file": "INSIDE alpha",
                    "write_file": f"Wrote {shown}",
                    "edit_file": f"Edited {shown}",
                }[tool]
                assert expected in content, (call_id, content)
                counts["inside"] += 1
        # The race was run: some calls were judged inside, some outside.
        assert counts["asked"] and counts["inside"] + counts["refused"], (tool, counts)
    assert SECRET not in json.dumps(agent.received, ensure_ascii=False)
    assert SECRET not in json.dumps([r.body for r in model_server.requests])
    assert tree_snapshot(x, skip=workspace) == before, "something outside the project changed"
    for name in ("inside.txt", "sub/f.txt"):
        assert (workspace / name).read_text().startswith("INSIDE alpha")
    total = sum(len(c) for c in calls.values())
    figures.add(CATEGORY, "racing_calls", total)
    figures.add(CATEGORY, "cases", len(calls) * len(pairs))
    figures.add(CATEGORY, "link_flips", flipper.flips)
    figures.add(CATEGORY, "asked", sum(o["asked"] for o in outcomes.values()))
