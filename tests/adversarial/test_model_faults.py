"""Model faults (the fake Messages API and the real SDK): error statuses with and without
``retry-after``, connections reset before the headers, streams cut mid-text and mid-tool-input,
``error`` events, a stream of pings that never ends, a server that never answers.

Each turn ends with a readable message or a retry succeeds, within ``IAC_CODE_MAX_RETRIES``
(2 here: at most 3 requests) and in bounded time; cancel works at every point; the session then
answers the next prompt with a history the API accepts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.driver import TimedOut
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, error_status, hang, reply, reset, stream_error

from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    allow,
    history_problems,
    http_agent,
    ran_files,
    survivors,
)
from tests.support.agent_process import AgentConnection

CATEGORY = "model_faults"
RETRIES = 2


@pytest.fixture
def model_server():  # type: ignore[no-untyped-def]
    with FakeModelServer() as server:
        yield server


def readable(updates: list[dict[str, Any]]) -> str:
    """The error message the user was shown (agent_message_chunk with iaccode error meta)."""
    shown = [
        u["params"]["update"]
        for u in updates
        if u.get("method") == "session/update"
        and u["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        and (u["params"]["update"].get("_meta") or {}).get("iaccode", {}).get("error")
    ]
    return " ".join(u["content"]["text"] for u in shown)


async def goes_on(agent: AgentConnection, server: FakeModelServer, session: str) -> None:
    """The session answers the next prompt, and the request it makes is valid."""
    server.enqueue(reply("after"))
    response, _, _ = await agent.run_prompt(session, "are you there?", allow)
    assert response["result"]["stopReason"] == "end_turn", response
    problems = history_problems(server.requests[-1].body["messages"])
    assert problems == [], problems


RETRY_CASES: dict[str, tuple[list[dict[str, Any]], int, str | None]] = {
    # name: (the server's answers, requests expected, the message (None: the retry succeeds))
    "429_then_ok": (
        [error_status(429, retry_after=0.2), error_status(429, retry_after=0.2), reply("ok")],
        3,
        None,
    ),
    "429_exhausted": ([error_status(429, "slow down", retry_after=0.1)] * 3, 3, "429"),
    "529_then_ok": ([error_status(529), reply("ok")], 2, None),
    "529_exhausted": ([error_status(529, "Overloaded", retry_after=0.1)] * 3, 3, "529"),
    "500_then_ok": ([error_status(500, retry_after=0.1), reply("ok")], 2, None),
    "500_exhausted": ([error_status(500, "boom", retry_after=0.1)] * 3, 3, "500"),
    "503_html_body": (
        [{"status": 503, "headers": {"retry-after": "0.1"}, "body": "<html>down</html>"}] * 3,
        3,
        "503",
    ),
    "reset_then_ok": ([reset(), reply("ok")], 2, None),
    "reset_exhausted": ([reset()] * 3, 3, "reach"),
    "400_not_retried": ([error_status(400, "bad request")], 1, "400"),
    "401_not_retried": ([error_status(401)], 1, "401"),
    "413_not_retried": ([error_status(413)], 1, "413"),
    "429_huge_retry_after": ([error_status(429, "wait an hour", retry_after=3600)], 1, "429"),
    "529_huge_retry_after_ms": (
        [error_status(529, headers={"retry-after-ms": "3600000"})],
        1,
        "529",
    ),
}


async def test_error_statuses_retry_within_bounds(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    problems: dict[str, str] = {}
    async with http_agent(tmp_path, model_server.base_url) as agent:
        await agent.initialize()
        for name, (answers, expected_requests, message) in RETRY_CASES.items():
            session = await agent.new_session(workspace)
            first = len(model_server.requests)
            model_server.enqueue(*answers)
            began = time.monotonic()
            request_id = await agent.send_request(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": name}]}
            )
            try:
                response, updates = await agent.response(request_id, timeout=20)
            except TimedOut:
                problems[name] = "no answer within 20 s"
                await agent.notify("session/cancel", {"sessionId": session})
                await agent.response(request_id, timeout=5)
                continue
            took = time.monotonic() - began
            made = len(model_server.requests) - first
            if "result" not in response or response["result"]["stopReason"] != "end_turn":
                problems[name] = f"the prompt: {response}"
            elif made != expected_requests:
                problems[name] = f"{made} requests, expected {expected_requests}"
            elif message is not None and message not in readable(updates):
                problems[name] = f"message {readable(updates)!r}, expected {message!r}"
            elif message is None and readable(updates):
                problems[name] = f"a retry should have succeeded: {readable(updates)!r}"
            elif took > 15:
                problems[name] = f"took {took:.1f} s"
            if model_server.remaining:
                problems[name] = f"{model_server.remaining} scripted answers left unused"
                break  # the queue no longer lines up with the cases
            try:
                await goes_on(agent, model_server, session)
            except AssertionError as exc:
                problems[name] = f"afterwards: {exc}"
    assert problems == {}, "\n".join(f"{k}: {v}" for k, v in problems.items())
    figures.add(
        CATEGORY,
        "faults_injected",
        sum(sum(1 for a in answers if "events" not in a) for answers, _, _ in RETRY_CASES.values()),
    )
    figures.add(CATEGORY, "cases", len(RETRY_CASES))


def slow_text(words: int, delay: float) -> dict[str, Any]:
    return reply([f"w{i} " for i in range(words)], delay=delay)


def endless_pings() -> dict[str, Any]:
    start_events = reply("tick")["events"][:3]  # message_start, block start, one text delta
    return {"events": start_events + [{"type": "ping"}] * 5000, "delay": 0.02}


BREAK_CASES: dict[str, tuple[dict[str, Any], str, str | None]] = {
    # name: (the broken answer, the message shown, text the history keeps (None: none))
    "cut_mid_text": ({**reply(["Hel", "lo ", "wor", "ld"]), "cut_after": 4}, "broke off", "Hello"),
    "cut_after_headers": ({**reply("never"), "cut_after": 0}, "broke off", None),
    "cut_mid_tool_input": (
        {
            **reply(
                "Running it.",
                tool_uses=[
                    ToolUse("toolu_cut", "bash", {"command": "touch ran_cut; echo a long command"})
                ],
            ),
            "cut_after": 7,
        },
        "broke off",
        "Running it.",
    ),
    "error_event_mid_text": (
        stream_error("partial answer", "overloaded_error", "Overloaded"),
        "overloaded_error",
        "partial answer",
    ),
    "error_event_mid_tool_input": (
        {
            "events": [
                *reply(tool_uses=[ToolUse("toolu_err", "bash", {"command": "touch ran_err"})])[
                    "events"
                ][:3],
                {"type": "error", "error": {"type": "api_error", "message": "Internal"}},
            ]
        },
        "api_error",
        None,
    ),
    "no_message_stop": ({"events": reply("unfinished")["events"][:-1]}, "broke off", "unfinished"),
    "garbage_event": (
        {
            "events": [
                *reply("x")["events"][:2],
                {"type": "content_block_delta", "index": 0, "delta": "not an object"},
            ]
        },
        "unreadable",
        None,
    ),
    "thinking_cut": (
        {**reply("answer", thinking=["hmm", "mm"]), "cut_after": 3},
        "broke off",
        None,
    ),
}


async def test_broken_streams_are_readable_and_the_history_stays_valid(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    problems: dict[str, str] = {}
    async with http_agent(tmp_path, model_server.base_url) as agent:
        await agent.initialize()
        for name, (broken, message, kept) in BREAK_CASES.items():
            session = await agent.new_session(workspace)
            model_server.enqueue(broken)
            response, updates, _ = await agent.run_prompt(session, name, allow, timeout=30)
            if "result" not in response or response["result"]["stopReason"] != "end_turn":
                problems[name] = f"the prompt: {response}"
                continue
            if message not in readable(updates):
                problems[name] = f"message {readable(updates)!r}, expected {message!r}"
            try:
                await goes_on(agent, model_server, session)
            except AssertionError as exc:
                problems[name] = f"afterwards: {exc}"
                continue
            history = model_server.requests[-1].body["messages"]
            texts = [
                b.get("text", "")
                for m in history
                if m["role"] == "assistant"
                for b in m["content"]
                if b.get("type") == "text"
            ]
            if kept is not None and kept not in " ".join(texts):
                problems[name] = f"the partial answer was lost: {texts}"
            if any(b.get("type") == "thinking" for m in history for b in m["content"]):
                problems[name] = "unsigned thinking was kept"
    ran = ran_files(workspace)
    assert ran == [], f"a cut tool call ran: {ran}"
    assert problems == {}, "\n".join(f"{k}: {v}" for k, v in problems.items())
    figures.add(CATEGORY, "faults_injected", len(BREAK_CASES))
    figures.add(CATEGORY, "cases", len(BREAK_CASES))


async def _prompt_and_cancel(
    agent: AgentConnection,
    server: FakeModelServer,
    session: str,
    how: str,
    wait_for: str | None,
    workspace: Path,
) -> tuple[dict[str, Any], float]:
    asked = len(server.requests)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": how}]}
    )
    if wait_for == "permission":
        while True:
            message = await agent.receive()
            if message.get("method") == "session/request_permission":
                await agent.reply(message["id"], allow(message))
                break
        with trio.fail_after(10):
            while not (workspace / "started").exists():  # noqa: ASYNC110 - another process
                await trio.sleep(0.02)
    elif wait_for is not None:
        await agent.receive_update(wait_for)
    else:  # the request reached the server (and is hanging, or in its retry wait)
        await trio.to_thread.run_sync(server.wait_for_requests, asked + 1, 30)
        await trio.sleep(0.2)
    began = trio.current_time()
    if how == "cancel_request":
        await agent.notify("$/cancel_request", {"requestId": request_id})
    elif how == "close":
        await agent.request("session/close", {"sessionId": session})
    else:
        await agent.notify("session/cancel", {"sessionId": session})
    response, _ = await agent.response(request_id, timeout=10)
    return response, trio.current_time() - began


CANCEL_CASES: dict[str, tuple[list[dict[str, Any]], str | None, str]] = {
    # name: (the server's answers, what to wait for before cancelling, how to cancel)
    "server_never_answers": ([hang()], None, "cancel"),
    "endless_pings": ([endless_pings()], "agent_message_chunk", "cancel"),
    "retry_wait": ([error_status(429, retry_after=30)], None, "cancel"),
    "mid_stream": ([slow_text(200, 0.05)], "agent_message_chunk", "cancel"),
    "thinking": (
        [reply("x", thinking=[f"t{i} " for i in range(200)], delay=0.05)],
        "agent_thought_chunk",
        "cancel",
    ),
    "tool_running": (
        [reply(tool_uses=[ToolUse("toolu_s", "bash", {"command": "touch started; sleep 30"})])],
        "permission",
        "cancel",
    ),
    "cancel_request_while_hanging": ([hang()], None, "cancel_request"),
    "close_while_streaming": ([slow_text(200, 0.05)], "agent_message_chunk", "close"),
}


async def test_cancel_works_at_every_point(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    problems: dict[str, str] = {}
    latencies: list[float] = []
    async with http_agent(tmp_path, model_server.base_url) as agent:
        await agent.initialize()
        for name, (answers, wait_for, how) in CANCEL_CASES.items():
            (workspace / "started").unlink(missing_ok=True)
            session = await agent.new_session(workspace)
            model_server.enqueue(*answers)
            response, took = await _prompt_and_cancel(
                agent, model_server, session, how, wait_for, workspace
            )
            latencies.append(took)
            if how == "cancel_request":
                if response.get("error", {}).get("code") != -32800:
                    problems[name] = f"answer {response}"
            elif response.get("result", {}).get("stopReason") != "cancelled":
                problems[name] = f"answer {response}"
            if took > 3.5:  # a running command gets TERM, then up to 2 s, then KILL
                problems[name] = f"cancel took {took:.2f} s"
            if survivors(workspace):
                problems[name] = f"processes left: {survivors(workspace)}"
            if how == "close":
                answer = await agent.request(
                    "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
                )
                if "result" not in answer:
                    problems[name] = f"load after close: {answer}"
            try:
                await goes_on(agent, model_server, session)
            except AssertionError as exc:
                problems[name] = f"afterwards: {exc}"
    assert problems == {}, "\n".join(f"{k}: {v}" for k, v in problems.items())
    figures.add(CATEGORY, "cancels", len(CANCEL_CASES))
    figures.add(CATEGORY, "cases", len(CANCEL_CASES))
    figures.most(CATEGORY, "slowest_cancel_seconds", round(max(latencies), 2))
