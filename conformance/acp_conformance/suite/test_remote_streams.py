"""A remote agent's two kinds of stream (the remote-transport RFD as revised on 2026-05-04):
the connection-scoped GET stream (``Acp-Connection-Id``) and one session-scoped GET stream per
session (``Acp-Connection-Id`` + ``Acp-Session-Id``). Only for ``--url`` over HTTP (``http1``,
``http2``); n/a on stdio and over WebSocket, which has one stream for everything.

The suite's remote client opens a session's stream when the answer that gives it the session
arrives (:mod:`acp_conformance.remote`), so these tests can tell which stream each message
came on (``RemoteAgent.arrivals``).
"""

from __future__ import annotations

from pathlib import Path

import httpx

from acp_conformance.driver import AgentConnection
from acp_conformance.harness import Harness
from acp_conformance.remote import RemoteAgent
from acp_conformance.requirements import not_applicable, requirement
from acp_conformance.scenarios import Model, start, stop_reason
from acp_conformance.script import reply

NO_SUCH_SESSION = "sess_conformance_no_such_session"


def remote_http(agent: AgentConnection, harness: Harness) -> RemoteAgent:
    remote: object = agent.process  # typed as a process; a RemoteAgent with --url
    if harness.url is None or not isinstance(remote, RemoteAgent):
        not_applicable("a remote agent's streams (--url)")
    if remote.transport == "websocket":
        not_applicable("over WebSocket everything comes on the one socket")
    return remote


async def stream_status(remote: RemoteAgent, session: str | None) -> int:
    """The status of a GET for that stream, the stream closed at once."""
    headers = {"Accept": "text/event-stream", **remote.headers(session=session)}
    async with (
        httpx.AsyncClient(timeout=10) as http,
        http.stream("GET", remote.url, headers=headers) as response,
    ):
        return response.status_code


@requirement(
    "REMOTE-SESSION-STREAM",
    "MUST",
    "over HTTP, a session-scoped GET stream (Acp-Connection-Id + Acp-Session-Id) is "
    "opened for a session of the connection, and carries that session's updates and "
    "the answer to its session/prompt",
)
async def test_a_session_stream_carries_its_session(
    agent: AgentConnection, harness: Harness, workspace: Path, model: Model
) -> None:
    remote = remote_http(agent, harness)
    model.plan(reply(["On ", "its ", "own ", "stream."]))
    session = await start(agent, workspace)
    assert remote.streams.get(session) == 200, f"the session's GET: {remote.streams}"
    arrived = len(remote.arrivals)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "Hello"}]}
    )
    answer, before = await agent.response(request_id)
    stop_reason(answer)
    assert any(m.get("method") == "session/update" for m in before), "no update came"
    during = remote.arrivals[arrived:]
    elsewhere = [
        a for a in during if a.stream != session and (a.session == session or a.id == request_id)
    ]
    assert not elsewhere, f"messages of the session on another stream: {elsewhere[:3]}"


@requirement(
    "REMOTE-CONNECTION-ANSWERS",
    "MUST",
    "over HTTP, the answers to session/new and session/list come on the connection-scoped stream",
)
async def test_connection_answers_on_the_connection_stream(
    agent: AgentConnection, harness: Harness, workspace: Path
) -> None:
    remote = remote_http(agent, harness)
    await agent.initialize()
    new_id = await agent.send_request("session/new", {"cwd": str(workspace), "mcpServers": []})
    await agent.response(new_id)
    session_caps = agent.init_result.get("agentCapabilities", {}).get("sessionCapabilities", {})
    ids = [new_id]
    if "list" in session_caps:
        list_id = await agent.send_request("session/list", {})
        await agent.response(list_id)
        ids.append(list_id)
    streams = {a.id: a.stream for a in remote.arrivals if a.method is None and a.id in ids}
    assert streams == dict.fromkeys(ids), f"answers by stream: {streams}"


@requirement(
    "REMOTE-SESSION-STREAM-UNKNOWN",
    "MUST",
    "over HTTP, a session-scoped GET for a session the connection does not have "
    "(and no such session exists) is answered 404",
)
async def test_a_stream_for_no_session_is_404(
    agent: AgentConnection, harness: Harness, workspace: Path
) -> None:
    remote = remote_http(agent, harness)
    await start(agent, workspace)
    assert await stream_status(remote, NO_SUCH_SESSION) == 404


@requirement(
    "REMOTE-STREAM-CONFLICT",
    "SHOULD",
    "over HTTP, a second GET stream of the same scope while one is open is answered "
    "409 (the TypeScript SDK's client fails only that session on a 409)",
)
async def test_a_second_stream_of_a_scope_is_409(
    agent: AgentConnection, harness: Harness, workspace: Path
) -> None:
    remote = remote_http(agent, harness)
    session = await start(agent, workspace)
    assert await stream_status(remote, None) == 409
    assert await stream_status(remote, session) == 409
    answer, _ = await agent.prompt(session, "still there?")
    stop_reason(answer)


@requirement(
    "REMOTE-SESSION-FALLBACK",
    "SHOULD",
    "over HTTP, a client that opens no session stream (one of before the RFD's "
    "revision of 2026-05-04) gets the session's messages on the connection stream",
)
async def test_without_a_session_stream_all_comes_on_the_connection_stream(
    agent: AgentConnection, harness: Harness, workspace: Path, model: Model
) -> None:
    remote = remote_http(agent, harness)
    remote.session_streams = False
    model.plan(reply(["All ", "on ", "one."]))
    session = await start(agent, workspace)
    answer, before = await agent.prompt(session, "Hello")
    stop_reason(answer)
    assert any(m.get("method") == "session/update" for m in before), "no update came"
    assert not remote.streams
    assert {a.stream for a in remote.arrivals} == {None}
