"""Persistence under ``kill -9``: 200 kills (1000 with ``--soak``) at random moments of
scripted sessions that stream, run tools, write records of megabytes, fork and compact (after an
answer that reports a nearly full context, or on ``/compact``), several sessions at once in each
agent. ``LANES`` independent lanes (each its own ``IAC_CODE_HOME``, project, sessions and random
generator) kill agents side by side, since an agent mostly waits for its kill; the agents'
start-up (a few tenths of a second of CPU each) bounds the run. Most kills are timed from the
first sign of work on a prompt, so that a slow, loaded machine does not move them all before
the work; a few from the sending of the prompts.

After every kill, from the disk: every session reads; everything the client saw finish is
there (a prompt that was answered, a tool call that ended, the assistant message behind a tool
call that started, the user message behind any answer, a compaction whose notice came): at
most the message being written is lost; a fork holds what its source had finished when it was
asked for; every compaction record is a summary followed by whole recent turns (a suffix of the
history it replaces, cut where a user turn starts); and the history rebuilds (``Transcript`` +
``repair``, as a load does) into a request the API accepts. Sessions are loaded and continued
by later rounds, so most are killed more than once. At the end, one agent on the real SDK lists
every session of every lane and loads and prompts a sample (those that compacted first): each
request it sends must be valid and hold every answered prompt that no compaction summarised.

A failure prints the seed; ``IAC_ADV_KILL_SEED=<seed>`` replays the same choices (not the same
kill moments: those depend on the machine's load).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import Exchange, ToolUse, reply

from iaccode.llm.script import SCRIPT_VERSION
from iaccode.store.store import SessionStore
from iaccode.turn.compaction import turn_starts
from iaccode.turn.transcript import Transcript, api_messages
from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    allow,
    guard_violations,
    history_problems,
    http_agent,
    kill_quietly,
    scripted_env,
    survivors,
)
from tests.support.agent_process import AgentConnection, spawn_agent

CATEGORY = "persistence"

LANES = 8
"""Agents killed side by side (each lane runs its rounds one after another)."""

COMPACTION_ROUNDS = 0.3
"""Share of the rounds (with a session to compact) that start with a compaction."""

TRIGGER = "cmp"
"""In the id of a tool call whose answer reports a nearly full context."""

COMPACTED = "[Context compacted:"
"""The notice the agent sends once a compaction is recorded."""

SUMMARY = "<summary_of_earlier_conversation>"

SEED_VARIABLE = "IAC_ADV_KILL_SEED"

VERIFIED = 40
"""Sessions loaded and prompted on the real SDK at the end (10 times more with ``--soak``)."""

EARLY_KILLS = 0.1
"""Share of the kills timed from the prompts' sending, not from the first sign of work: they
mostly land before the agent has shown anything."""


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
    compactions_seen: int = 0
    """Compactions whose notice came (the record is written before it)."""
    compacted: bool = False
    """Whether its records hold a compaction (as last checked)."""

    def inherited(self) -> Tracked:
        """What a fork asked for now must hold (its id is filled in by the answer)."""
        return Tracked(
            "",
            [
                Turn(t.text, t.answered, t.model_activity)
                for t in self.turns
                if t.answered or t.model_activity
            ],
            set(self.started_calls),
            set(self.ended_calls),
            self.compactions_seen,
        )


class Menu:
    """Model answers to draw from: streams, thinking, tools, big records, compactions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ids = itertools.count()

    def one(self) -> dict[str, Any]:
        n = next(self.ids)
        choice = self.rng.choice(
            ["text", "text", "thinking", "bash", "big_output", "big_write", "reads", "slow_bash"]
        )
        if choice == "text":
            return reply(
                [f"t{n}w{i} " for i in range(self.rng.randint(3, 40))],
                delay=self.rng.choice([0.0, 0.005, 0.02]),
            )
        if choice == "thinking":
            return reply([f"a{n} "] * 5, thinking=[f"h{n}x{i} " for i in range(20)], delay=0.01)
        if choice == "bash":
            return reply(
                f"running {n}",
                tool_uses=[
                    ToolUse(
                        f"toolu_{n}",
                        "bash",
                        {"command": f"echo out{n}; sleep 0.{self.rng.randint(0, 5)}"},
                    )
                ],
            )
        if choice == "slow_bash":
            return reply(tool_uses=[ToolUse(f"toolu_{n}", "bash", {"command": "sleep 5"})])
        if choice == "big_output":
            return reply(
                tool_uses=[
                    ToolUse(
                        f"toolu_{n}", "bash", {"command": "head -c 400000 /dev/zero | tr '\\0' a"}
                    )
                ]
            )
        if choice == "big_write":
            return reply(
                tool_uses=[
                    ToolUse(
                        f"toolu_{n}",
                        "write_file",
                        {"path": f"big{n}.txt", "content": "b" * 400_000},
                    )
                ]
            )
        return reply(
            tool_uses=[
                ToolUse(f"toolu_{n}r{i}", "read_file", {"path": "small.txt"}) for i in range(3)
            ]
        )

    def trigger(self) -> Exchange:
        """A tool call in an answer that fills 95% of the context: once its result is recorded
        the turn compacts (when the session has an earlier turn to summarise)."""
        n = next(self.ids)
        return reply(
            f"compacting {n}",
            input_tokens=190_000,
            tool_uses=[ToolUse(f"toolu_{n}{TRIGGER}", "read_file", {"path": "small.txt"})],
        )

    def summary(self) -> Exchange:
        """The next answer: the summary when a compaction asks, streamed slowly."""
        n = next(self.ids)
        return reply([f"s{n}w{i} " for i in range(self.rng.randint(5, 25))], delay=0.02)

    def script(self, size: int, compaction: str | None = None) -> list[dict[str, Any]]:
        """``size`` answers; ``compaction`` "auto" starts with a trigger, "manual" (a
        ``/compact`` prompt is sent first) with its summary."""
        exchanges = {"auto": [self.trigger(), self.summary()], "manual": [self.summary()]}.get(
            compaction or "", []
        )
        while len(exchanges) < size:
            if self.rng.random() < 0.06:
                exchanges += [self.trigger(), self.summary()]
            else:
                exchanges.append(self.one())
        return exchanges


@dataclass
class Lane:
    """An independent series of kills: its own home, project, sessions and choices."""

    number: int
    seed: int
    base: Path
    rng: random.Random = field(init=False)
    menu: Menu = field(init=False)
    known: dict[str, Tracked] = field(default_factory=dict)
    kills: int = 0
    loads: int = 0
    torn: int = 0
    triggers: set[str] = field(default_factory=set)
    """Compaction triggers whose result was recorded with something to compact."""
    manual_compactions: int = 0
    compactions_completed: int = 0
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed * 1000 + self.number)
        self.menu = Menu(self.rng)
        self.workspace.mkdir(parents=True)
        (self.workspace / "small.txt").write_text("small\n")

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def root(self) -> Path:
        return self.home / "sessions"

    @property
    def workspace(self) -> Path:
        return self.base / "x" / "proj"


def script_env(home: Path, exchanges: list[Exchange], pycache: Path) -> dict[str, str]:
    """``scripted_env`` with the script written as compact JSON (``dump_script`` indents, which
    takes the pure-Python encoder: a fifth of a second per round, in this one process).

    Where bytecode is not written (``PYTHONDONTWRITEBYTECODE``), every agent would compile
    again each module edited since its ``.pyc``: the agents share a bytecode cache in
    ``pycache`` instead."""
    env = scripted_env(home, [], {"IAC_CODE_LOG_LEVEL": "WARNING"})
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    Path(env["IAC_CODE_MODEL_SCRIPT"]).write_text(
        json.dumps({"version": SCRIPT_VERSION, "exchanges": exchanges}, separators=(",", ":"))
    )
    return env


def stored(root: Path, session_id: str) -> tuple[list[dict[str, Any]], bool]:
    """The records of a session as a reader sees them, and whether the file ends torn."""
    _, records = SessionStore(root).read(session_id)
    history = (root / session_id / "history.jsonl").read_bytes()
    return records, bool(history) and not history.endswith(b"\n")


def compaction_audit(records: list[dict[str, Any]]) -> tuple[list[str], int, set[str]]:
    """What is wrong with the compaction records, how many there are, and the triggers whose
    result was recorded while there was an earlier turn to summarise (compactions started)."""
    problems: list[str] = []
    messages: list[dict[str, Any]] = []
    count = 0
    started: set[str] = set()
    for record in records:
        if record.get("type") == "message" and isinstance(record.get("message"), dict):
            message = record["message"]
            answered = {
                str(b.get("tool_use_id"))
                for b in message.get("content") or []
                if isinstance(b, dict)
                and b.get("type") == "tool_result"
                and not b.get("is_error")
                and TRIGGER in str(b.get("tool_use_id"))
            }
            if answered and any(start > 0 for start in turn_starts(messages)):
                started |= answered
            messages.append(message)
        elif record.get("type") == "compaction":
            count += 1
            new = record.get("messages")
            recent = new[2:] if isinstance(new, list) else []
            if not (
                isinstance(new, list)
                and len(new) > 2
                and new[0].get("role") == "user"
                and SUMMARY in json.dumps(new[0])
                and new[1].get("role") == "assistant"
            ):
                problems.append(
                    f"compaction {count} is not a summary and recent turns: {json.dumps(new)[:300]}"
                )
            elif not (
                len(recent) < len(messages)
                and messages[-len(recent) :] == recent
                and len(messages) - len(recent) in turn_starts(messages)
            ):
                problems.append(
                    f"compaction {count} does not keep whole recent turns: "
                    f"{len(recent)} kept of {len(messages)}"
                )
            messages = list(new) if isinstance(new, list) else []
    return problems, count, started


def check_after_kill(records: list[dict[str, Any]], tracked: Tracked) -> tuple[list[str], set[str]]:
    """The problems of one session's records; and the compactions started in it."""
    problems = []
    users = [
        r["message"]
        for r in records
        if r.get("type") == "message" and r["message"].get("role") == "user"
    ]
    user_texts = {
        b.get("text") for m in users for b in m.get("content") or [] if isinstance(b, dict)
    }
    tool_ids = {
        b.get("id")
        for r in records
        if r.get("type") == "message"
        for b in r["message"].get("content") or []
        if b.get("type") == "tool_use"
    }
    call_records = {r["start"].get("toolCallId") for r in records if r.get("type") == "tool_call"}
    for turn in tracked.turns:
        if (turn.answered or turn.model_activity) and turn.text not in user_texts:
            problems.append(f"the prompt {turn.text!r} was lost")
    for index, turn in enumerate(tracked.turns):
        if turn.answered == "end_turn":
            position = next(
                (
                    i
                    for i, r in enumerate(records)
                    if r.get("type") == "message"
                    and any(b.get("text") == turn.text for b in r["message"].get("content") or [])
                ),
                None,
            )
            after = records[position + 1 :] if position is not None else []
            if not any(
                r.get("type") == "message" and r["message"]["role"] == "assistant" for r in after
            ):
                problems.append(f"the answer to {turn.text!r} (turn {index}) was lost")
    lost_uses = tracked.started_calls - tool_ids
    if lost_uses:
        problems.append(f"assistant messages behind started tool calls lost: {lost_uses}")
    lost_calls = tracked.ended_calls - call_records
    if lost_calls:
        problems.append(f"ended tool calls lost: {lost_calls}")
    bad_compactions, compactions, started = compaction_audit(records)
    problems += bad_compactions
    tracked.compacted = compactions > 0
    if compactions < tracked.compactions_seen:
        problems.append(
            f"compactions the client saw recorded lost: {compactions} records, "
            f"{tracked.compactions_seen} notices"
        )
    transcript = Transcript.from_records(records)
    transcript.repair()
    bad = history_problems(api_messages(transcript.messages))
    if bad:
        problems.append(f"the next request would be refused: {bad}")
    return problems, started


def compactable(records: list[dict[str, Any]]) -> bool:
    """Whether a load of these records has an earlier turn to summarise."""
    return any(start > 0 for start in turn_starts(Transcript.from_records(records).messages))


async def kill_round(lane: Lane, round_no: int) -> tuple[list[str], int]:
    """One agent: open some sessions, prompt them all (or ``/compact`` one), fork, kill -9 at a
    random moment. Returns the sessions it touched and how many it loaded."""
    rng, known, workspace = lane.rng, lane.known, lane.workspace
    loads = rng.sample(sorted(known), min(len(known), rng.randint(0, 3)))
    compaction = None
    if loads and rng.random() < COMPACTION_ROUNDS:
        # The first session prompted (the first to ask the model) must have a turn to summarise.
        target = next((s for s in loads if compactable(stored(lane.root, s)[0])), None)
        if target is not None:
            loads.remove(target)
            loads.insert(0, target)
            compaction = rng.choice(["auto", "manual"])
    env = script_env(lane.home, lane.menu.script(20, compaction), lane.base.parent / "pycache")
    touched: list[str] = []
    async with spawn_agent(env, lane.base / "kill.stderr") as agent:
        await agent.initialize()
        for session_id in loads:
            answer = await agent.request(
                "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
            )
            assert "result" in answer, (session_id, answer)
            touched.append(session_id)
        for _ in range(rng.randint(1, 2)):
            session_id = await agent.new_session(workspace)
            known[session_id] = Tracked(session_id)
            touched.append(session_id)
        for session_id in touched:
            if rng.random() < 0.6:
                await agent.call("session/set_mode", {"sessionId": session_id, "modeId": "bypass"})
        agent._unread.clear()  # the replays of the loads: what was seen before, not now
        serialize_sends(agent)
        pending: dict[int, tuple[str, Turn | Tracked | None]] = {}
        """Request id -> session, and the turn of a prompt, a fork's inheritance, or None
        for ``/compact``."""
        active: dict[str, Turn] = {}
        """The turn each session runs in this round."""
        done = trio.Event()
        working = trio.Event()
        tools_started: list[str] = []

        async def answer_later(message: dict[str, Any]) -> None:
            await trio.sleep(rng.choice([0, 0.01, 0.2]))
            # The agent may have been killed meanwhile.
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await agent.reply(message["id"], allow(message))

        async def read(nursery: trio.Nursery) -> None:
            try:
                while True:
                    message = await agent.receive(timeout=60)
                    if message.get("method") == "session/request_permission":
                        nursery.start_soon(answer_later, message)
                    elif message.get("method") == "session/update":
                        seen(message["params"])
                    elif message.get("id") in pending and "method" not in message:
                        session_id, what = pending.pop(message["id"])
                        if isinstance(what, Turn) and "result" in message:
                            what.answered = message["result"]["stopReason"]
                        elif isinstance(what, Tracked) and "result" in message:
                            what.session_id = message["result"]["sessionId"]
                            known[what.session_id] = what
            except (
                EOFError,
                AssertionError,
                ValueError,
                trio.BrokenResourceError,
                trio.ClosedResourceError,
            ):
                pass
            finally:
                done.set()

        def seen(params: dict[str, Any]) -> None:
            tracked = known.get(params["sessionId"])
            update = params["update"]
            kind = update["sessionUpdate"]
            if tracked is None:
                return
            if kind not in ("available_commands_update", "current_mode_update"):
                working.set()
            if kind == "agent_message_chunk" and COMPACTED in str(
                (update.get("content") or {}).get("text")
            ):
                tracked.compactions_seen += 1
                lane.compactions_completed += 1
            turn = active.get(tracked.session_id)
            if turn is not None and kind in (
                "agent_message_chunk",
                "agent_thought_chunk",
                "tool_call",
                "tool_call_update",
                "usage_update",
            ):
                turn.model_activity = True
            if kind == "tool_call":
                tracked.started_calls.add(update["toolCallId"])
                tools_started.append(update["toolCallId"])
            if kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
                tracked.ended_calls.add(update["toolCallId"])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read, nursery)
            for session_id in touched:
                tracked = known[session_id]
                if compaction == "manual" and session_id == touched[0]:
                    text, what = "/compact", None
                    lane.manual_compactions += 1
                else:
                    turn = Turn(f"r{round_no}-{session_id[-6:]}-{len(tracked.turns)}")
                    tracked.turns.append(turn)
                    active[session_id] = turn
                    text, what = turn.text, turn
                request_id = await agent.send_request(
                    "session/prompt",
                    {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
                )
                pending[request_id] = (session_id, what)
            if rng.random() >= EARLY_KILLS:
                # The clock starts when the agent shows it works on a prompt: however slow a
                # loaded machine makes it, the kill lands in the work (or just after it).
                with trio.move_on_after(60):
                    await working.wait()
            kill_at = rng.uniform(0, 0.8)
            if rng.random() < 0.5:
                fork_at = rng.uniform(0, kill_at)
                await trio.sleep(fork_at)
                kill_at -= fork_at
                source = rng.choice(touched)
                inheritance = known[source].inherited()  # before the request: all on disk
                request_id = await agent.send_request(
                    "session/fork", {"sessionId": source, "cwd": str(workspace), "mcpServers": []}
                )
                pending[request_id] = (source, inheritance)
            await trio.sleep(kill_at)
            agent.process.send_signal(signal.SIGKILL)
            await agent.process.wait()
            with trio.move_on_after(1):
                await done.wait()  # what the agent wrote before it died
            nursery.cancel_scope.cancel()
    if tools_started:  # commands the kill orphaned (not the agent's fault)
        kill_quietly(survivors(workspace))
    return touched, len(loads)


async def warm_up(tmp_path: Path) -> None:
    """One agent through a prompt, so that the bytecode cache (``script_env``) is filled before
    the lanes start."""
    env = script_env(tmp_path / "warm-up", [reply("warm")], tmp_path / "pycache")
    async with spawn_agent(env, tmp_path / "warm-up.stderr") as agent:
        await agent.initialize()
        session_id = await agent.new_session(tmp_path)
        response, _ = await agent.prompt(session_id, "warm up")
        assert response["result"]["stopReason"] == "end_turn", response


@dataclass
class Plan:
    """The kills still to do, shared by the lanes (those that go faster do more), and whether
    a lane has found a problem (all stop)."""

    kills_left: int
    failed: trio.Event = field(default_factory=trio.Event)


async def run_lane(lane: Lane, plan: Plan) -> None:
    """Kill rounds one after another, each followed by the checks of what it touched."""
    for round_no in itertools.count():
        if plan.kills_left <= 0 or plan.failed.is_set():
            break
        plan.kills_left -= 1
        try:
            before = set(lane.known)
            touched, loaded = await kill_round(lane, round_no)
            lane.kills += 1
            lane.loads += loaded
            for session_id in set(touched) | (set(lane.known) - before):  # the rest is as was
                if not (lane.root / session_id).is_dir():
                    lane.problems.append(f"round {round_no}: {session_id} is gone")
                    continue
                records, torn = stored(lane.root, session_id)
                lane.torn += torn
                problems, started = check_after_kill(records, lane.known[session_id])
                lane.triggers |= started
                lane.problems += [f"round {round_no}: {session_id}: {p}" for p in problems]
        except Exception:
            lane.problems.append(f"round {round_no}: {traceback.format_exc()}")
        if lane.problems:
            plan.failed.set()
            break
    kill_quietly(survivors(lane.workspace))


async def test_kill_9_at_random_points(tmp_path: Path, figures: Figures, soak_run: bool) -> None:
    kills = 1000 if soak_run else 200
    seed = int(os.environ.get(SEED_VARIABLE) or random.randrange(2**32))
    replay = f"seed {seed} (replay its choices: {SEED_VARIABLE}={seed})"
    lanes = [Lane(number, seed, tmp_path / f"lane{number}") for number in range(LANES)]
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        await warm_up(tmp_path)
    plan = Plan(kills)
    async with trio.open_nursery() as nursery:
        for lane in lanes:
            nursery.start_soon(run_lane, lane, plan)
    problems = [f"lane {lane.number}, {problem}" for lane in lanes for problem in lane.problems]
    assert problems == [], f"{replay}:\n" + "\n".join(problems)
    assert sum(lane.kills for lane in lanes) == kills
    for lane in lanes:
        assert guard_violations(lane.home) == [], (replay, lane.number)

    # In an agent on the real SDK (one for all lanes: their sessions are linked into its
    # home) every session is listed, and a sample loads and its next request is valid. The
    # checks after each kill rebuilt every request already.
    home = tmp_path / "verify-home"
    tracked = {}
    for lane in lanes:
        for session_id, session in lane.known.items():
            shutil.copytree(
                lane.root / session_id, home / "sessions" / session_id, copy_function=os.link
            )  # the lanes are done with them
            tracked[session_id] = (lane, session)
    size = VERIFIED * (10 if soak_run else 1)
    picker = random.Random(seed)  # those that compacted (up to half), and others at random
    compacted = sorted(s for s in tracked if tracked[s][1].compacted)
    sample = picker.sample(compacted, min(len(compacted), size // 2))
    others = sorted(set(tracked) - set(sample))
    sample += picker.sample(others, min(len(others), size - len(sample)))
    loads = sum(lane.loads for lane in lanes)
    with FakeModelServer(responder=lambda body: reply("verified")) as server:
        async with http_agent(tmp_path, server.base_url, "verify", home=home) as agent:
            await agent.initialize()
            listed = await list_all(agent)
            assert set(tracked) <= listed, (replay, "not listed", set(tracked) - listed)
            for session_id in sample:
                lane, session = tracked[session_id]
                await verify(
                    agent, server, home / "sessions", session_id, lane.workspace, session, replay
                )
                loads += 1
    assert guard_violations(home) == []
    started = sum(len(lane.triggers) + lane.manual_compactions for lane in lanes)
    completed = sum(lane.compactions_completed for lane in lanes)
    figures.add(CATEGORY, "kills_survived", sum(lane.kills for lane in lanes))
    figures.add(CATEGORY, "sessions", len(tracked))
    figures.add(CATEGORY, "sessions_verified_on_sdk", len(sample))
    figures.add(CATEGORY, "session_loads", loads)
    figures.add(
        CATEGORY,
        "turns_interrupted",
        sum(1 for _, session in tracked.values() for turn in session.turns if not turn.answered),
    )
    figures.add(CATEGORY, "torn_history_tails_seen", sum(lane.torn for lane in lanes))
    figures.add(CATEGORY, "compactions_started", started)
    figures.add(CATEGORY, "compactions_completed", completed)
    figures.add(CATEGORY, "compactions_interrupted", max(0, started - completed))
    figures.add(CATEGORY, "cases", kills)


async def verify(
    agent: AgentConnection,
    server: FakeModelServer,
    root: Path,
    session_id: str,
    workspace: Path,
    session: Tracked,
    replay: str,
) -> None:
    """Load and prompt one session: the request must be valid and hold every answered prompt
    that no compaction summarised (and the summary, if there was one)."""
    records, _ = stored(root, session_id)
    compactions = [i for i, r in enumerate(records) if r.get("type") == "compaction"]
    summarised = {
        json.dumps(b.get("text"))
        for r in records[: max(compactions or [0])]
        if r.get("type") == "message"
        for b in r["message"].get("content") or []
        if isinstance(b, dict)
    }
    answer = await agent.request(
        "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    )
    assert "result" in answer, (replay, session_id, answer)
    sent = len(server.requests)
    response, _, _ = await agent.run_prompt(session_id, "verify", allow, timeout=30)
    assert response["result"]["stopReason"] == "end_turn", (replay, response)
    body = server.requests[sent].body
    assert history_problems(body["messages"]) == [], (replay, session_id, body["messages"])
    seen = json.dumps(body["messages"])
    lost = [
        t.text
        for t in session.turns
        if t.answered and json.dumps(t.text) not in seen and json.dumps(t.text) not in summarised
    ]
    assert lost == [], f"{replay}: {session_id}: answered prompts missing: {lost}"
    assert not compactions or SUMMARY in seen, (replay, session_id, "the summary is not sent")


def serialize_sends(agent: AgentConnection) -> None:
    """Let several tasks write to the agent (trio streams allow one sender at a time)."""
    lock = trio.Lock()
    send_raw = agent.send_raw

    async def locked(data: bytes) -> None:
        async with lock:
            await send_raw(data)

    agent.send_raw = locked  # type: ignore[method-assign]


async def list_all(agent: AgentConnection) -> set[str]:
    found: set[str] = set()
    cursor = None
    while True:
        result = await agent.call("session/list", {"cursor": cursor} if cursor else {})
        found |= {s["sessionId"] for s in result["sessions"]}
        cursor = result.get("nextCursor")
        if not cursor:
            return found
