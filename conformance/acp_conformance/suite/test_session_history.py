"""Sessions that outlive a turn or a process: load, resume, fork, list (paged), delete."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import trio

from acp_conformance.driver import AgentConnection, text_of, updates
from acp_conformance.harness import Checks, Harness
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import (
    HISTORY_KINDS,
    Model,
    assert_error,
    capability_or_na,
    stop_reason,
)
from acp_conformance.script import reply

WORD = "zebra-quartz-7731"
REPLY_WORD = "noted-walnut-4402"


async def remember(agent: AgentConnection, workspace: Path) -> tuple[str, str]:
    """Open a session and have one turn in it; returns (sessionId, the agent's reply text)."""
    session = await agent.new_session(workspace)
    answer, before = await agent.prompt(session, f"Remember the word {WORD}.")
    stop_reason(answer)
    return session, text_of(before, session, "agent_message_chunk")


async def leave(agent: AgentConnection) -> None:
    """End a process the way an editor does: close its stdin and let it exit."""
    await agent.close_stdin()
    with trio.move_on_after(10):
        await agent.wait_exit(10)


async def first_process(harness: Harness, capability: str) -> tuple[str, str]:
    """Have a turn in a first agent process (n/a unless it advertises ``capability``)."""
    async with harness.spawn() as first:
        await first.initialize()
        capability_or_na(first, capability)
        session, answer_text = await remember(first, harness.workspace)
        await leave(first)
    return session, answer_text


def assert_history_restored(model: Model, count_before: int) -> None:
    """When the agent uses the fake model, its next request carries the earlier turn."""
    if model.request_count() > count_before:
        assert WORD in model.last_messages_text(), (
            "the model's next request does not contain the earlier conversation"
        )


@requirement(
    "SESSION-LOAD",
    "CAPABILITY",
    "session/load (in a new process) replays the conversation as session/update "
    "before it answers, and the session goes on",
)
async def test_load_replays_before_answering(
    harness: Harness, model: Model, workspace: Path
) -> None:
    model.plan(reply(f"Noted: {REPLY_WORD}."))
    session, answer_text = await first_process(harness, "loadSession")
    async with harness.spawn() as second:
        await second.initialize()
        load_id = await second.send_request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        answer, before = await second.response(load_id)
        assert isinstance(answer.get("result"), dict), f"session/load answered {answer}"
        replayed_user = text_of(before, session, "user_message_chunk")
        assert WORD in replayed_user, "the user's message was not replayed before the answer"
        replayed = text_of(before, session, "agent_message_chunk")
        assert answer_text.strip() in replayed, (
            f"the agent's answer {answer_text[:80]!r} was not replayed before the answer"
        )
        late = updates(await second.late_updates(session), None, *HISTORY_KINDS)
        assert not late, f"history replayed after session/load answered: {late[:2]}"
        count = model.request_count()
        stop_reason((await second.prompt(session, "What was the word?"))[0])
        assert_history_restored(model, count)


@requirement(
    "SESSION-LOAD-TOOLS",
    "CAPABILITY",
    "session/load replays the turn's tool calls too (same toolCallId, final status)",
)
async def test_load_replays_tool_calls(
    harness: Harness, model: Model, workspace: Path, check: Checks
) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("hello\n")
    async with harness.spawn() as first:
        await first.initialize()
        capability_or_na(first, "loadSession")
        profile = harness.tools(first)
        model.plan(
            profile.call("toolu_conformance_read", profile.read(notes)),
            reply("It says hello.", thinking="Reading the notes."),
        )
        session = await first.new_session(workspace)
        answer, live = await first.prompt(session, "Read notes.txt")
        stop_reason(answer)
        await leave(first)
    calls = {u["toolCallId"] for u in updates(live, session, "tool_call")}
    assert calls, "the live turn announced no tool_call"
    async with harness.spawn() as second:
        await second.initialize()
        load_id = await second.send_request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        answer, before = await second.response(load_id)
        assert isinstance(answer.get("result"), dict), f"session/load answered {answer}"
    replayed = updates(before, session, "tool_call", "tool_call_update")
    missing = calls - {u.get("toolCallId") for u in replayed}
    assert not missing, f"tool calls {sorted(missing)} were not replayed"
    statuses = [u.get("status") for u in replayed if u.get("status")]
    assert statuses and statuses[-1] in ("completed", "failed"), f"replayed statuses {statuses}"
    thought = text_of(live, session, "agent_thought_chunk")
    check.should(
        "SESSION-LOAD-THOUGHTS",
        "session/load replays the agent's thoughts",
        not thought or thought in text_of(before, session, "agent_thought_chunk"),
        "agent_thought_chunk not replayed",
    )


@requirement(
    "SESSION-LOAD-UNKNOWN",
    "CAPABILITY",
    "session/load of an unknown sessionId is answered with an error",
)
async def test_load_unknown_session(agent: AgentConnection, workspace: Path, check: Checks) -> None:
    await agent.initialize()
    capability_or_na(agent, "loadSession")
    answer = await agent.request(
        "session/load",
        {"sessionId": "sess_conformance_unknown", "cwd": str(workspace), "mcpServers": []},
    )
    code = assert_error(answer, "session/load of an unknown session")
    check.should(
        "SESSION-LOAD-UNKNOWN-CODE",
        "loading an unknown session is -32602 or -32002",
        code in (-32602, -32002),
        f"error code {code}",
    )


@requirement(
    "SESSION-RESUME",
    "CAPABILITY",
    "session/resume (in a new process) answers without replaying history, and the "
    "conversation goes on",
)
async def test_resume_does_not_replay(harness: Harness, model: Model, workspace: Path) -> None:
    model.plan(reply(f"Noted: {REPLY_WORD}."))
    session, _ = await first_process(harness, "sessionCapabilities.resume")
    async with harness.spawn() as second:
        await second.initialize()
        resume_id = await second.send_request(
            "session/resume", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        answer, before = await second.response(resume_id)
        assert isinstance(answer.get("result"), dict), f"session/resume answered {answer}"
        replay = updates(before, session, *HISTORY_KINDS)
        replay += updates(await second.late_updates(session), None, *HISTORY_KINDS)
        assert not replay, f"session/resume replayed history: {replay[:2]}"
        count = model.request_count()
        stop_reason((await second.prompt(session, "What was the word?"))[0])
        assert_history_restored(model, count)


@requirement(
    "SESSION-FORK",
    "CAPABILITY",
    "session/fork answers a new sessionId that carries the conversation; the "
    "original session still works",
)
async def test_fork(agent: AgentConnection, model: Model, workspace: Path) -> None:
    model.plan(reply(f"Noted: {REPLY_WORD}."))
    await agent.initialize()
    capability_or_na(agent, "sessionCapabilities.fork")
    session, _ = await remember(agent, workspace)
    forked = await agent.call(
        "session/fork", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    fork_id = forked.get("sessionId")
    assert isinstance(fork_id, str) and fork_id != session, f"session/fork answered {forked}"
    count = model.request_count()
    stop_reason((await agent.prompt(fork_id, "What was the word?"))[0])
    assert_history_restored(model, count)
    stop_reason((await agent.prompt(session, "Still here?"))[0])


def _is_iso8601(value: Any) -> bool:
    try:
        datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


async def listed(agent: AgentConnection, **params: Any) -> list[dict[str, Any]]:
    result = await agent.call("session/list", params)
    return list(result.get("sessions") or [])


@requirement(
    "SESSION-LIST",
    "CAPABILITY",
    "session/list shows a session with its cwd, and its cwd filter works",
)
async def test_list(
    agent: AgentConnection, harness: Harness, workspace: Path, check: Checks
) -> None:
    await agent.initialize()
    capability_or_na(agent, "sessionCapabilities.list")
    session, _ = await remember(agent, workspace)
    everything = await listed(agent)
    mine = [s for s in everything if s.get("sessionId") == session]
    assert mine, f"session/list does not show {session}"
    assert mine[0].get("cwd") == str(workspace), f"listed cwd {mine[0].get('cwd')!r}"
    stamp = mine[0].get("updatedAt")
    if stamp is not None:
        check.should(
            "SESSION-LIST-UPDATED-AT",
            "updatedAt is an ISO 8601 timestamp",
            _is_iso8601(stamp),
            f"updatedAt {stamp!r}",
        )
    filtered = await listed(agent, cwd=str(workspace))
    assert session in [s.get("sessionId") for s in filtered], "the cwd filter dropped it"
    elsewhere = harness.root / "elsewhere"
    elsewhere.mkdir()
    assert session not in [s.get("sessionId") for s in await listed(agent, cwd=str(elsewhere))]
    answer = await agent.request("session/list", {"cursor": "conformance-bogus-cursor"})
    check.should(
        "SESSION-LIST-BAD-CURSOR",
        "session/list with a cursor it never made is -32602",
        answer.get("error", {}).get("code") == -32602,
        f"answered {answer.get('error') or answer.get('result')}"[:150],
    )


@requirement(
    "SESSION-LIST-PAGING",
    "CAPABILITY",
    "with more sessions than a page holds, following nextCursor lists every session exactly once",
)
async def test_list_paging(agent: AgentConnection, harness: Harness) -> None:
    await agent.initialize()
    capability_or_na(agent, "sessionCapabilities.list")
    folder = harness.root / "paging"
    folder.mkdir()
    created: list[str] = []
    first: dict[str, Any] = {}
    while len(created) < 60 and not first.get("nextCursor"):
        for _ in range(10):
            created.append(await agent.new_session(folder))
        first = await agent.call("session/list", {"cwd": str(folder)})
        if not first.get("sessions"):
            not_applicable("the agent does not list sessions that have no messages")
    if not first.get("nextCursor"):
        not_applicable(f"the agent put all {len(created)} sessions on one page")
    seen: list[str] = [s["sessionId"] for s in first["sessions"]]
    page, pages = first, 1
    while page.get("nextCursor"):
        assert pages < 100, "more than 100 pages: the cursor does not advance"
        page = await agent.call("session/list", {"cwd": str(folder), "cursor": page["nextCursor"]})
        seen += [s["sessionId"] for s in page.get("sessions") or []]
        pages += 1
    twice = {s for s in seen if seen.count(s) > 1}
    assert not twice, f"{len(twice)} sessions listed twice across pages"
    missing = set(created) - set(seen)
    assert not missing, f"{len(missing)} of {len(created)} sessions missing over {pages} pages"


@requirement(
    "SESSION-DELETE",
    "CAPABILITY",
    "session/delete answers an object; the session is then gone from session/list",
)
async def test_delete(agent: AgentConnection, workspace: Path) -> None:
    await agent.initialize()
    capability_or_na(agent, "sessionCapabilities.delete")
    session, _ = await remember(agent, workspace)
    result = await agent.call("session/delete", {"sessionId": session})
    assert isinstance(result, dict), f"session/delete answered {result!r}, not an object"
    if agent.capability("sessionCapabilities.list") is not None:
        ids = [s.get("sessionId") for s in await listed(agent, cwd=str(workspace))]
        assert session not in ids, "the deleted session is still listed"
    if agent.capability("loadSession"):
        answer = await agent.request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        assert_error(answer, "session/load of a deleted session")
