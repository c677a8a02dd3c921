"""Persistence under ``kill -9``: N kills (20; 200 with ``--soak``) at random moments of
scripted sessions that stream, run tools, write records of megabytes and fork, several at once.

After every kill, from the disk: every session reads; everything the client saw finish is
there (a prompt that was answered, a tool call that ended, the assistant message behind a tool
call that started, the user message behind any answer): at most the message being written is
lost; and the history rebuilds (``Transcript`` + ``repair``, as a load does) into a request the
API accepts. Sessions are loaded and continued by later rounds, so most are killed more than
once. At the end, one agent on the real SDK loads every session and prompts it: the requests it
sends are checked too.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from iaccode.llm.script import ToolUse, reply
from iaccode.store.store import SessionStore
from iaccode.turn.transcript import Transcript, api_messages
from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    RoutedModelServer,
    allow,
    guard_violations,
    history_problems,
    http_agent,
    kill_quietly,
    scripted_env,
    survivors,
)
from tests.support.acp_schema import WireChecker
from tests.support.agent_process import SEED_ALIASES, AgentProcess, spawn_agent

CATEGORY = "persistence"


@dataclass
class Turn:
    text: str
    answered: str | None = None
    model_activity: bool = False


@dataclass
class Tracked:
    """What the client saw of one session."""

    session_id: str
    turns: list[Turn] = field(default_factory=list)
    started_calls: set[str] = field(default_factory=set)
    ended_calls: set[str] = field(default_factory=set)


class Menu:
    """Model answers to draw from: streams, thinking, tools, big records."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ids = itertools.count()

    def one(self) -> dict[str, Any]:
        n = next(self.ids)
        choice = self.rng.choice(["text", "text", "thinking", "bash", "big_output",
                                  "big_write", "reads", "slow_bash"])
        if choice == "text":
            return reply([f"t{n}w{i} " for i in range(self.rng.randint(3, 40))],
                         delay=self.rng.choice([0.0, 0.005, 0.02]))
        if choice == "thinking":
            return reply([f"a{n} "] * 5, thinking=[f"h{n}x{i} " for i in range(20)], delay=0.01)
        if choice == "bash":
            return reply(f"running {n}", tool_uses=[ToolUse(f"toolu_{n}", "bash", {
                "command": f"echo out{n}; sleep 0.{self.rng.randint(0, 5)}"})])
        if choice == "slow_bash":
            return reply(tool_uses=[ToolUse(f"toolu_{n}", "bash", {"command": "sleep 5"})])
        if choice == "big_output":
            return reply(tool_uses=[ToolUse(f"toolu_{n}", "bash", {
                "command": "head -c 400000 /dev/zero | tr '\\0' a"})])
        if choice == "big_write":
            return reply(tool_uses=[ToolUse(f"toolu_{n}", "write_file", {
                "path": f"big{n}.txt", "content": "b" * 400_000})])
        return reply(tool_uses=[ToolUse(f"toolu_{n}r{i}", "read_file", {"path": "small.txt"})
                                for i in range(3)])

    def script(self, size: int) -> list[dict[str, Any]]:
        return [self.one() for _ in range(size)]


def stored(root: Path, session_id: str) -> tuple[list[dict[str, Any]], bool]:
    """The records of a session as a reader sees them, and whether the file ends torn."""
    _, records = SessionStore(root).read(session_id)
    history = (root / session_id / "history.jsonl").read_bytes()
    return records, bool(history) and not history.endswith(b"\n")


def check_after_kill(root: Path, tracked: Tracked) -> list[str]:
    records, _ = stored(root, tracked.session_id)
    problems = []
    users = [r["message"] for r in records if r.get("type") == "message"
             and r["message"].get("role") == "user"]
    user_texts = {b.get("text") for m in users for b in m.get("content") or []
                  if isinstance(b, dict)}
    tool_ids = {b.get("id") for r in records if r.get("type") == "message"
                for b in r["message"].get("content") or [] if b.get("type") == "tool_use"}
    call_records = {r["start"].get("toolCallId") for r in records if r.get("type") == "tool_call"}
    for turn in tracked.turns:
        if (turn.answered or turn.model_activity) and turn.text not in user_texts:
            problems.append(f"the prompt {turn.text!r} was lost")
    for index, turn in enumerate(tracked.turns):
        if turn.answered == "end_turn":
            position = next((i for i, r in enumerate(records) if r.get("type") == "message"
                             and any(b.get("text") == turn.text
                                     for b in r["message"].get("content") or [])), None)
            after = records[position + 1:] if position is not None else []
            if not any(r.get("type") == "message" and r["message"]["role"] == "assistant"
                       for r in after):
                problems.append(f"the answer to {turn.text!r} (turn {index}) was lost")
    lost_uses = tracked.started_calls - tool_ids
    if lost_uses:
        problems.append(f"assistant messages behind started tool calls lost: {lost_uses}")
    lost_calls = tracked.ended_calls - call_records
    if lost_calls:
        problems.append(f"ended tool calls lost: {lost_calls}")
    transcript = Transcript.from_records(records)
    transcript.repair()
    bad = history_problems(api_messages(transcript.messages))
    if bad:
        problems.append(f"the next request would be refused: {bad}")
    return problems


async def kill_round(rng: random.Random, menu: Menu, home: Path, workspace: Path,
                     known: dict[str, Tracked], round_no: int, stderr: Path
                     ) -> tuple[list[str], int]:
    """One agent: open some sessions, prompt them all, fork, kill -9 at a random moment.
    Returns the sessions it touched and how many it loaded."""
    env = scripted_env(home, menu.script(40), {"IAC_CODE_LOG_LEVEL": "WARNING"})
    touched: list[str] = []
    loaded = 0
    async with spawn_agent(env, stderr, WireChecker(aliases=SEED_ALIASES)) as agent:
        await agent.initialize()
        for session_id in rng.sample(sorted(known), min(len(known), rng.randint(0, 3))):
            answer = await agent.request("session/load", {
                "sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
            assert "result" in answer, (session_id, answer)
            loaded += 1
            touched.append(session_id)
        for _ in range(rng.randint(1, 2)):
            session_id = await agent.new_session(workspace)
            known[session_id] = Tracked(session_id)
            touched.append(session_id)
        for session_id in touched:
            if rng.random() < 0.6:
                await agent.call("session/set_mode", {"sessionId": session_id,
                                                      "modeId": "bypass"})
        agent._unread.clear()  # the replays of the loads: what was seen before, not now
        serialize_sends(agent)
        pending: dict[int, tuple[str, Turn | None]] = {}

        async def answer_later(message: dict[str, Any]) -> None:
            await trio.sleep(rng.choice([0, 0.01, 0.2]))
            # The agent may have been killed meanwhile.
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await agent.reply(message["id"], allow(message))

        async def read(nursery: trio.Nursery) -> None:
            while True:
                try:
                    message = await agent.receive(timeout=60)
                except (EOFError, AssertionError, ValueError, trio.BrokenResourceError,
                        trio.ClosedResourceError):
                    return
                if message.get("method") == "session/request_permission":
                    nursery.start_soon(answer_later, message)
                elif message.get("method") == "session/update":
                    tracked = known.get(message["params"]["sessionId"])
                    update = message["params"]["update"]
                    if tracked is None or not tracked.turns:
                        continue
                    kind = update["sessionUpdate"]
                    if kind in ("agent_message_chunk", "agent_thought_chunk", "tool_call",
                                "tool_call_update", "usage_update"):
                        tracked.turns[-1].model_activity = True
                    if kind == "tool_call":
                        tracked.started_calls.add(update["toolCallId"])
                    if kind == "tool_call_update" and update.get("status") in (
                            "completed", "failed"):
                        tracked.ended_calls.add(update["toolCallId"])
                elif message.get("id") in pending and "method" not in message:
                    session_id, turn = pending.pop(message["id"])
                    if turn is not None and "result" in message:
                        turn.answered = message["result"]["stopReason"]
                    elif turn is None and "result" in message:  # a fork
                        forked = message["result"]["sessionId"]
                        known[forked] = Tracked(forked)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read, nursery)
            for session_id in touched:
                turn = Turn(f"r{round_no}-{session_id[-6:]}-{len(known[session_id].turns)}")
                known[session_id].turns.append(turn)
                request_id = await agent.send_request("session/prompt", {
                    "sessionId": session_id, "prompt": [{"type": "text", "text": turn.text}]})
                pending[request_id] = (session_id, turn)
            kill_at = rng.uniform(0.05, 0.9)
            if rng.random() < 0.5:
                fork_at = rng.uniform(0, kill_at)
                await trio.sleep(fork_at)
                kill_at -= fork_at
                source = rng.choice(touched)
                request_id = await agent.send_request("session/fork", {
                    "sessionId": source, "cwd": str(workspace), "mcpServers": []})
                pending[request_id] = (source, None)
            await trio.sleep(kill_at)
            agent.process.send_signal(signal.SIGKILL)
            await agent.process.wait()
            await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    kill_quietly(survivors(workspace))  # commands the kill orphaned (not the agent's fault)
    return touched, loaded


async def test_kill_9_at_random_points(tmp_path: Path, workspace: Path, figures: Figures,
                                       soak_run: bool) -> None:
    kills = 200 if soak_run else 20
    rng = random.Random()
    seed = rng.randrange(2 ** 32)
    rng.seed(seed)
    menu = Menu(rng)
    home = tmp_path / "home"
    root = home / "sessions"
    (workspace / "small.txt").write_text("small\n")
    known: dict[str, Tracked] = {}
    loads = torn = 0
    problems: list[str] = []
    for round_no in range(kills):
        before = set(known)
        touched, loaded = await kill_round(rng, menu, home, workspace, known, round_no,
                                     tmp_path / "kill.stderr")
        loads += loaded
        for session_id in set(touched) | (set(known) - before):  # the others did not change
            tracked = known[session_id]
            if not (root / session_id).is_dir():
                problems.append(f"round {round_no}: {session_id} is gone")
                continue
            torn += stored(root, session_id)[1]
            problems += [f"round {round_no}: {session_id}: {p}"
                         for p in check_after_kill(root, tracked)]
        assert problems == [], f"seed {seed}:\n" + "\n".join(problems)

    # Every session loads in an agent on the real SDK, and its next request is valid.
    with RoutedModelServer(lambda body: reply("verified")) as server:
        async with http_agent(tmp_path, server.base_url, "verify", home=home) as agent:
            await agent.initialize()
            listed = await list_all(agent)
            assert set(known) <= listed, f"not in session/list: {set(known) - listed}"
            for session_id in sorted(known):
                answer = await agent.request("session/load", {
                    "sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
                assert "result" in answer, (session_id, answer)
                sent = len(server.bodies)
                response, _, _ = await agent.run_prompt(session_id, "verify", allow, timeout=30)
                assert response["result"]["stopReason"] == "end_turn", response
                body = server.bodies[sent]
                assert history_problems(body["messages"]) == [], (session_id, body["messages"])
                seen = json.dumps(body["messages"])
                lost = [t.text for t in known[session_id].turns
                        if t.answered and t.text not in seen]
                assert lost == [], f"{session_id}: answered prompts missing: {lost}"
                loads += 1
    assert guard_violations(home) == []
    figures.add(CATEGORY, "kills_survived", kills)
    figures.add(CATEGORY, "sessions", len(known))
    figures.add(CATEGORY, "session_loads", loads)
    figures.add(CATEGORY, "turns_interrupted", sum(
        1 for t in known.values() for turn in t.turns if not turn.answered))
    figures.add(CATEGORY, "torn_history_tails_seen", torn)
    figures.add(CATEGORY, "cases", kills)


def serialize_sends(agent: AgentProcess) -> None:
    """Let several tasks write to the agent (trio streams allow one sender at a time)."""
    lock = trio.Lock()
    send_raw = agent.send_raw

    async def locked(data: bytes) -> None:
        async with lock:
            await send_raw(data)

    agent.send_raw = locked  # type: ignore[method-assign]


async def list_all(agent: AgentProcess) -> set[str]:
    found: set[str] = set()
    cursor = None
    while True:
        result = await agent.call("session/list", {"cursor": cursor} if cursor else {})
        found |= {s["sessionId"] for s in result["sessions"]}
        cursor = result.get("nextCursor")
        if not cursor:
            return found
