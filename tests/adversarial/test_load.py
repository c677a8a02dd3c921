"""Load: 50 sessions prompting at once for half a minute (five minutes with ``--soak``), on the
real SDK and a fake model with tools.

Each session has its own project folder holding its own marker. The fake model answers from
the request itself: a prompt ``sK-pJ`` gets a tool call (``read_file``, or ``bash`` which asks
permission) on the marker, and the tool's result gets a text answer quoting it. So any mix-up
shows: an update, a permission question or a tool call id under the wrong session, a marker of
another session, a request id answered twice, a prompt never answered, or a history the API
would refuse. The agent's RSS (from /proc) must stay flat between the end of the warm-up and
the end of the run.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    history_problems,
    http_agent,
    last_user_text,
    rss_kib,
    tool_results,
)
from tests.adversarial.test_persistence import serialize_sends

CATEGORY = "load"
SESSIONS = 50
TOKEN = re.compile(r"\b(s\d+)-(p\d+)\b")


class Model:
    """Answers by the request: a tool call for a prompt, a quote of the tool's result after."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        bad = history_problems(messages)
        if bad:
            self.problems.append(f"invalid request: {bad}")
        found = TOKEN.search(last_user_text(body))
        if found is None:
            self.problems.append(f"a request without a prompt token: {last_user_text(body)!r}")
            return reply("?")
        session, prompt = found.groups()
        results = tool_results(messages[-1])
        if not results:
            call = f"toolu_{session}_{prompt}"
            if int(prompt[1:]) % 2:
                return reply(tool_uses=[ToolUse(call + "_b", "bash", {"command": "cat marker"})])
            return reply(tool_uses=[ToolUse(call + "_r", "read_file", {"path": "marker"})])
        quoted = " ".join(str(r.get("content")) for r in results)
        return reply([f"{session}-{prompt} ", "saw ", quoted, " done"])


async def test_fifty_sessions_at_once(tmp_path: Path, figures: Figures, soak_run: bool) -> None:
    seconds = 300.0 if soak_run else 30.0
    model = Model()
    problems: list[str] = []
    answered: Counter[Any] = Counter()
    pending: dict[Any, tuple[str, trio.Event, dict[str, Any]]] = {}
    current: dict[str, dict[str, Any]] = {}  # session -> the turn in progress
    names: dict[str, str] = {}  # session id -> sK
    counts: Counter[str] = Counter()
    with FakeModelServer(responder=model) as server:
        async with http_agent(
            tmp_path, server.base_url, extra={"IAC_CODE_LOG_LEVEL": "WARNING"}
        ) as agent:
            await agent.initialize()
            for k in range(SESSIONS):
                folder = tmp_path / f"p{k}"
                folder.mkdir()
                (folder / "marker").write_text(f"marker-s{k}\n")
                names[await agent.new_session(folder)] = f"s{k}"
            agent._unread.clear()
            serialize_sends(agent)

            def check_update(session_id: str, update: dict[str, Any]) -> None:
                name = names.get(session_id)
                turn = current.get(session_id)
                if name is not None and update["sessionUpdate"] == "available_commands_update":
                    return  # sent after session/new answers, not part of a turn
                if name is None or turn is None:
                    problems.append(f"an update outside any turn: {session_id} {update}")
                    return
                kind = update["sessionUpdate"]
                counts[kind] += 1
                call = update.get("toolCallId")
                if call is not None and not call.startswith(f"toolu_{name}_{turn['prompt']}_"):
                    problems.append(f"{name} got the tool call {call}")
                if kind == "agent_message_chunk":
                    turn["text"] += update["content"]["text"]

            async def read(nursery: trio.Nursery) -> None:
                while True:
                    message = await agent.receive(timeout=60)
                    method = message.get("method")
                    if method == "session/update":
                        check_update(message["params"]["sessionId"], message["params"]["update"])
                    elif method == "session/request_permission":
                        params = message["params"]
                        name = names.get(params["sessionId"])
                        call = params["toolCall"]["toolCallId"]
                        if name is None or not call.startswith(f"toolu_{name}_"):
                            problems.append(f"a question for {name} about {call}")
                        counts["permission"] += 1
                        nursery.start_soon(
                            agent.reply,
                            message["id"],
                            {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
                        )
                    elif "id" in message:
                        answered[message["id"]] += 1
                        if answered[message["id"]] > 1 or message["id"] not in pending:
                            problems.append(f"id {message['id']} answered again: {message}")
                            continue
                        session_id, done, slot = pending.pop(message["id"])
                        slot.update(message)
                        done.set()

            async def prompt(session_id: str, number: int) -> None:
                name = names[session_id]
                current[session_id] = {"prompt": f"p{number}", "text": ""}
                done = trio.Event()
                slot: dict[str, Any] = {}
                request_id = await agent.send_request(
                    "session/prompt",
                    {
                        "sessionId": session_id,
                        "prompt": [{"type": "text", "text": f"{name}-p{number}"}],
                    },
                )
                pending[request_id] = (session_id, done, slot)
                with trio.fail_after(60):
                    await done.wait()
                text = current.pop(session_id)["text"]
                if slot.get("result", {}).get("stopReason") != "end_turn":
                    problems.append(f"{name}-p{number}: {slot}")
                elif (
                    text
                    != f"{name}-p{number} saw "
                    + (f"marker-{name}\n" if number % 2 else f"     1\tmarker-{name}")
                    + " done"
                ):
                    problems.append(f"{name}-p{number} answered {text!r}")
                counts["prompts"] += 1

            async def session_loop(session_id: str, deadline: float) -> None:
                number = 0
                while trio.current_time() < deadline:
                    await prompt(session_id, number)
                    number += 1

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read, nursery)
                began = time.monotonic()
                async with trio.open_nursery() as warmup:  # one prompt each, all at once
                    for session_id in names:
                        warmup.start_soon(prompt, session_id, 1000)
                warm = time.monotonic() - began
                rss_start = rss_kib(agent.process.pid)
                prompts_before = counts["prompts"]
                deadline = trio.current_time() + seconds
                async with trio.open_nursery() as load:
                    for session_id in names:
                        load.start_soon(session_loop, session_id, deadline)
                took = time.monotonic() - began - warm
                rss_end = rss_kib(agent.process.pid)
                nursery.cancel_scope.cancel()
            assert problems == [], "\n".join(problems[:20])
            assert model.problems == [] and server.problems == [], (
                model.problems[:5],
                server.problems[:5],
            )
            assert pending == {}
    prompts = counts["prompts"] - prompts_before
    grown = rss_end - rss_start
    # Flat but for the histories the live sessions keep in memory: about 5 KiB a prompt here
    # (the prompt, a tool call, its result and the answer, as Python objects). A leak of each
    # turn's streams, responses or tasks would be many times that.
    allowed = 24 * 1024 + prompts * 8
    assert grown < allowed, f"RSS grew {grown} KiB over {prompts} prompts (allowed {allowed})"
    figures.add(CATEGORY, "sessions", SESSIONS)
    figures.add(CATEGORY, "prompts", counts["prompts"])
    figures.add(
        CATEGORY, "updates", sum(v for k, v in counts.items() if k not in ("prompts", "permission"))
    )
    figures.add(CATEGORY, "permission_questions", counts["permission"])
    figures.add(CATEGORY, "model_requests", len(server.requests))
    figures.set(CATEGORY, "seconds_under_load", round(took, 1))
    figures.set(CATEGORY, "prompts_per_second", round(prompts / took, 1))
    figures.set(CATEGORY, "rss_start_mib", round(rss_start / 1024, 1))
    figures.set(CATEGORY, "rss_growth_kib", grown)
    figures.add(CATEGORY, "cases", 1)
