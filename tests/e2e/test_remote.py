"""``iaccode serve`` end to end: the real server on loopback, driven over HTTP/1.1, HTTP/2 (h2c)
and WebSocket by real client libraries (httpx, httpx-sse, trio-websocket), with the fake
Messages API as the model. Every agent message is checked against the ACP schema.

The server runs in the test's process (``serve_remote`` with its stop hook:
``tests/support/serve.py``) but where the process is the point (``process``): SIGTERM and the
exit status, the token it prints, the refusal to start, what ``iaccode acp`` imports."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.processes import pid_alive
from acp_conformance.remote import TRANSPORTS, RemoteAgent, connect, http_client
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import METHOD_ALIASES, AgentConnection
from tests.support.serve import Server, ServerProcess, start_server

TOKEN = "remote-test-token-0123456789"
IDLE_TIMEOUT = 2
SEND_TIMEOUT = 3
SLOW = reply([f"word{i} " for i in range(200)], delay=0.02)


def write_config(home: Path, **serve: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[serve]"] + [f"{key} = {json.dumps(value)}" for key, value in serve.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


@pytest.fixture
async def server(agent_env: dict[str, str], tmp_path: Path) -> AsyncIterator[Server]:
    write_config(tmp_path / "home", idle_timeout=IDLE_TIMEOUT, send_timeout=SEND_TIMEOUT)
    async with start_server(agent_env, tmp_path / "serve.stderr", TOKEN) as started:
        yield started


@contextlib.asynccontextmanager
async def client(
    server: Server, transport: str, checker: WireChecker | None = None
) -> AsyncIterator[AgentConnection]:
    """A remote connection driven like a spawned agent (schema-checked)."""
    async with connect(server.url, server.token, transport) as remote:
        yield AgentConnection(
            remote,  # type: ignore[arg-type]
            checker or WireChecker(aliases=METHOD_ALIASES),
            server.stderr_path,
        )


def remote_of(agent: AgentConnection) -> RemoteAgent:
    remote = agent.process
    assert isinstance(remote, RemoteAgent)
    return remote


def text_of(updates: list[dict[str, Any]], session: str) -> str:
    return "".join(
        u["params"]["update"]["content"]["text"]
        for u in updates
        if u.get("method") == "session/update"
        and u["params"]["sessionId"] == session
        and u["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def allow_once(message: dict[str, Any]) -> dict[str, Any]:
    assert message["method"] == "session/request_permission"
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


# -- the whole flow, on each transport ----------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_session_from_start_to_load_from_another_connection(
    server: Server, model_server: FakeModelServer, workspace: Path, transport: str
) -> None:
    model_server.enqueue(
        reply(["Hello ", "from ", "far ", "away."]),
        reply(tool_uses=[ToolUse("toolu_w", "write_file", {"path": "a.tf", "content": "x\n"})]),
        reply("Written."),
        SLOW,
    )
    async with client(server, transport) as agent:
        remote = remote_of(agent)
        result = await agent.initialize()
        assert result["agentInfo"]["name"] == "iaccode"
        assert remote.connection_id
        session = await agent.new_session(workspace)
        # A streamed prompt: the chunks come on the stream before the answer.
        response, updates = await agent.prompt(session, "hi")
        assert response["result"]["stopReason"] == "end_turn"
        assert text_of(updates, session) == "Hello from far away."
        # A permission question, answered (over HTTP: by a POST).
        response, updates, requests = await agent.run_prompt(session, "write", allow_once)
        assert response["result"]["stopReason"] == "end_turn"
        assert [r["method"] for r in requests] == ["session/request_permission"]
        assert (workspace / "a.tf").read_text() == "x\n"
        # Cancel mid-stream.
        request_id = await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go on"}]}
        )
        await agent.receive_update("agent_message_chunk")
        await agent.notify("session/cancel", {"sessionId": session})
        response, _ = await agent.response(request_id)
        assert response["result"]["stopReason"] == "cancelled"
        if transport != "websocket":
            statuses = [(m.get("method") if m else None, s) for m, s in remote.posts]
            assert statuses[0] == ("initialize", 200)
            assert {s for _, s in statuses[1:]} == {202}
            assert (None, 202) in statuses  # the permission answer
        # End the connection: DELETE (or closing the socket) ends its stream.
        await agent.close_stdin()
        with trio.fail_after(10):
            assert await remote.wait() == 0
    await server.wait_log(r"connection \S+ closed")
    # Its session was released: another connection loads it, history replayed.
    async with client(server, transport) as second:
        await second.initialize()
        _, before = await second.response(
            await second.send_request(
                "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
            )
        )
        assert "Hello from far away." in text_of(before, session)


async def test_http2_is_spoken_without_tls(server: Server) -> None:
    async with http_client("http2") as http:
        response = await http.post(
            server.url,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            content=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": 1},
                }
            ),
        )
        assert response.http_version == "HTTP/2"
        assert response.status_code == 200
        assert response.json()["result"]["protocolVersion"] == 1


# -- errors -------------------------------------------------------------------------------


async def post(http: httpx.AsyncClient, url: str, body: Any, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await http.post(
        url,
        content=content,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", **headers},
    )


async def first_event(stream: httpx.Response) -> dict[str, Any]:
    """The first SSE event's message. Stopped by a cancel, not a ``break``: that would leave
    httpx's inner async generators unclosed."""
    found: list[dict[str, Any]] = []
    with trio.fail_after(10), trio.CancelScope() as done:
        async for line in stream.aiter_lines():
            if line.startswith("data: ") and not found:
                found.append(json.loads(line[len("data: ") :]))
                done.cancel()
    return found[0]


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


@pytest.mark.parametrize("transport", ["http1", "http2"])
async def test_every_error_status(server: Server, workspace: Path, transport: str) -> None:
    url = server.url
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with http_client(transport) as http:
        connection = (await post(http, url, INIT)).headers["acp-connection-id"]
        conn = {"Acp-Connection-Id": connection}
        # The stream stays open throughout (a connection without one is reaped when idle).
        async with http.stream(
            "GET", url, headers={"Accept": "text/event-stream", **auth, **conn}
        ) as stream:
            assert stream.status_code == 200
            # 401: no token, a wrong one, a wrong scheme.
            for headers in (
                {},
                {"Authorization": "Bearer wrong-token-0123456789"},
                {"Authorization": f"Basic {TOKEN}"},
            ):
                response = await http.post(
                    url,
                    content=json.dumps(INIT),
                    headers={"Content-Type": "application/json", **headers},
                )
                assert response.status_code == 401
                assert response.headers["www-authenticate"].startswith("Bearer")
            assert (
                await http.get(url, headers={"Accept": "text/event-stream", **conn})
            ).status_code == 401
            # 403: a browser page of another site (a page of our own address may call us).
            own = url[: -len("/acp")]
            for origin in ("http://evil.example", "null", own.replace("127.0.0.1", "127.0.0.2")):
                assert (await post(http, url, INIT, Origin=origin)).status_code == 403
            for origin in (own, own.replace("127.0.0.1", "localhost")):
                response = await post(http, url, INIT, Origin=origin)
                assert response.status_code == 200
                await http.delete(
                    url,
                    headers={**auth, "Acp-Connection-Id": response.headers["acp-connection-id"]},
                )
            # 404: another path; an unknown connection (POST, GET, DELETE).
            other_path = url[: -len("/acp")] + "/other"
            assert (await http.get(other_path, headers=auth)).status_code == 404
            unknown = {"Acp-Connection-Id": "no-such-connection"}
            new = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(workspace), "mcpServers": []},
            }
            response = await post(http, url, new, **unknown)
            assert response.status_code == 404
            assert response.json()["id"] == 2 and response.json()["error"]["code"] == -32600
            assert (
                await http.get(url, headers={"Accept": "text/event-stream", **auth, **unknown})
            ).status_code == 404
            assert (await http.delete(url, headers={**auth, **unknown})).status_code == 404
            # 400: no connection id (POST, GET, DELETE); a session message without its header;
            # a body that is not JSON.
            response = await post(http, url, new)
            assert response.status_code == 400 and response.json()["id"] == 2
            assert (
                await http.get(url, headers={"Accept": "text/event-stream", **auth})
            ).status_code == 400
            assert (await http.delete(url, headers=auth)).status_code == 400
            prompt = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": "sess_x", "prompt": []},
            }
            assert (await post(http, url, prompt, **conn)).status_code == 400
            assert (
                await post(http, url, prompt, **conn, **{"Acp-Session-Id": "sess_y"})
            ).status_code == 400
            response = await post(http, url, b'{"jsonrpc": "2.0", "id": ', **conn)
            assert response.status_code == 400
            assert response.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": response.json()["error"]["message"]},
            }
            # 406: a GET that does not accept the event stream.
            assert (await http.get(url, headers={**auth, **conn})).status_code == 406
            assert (
                await http.get(url, headers={"Accept": "application/json", **auth, **conn})
            ).status_code == 406
            # 415: not JSON.
            response = await http.post(
                url, content=json.dumps(new), headers={"Content-Type": "text/plain", **auth, **conn}
            )
            assert response.status_code == 415
            # 413: a 20 MiB body (the limit is 4 MiB by default); nothing reaches the agent.
            huge = {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "session/new",
                "params": {"cwd": "x" * (20 << 20), "mcpServers": []},
            }
            assert (await post(http, url, huge, **conn)).status_code == 413
            # 501: a batch.
            assert (await post(http, url, [new], **conn)).status_code == 501
            # 405: another method.
            assert (await http.put(url, headers={**auth, **conn})).status_code == 405
            # 409: a second stream for one connection.
            assert (
                await http.get(url, headers={"Accept": "text/event-stream", **auth, **conn})
            ).status_code == 409
            # After all that, the connection still works: the answer comes on the stream.
            assert (await post(http, url, new, **conn)).status_code == 202
            answer = await first_event(stream)
            assert answer["id"] == 2 and answer["result"]["sessionId"].startswith("sess_")
    # A WebSocket upgrade passes the same checks (asked with httpx: trio-websocket leaks its
    # socket when the handshake is refused).
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    for headers, status in (
        (upgrade, 401),
        ({**upgrade, **auth, "Origin": "http://evil.example"}, 403),
    ):
        async with http_client("http1") as http:  # the server closes the connection after
            assert (await http.get(url, headers=headers)).status_code == status


async def test_a_20_mib_prompt_within_a_raised_limit(
    agent_env: dict[str, str], tmp_path: Path, model_server: FakeModelServer, workspace: Path
) -> None:
    write_config(tmp_path / "home", max_body_bytes=32 << 20)
    model_server.enqueue(reply("Read it all."))
    big = "terraform " * (2 << 20)  # 20 MiB of text
    # HTTP/1.1: over h2c, httpx's upload of a body this big sometimes stalls in its flow
    # control while another task reads the event stream on the same connection (the server
    # side of HTTP/2 is covered above: the flow, and the 413 for a 20 MiB body).
    async with (
        start_server(agent_env, tmp_path / "serve.stderr", TOKEN) as server,
        client(server, "http1") as agent,
    ):
        await agent.initialize()
        session = await agent.new_session(workspace)
        request_id = await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": big}]}
        )
        response, _ = await agent.response(request_id, timeout=60)
        assert response["result"]["stopReason"] == "end_turn"
        assert big in model_server.requests[-1].raw_body.decode()


# -- back-pressure --------------------------------------------------------------------------

BIG_STREAM = 20_000
"""Deltas of 1 KiB: more than the stream's queues and the sockets' buffers hold."""


async def test_a_slow_reader_gets_every_message(
    server: Server, model_server: FakeModelServer, workspace: Path
) -> None:
    deltas = [f"{i:06d}" + "x" * 1018 for i in range(BIG_STREAM)]
    model_server.enqueue(reply(deltas))
    async with client(server, "http1") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        request_id = await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "a lot"}]}
        )
        updates = []
        with trio.fail_after(120):
            while True:
                message = await agent.receive(timeout=60)
                if message.get("id") == request_id:
                    break
                updates.append(message)
                if len(updates) % 2000 == 0:
                    await trio.sleep(1)  # slow, but less than send_timeout at a time
        assert message["result"]["stopReason"] == "end_turn"
        assert text_of(updates, session) == "".join(deltas)  # all there, in order
    assert "read none of its stream" not in server.stderr


async def test_a_reader_that_stops_is_closed_with_a_reason(
    server: Server, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply(["x" * 1024] * BIG_STREAM), reply("still here"))
    async with http_client("http1") as http:
        connection = (await post(http, server.url, INIT)).headers["acp-connection-id"]
        conn = {"Acp-Connection-Id": connection}
        # The stream, on a plain socket we can stop reading (httpx reads ahead).
        host, port = server.url.split("//")[1].split("/")[0].split(":")
        with trio.socket.socket() as sock:
            await sock.connect((host, int(port)))
            await sock.send(
                (
                    f"GET /acp HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    f"Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n"
                    f"Acp-Connection-Id: {connection}\r\n\r\n"
                ).encode()
            )
            new = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(workspace), "mcpServers": []},
            }
            assert (await post(http, server.url, new, **conn)).status_code == 202
            seen = b""
            with trio.fail_after(10):
                while not (found := re.search(rb'"sessionId":"([^"]+)"', seen)):
                    seen += await sock.recv(65536)
            assert seen.startswith(b"HTTP/1.1 200")
            session = found.group(1).decode()
            prompt = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "flood"}]},
            }
            assert (
                await post(http, server.url, prompt, **conn, **{"Acp-Session-Id": session})
            ).status_code == 202
            # We read nothing more: the agent waits, then closes the connection, and says why.
            closing = await server.wait_log(
                r"connection (\S+) \(http, [^)]*\) closing: the client read none of its "
                r"stream for 3 s",
                timeout=60,
            )
            assert connection.startswith(closing.group(1))  # the log shows a prefix
            await server.wait_log(rf"connection {closing.group(1)} closed", timeout=30)
            assert (await post(http, server.url, new, **conn)).status_code == 404
            # Other connections are fine.
            async with client(server, "http2") as agent:
                await agent.initialize()
                other = await agent.new_session(workspace)
                response, updates = await agent.prompt(other, "hello?")
                assert response["result"]["stopReason"] == "end_turn"
                assert text_of(updates, other) == "still here"
            # The server still stops (the shutdown of a SIGTERM), with that client connected
            # and not reading (its socket was closed with the connection: nothing is left
            # waiting for it).
            server.terminate()
            with trio.fail_after(30):
                assert await server.wait() == 0


# -- vanishing clients, isolation -----------------------------------------------------------


def sleeper(pid_file: Path) -> dict[str, Any]:
    return reply(
        tool_uses=[
            ToolUse("toolu_sleep", "bash", {"command": f"echo $$ > {pid_file}; exec sleep 600"})
        ]
    )


async def wait_for_pid(pid_file: Path) -> int:
    path = trio.Path(pid_file)
    with trio.fail_after(20):
        while not (await path.exists() and (await path.read_text()).strip()):  # noqa: ASYNC110
            await trio.sleep(0.05)
    return int(await path.read_text())


@pytest.mark.parametrize("transport", ["http1", "websocket"])
async def test_a_client_that_vanishes_mid_turn(
    server: Server, tmp_path: Path, model_server: FakeModelServer, workspace: Path, transport: str
) -> None:
    pid_file = tmp_path / "sleep.pid"
    model_server.enqueue(sleeper(pid_file))
    async with client(server, "http2") as other:
        await other.initialize()
        other_session = await other.new_session(workspace)
        async with connect(server.url, TOKEN, transport) as remote:
            gone = AgentConnection(remote, None, server.stderr_path)  # type: ignore[arg-type]
            await gone.initialize()
            session = await gone.new_session(workspace)
            await gone.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
            await gone.send_request(
                "session/prompt",
                {"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]},
            )
            pid = await wait_for_pid(pid_file)
            assert pid_alive(pid)
            # The other connection prompts meanwhile, unaffected.
            model_server.enqueue(reply(["busy ", "elsewhere"]))
            response, updates = await other.prompt(other_session, "and you?")
            assert text_of(updates, other_session) == "busy elsewhere"
            assert all(u["params"]["sessionId"] == other_session for u in updates)
            await remote.vanish()
        # Reaped (WebSocket: at once; HTTP: after the idle timeout); the command is killed.
        await server.wait_log(
            r"closing: (its WebSocket closed|no request and no stream)", timeout=30
        )
        with trio.fail_after(30):
            while pid_alive(pid):  # noqa: ASYNC110 - another process
                await trio.sleep(0.05)
        model_server.enqueue(reply("still fine"))
        response, updates = await other.prompt(other_session, "still there?")
        assert text_of(updates, other_session) == "still fine"


async def test_two_connections_prompting_at_once(
    server: Server, workspace: Path, model_server: FakeModelServer
) -> None:
    model_server.enqueue(SLOW, SLOW)
    async with client(server, "http2") as one, client(server, "websocket") as two:
        await one.initialize()
        await two.initialize()
        first = await one.new_session(workspace)
        second = await two.new_session(workspace)
        results: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}

        async def run(agent: AgentConnection, session: str) -> None:
            results[session] = await agent.prompt(session, "count", timeout=60)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run, one, first)
            nursery.start_soon(run, two, second)
        expected = "".join(f"word{i} " for i in range(200))
        for session in (first, second):
            response, updates = results[session]
            assert response["result"]["stopReason"] == "end_turn"
            assert text_of(updates, session) == expected
            assert {u["params"]["sessionId"] for u in updates} == {session}  # isolated
        # A connection cannot reach another's live session.
        answer = await two.request(
            "session/prompt", {"sessionId": first, "prompt": [{"type": "text", "text": "mine now"}]}
        )
        assert answer["error"]["code"] == -32602


# -- starting the server ----------------------------------------------------------------------


@pytest.mark.process  # what the command prints
async def test_without_a_token_one_is_made_and_printed_once(
    agent_env: dict[str, str], tmp_path: Path
) -> None:
    stderr_path = tmp_path / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "iaccode", "serve", "--port", "0"],
            stdout=stderr,
            stderr=stderr,
            env=agent_env,
        )
        server = ServerProcess(process, stderr_path, "")
        try:
            await server.wait_listening()
            found = await server.wait_log(r"bearer token \(shown once[^:]*\): (\S+)")
            token = found.group(1)
            assert server.stderr.count(token) == 1
            log_file = tmp_path / "home" / "logs" / "iaccode.log"
            assert token not in log_file.read_text()
            async with http_client("http1") as http:
                assert (await http.post(server.url, json=INIT)).status_code == 401
                response = await http.post(
                    server.url, json=INIT, headers={"Authorization": f"Bearer {token}"}
                )
                assert response.status_code == 200
        finally:
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(15):
                assert await process.wait() == 0


@pytest.mark.process  # an exit status
async def test_a_public_address_without_a_token_is_refused(agent_env: dict[str, str]) -> None:
    env = {k: v for k, v in agent_env.items() if k != "IAC_CODE_SERVE_TOKEN"}
    command = [sys.executable, "-m", "iaccode", "serve", "--host", "0.0.0.0", "--port", "0"]
    done = await trio.run_process(command, env=env, capture_stderr=True, check=False)
    assert done.returncode == 2
    assert b"refusing to listen on 0.0.0.0 without a token" in done.stderr


@pytest.mark.process  # a signal, an exit status
async def test_sigterm_ends_turns_and_exits(
    server: Server, workspace: Path, model_server: FakeModelServer
) -> None:
    model_server.enqueue(SLOW)
    async with client(server, "websocket") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        request_id = await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "long"}]}
        )
        await agent.receive_update("agent_message_chunk")
        assert isinstance(server, ServerProcess)
        os.kill(server.process.pid, signal.SIGTERM)
        response, _ = await agent.response(request_id)
        assert response["result"]["stopReason"] == "cancelled"
        with trio.fail_after(15):
            assert await server.process.wait() == 0


@pytest.mark.process  # what a fresh process imports
async def test_acp_never_imports_hypercorn() -> None:
    code = (
        "import sys, iaccode.cli, iaccode.server.stdio, iaccode.server.agent; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('hypercorn', 'wsproto', 'h2') or m.startswith('iaccode.remote')))"
    )
    done = await trio.run_process([sys.executable, "-c", code], capture_stdout=True)
    assert done.stdout.strip() == b"[]"
