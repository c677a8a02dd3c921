"""``iaccode serve`` before the token, and against clients that misbehave after it: a real
server process on loopback, attacked with raw sockets (HTTP/1.1 written by hand, HTTP/2 frames
made with the ``h2`` library, WebSocket frames by hand), its sockets counted from /proc.

What must hold: no client ends the server, whatever it sends; a client without the token is
answered from its headers and costs no more than one short-lived connection, however many of
them come; what a client sends reaches the log escaped; the server answers only to its own
host names; a client that stops reading loses its socket; a taken port is one line and exit 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import httpx
import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.processes import tcp_peer_ports
from acp_conformance.remote import connect as connect_remote
from acp_conformance.script import reply

from tests.adversarial.conftest import Figures
from tests.adversarial.support import http_env
from tests.support.agent_process import AgentConnection
from tests.support.serve import SERVE_COMMAND, ServerProcess, spawn_server

CATEGORY = "remote_server"
TOKEN = "adversarial-serve-token-0123456789"
BODY_TIMEOUT = 2
SEND_TIMEOUT = 3
MAX_UNTRUSTED = 128  # iaccode.remote.listener.MAX_UNTRUSTED, as a client sees it
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def write_serve_config(home: Path, **serve: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[serve]"] + [f"{key} = {json.dumps(value)}" for key, value in serve.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


@pytest.fixture
async def server(tmp_path: Path, model_server: FakeModelServer) -> AsyncIterator[ServerProcess]:
    home = tmp_path / "home"
    env = http_env(home, model_server.base_url)
    write_serve_config(
        home,
        body_timeout=BODY_TIMEOUT,
        send_timeout=SEND_TIMEOUT,
        allowed_hosts=["acp.example.com"],
    )
    async with spawn_server(env, tmp_path / "serve.stderr", TOKEN) as process:
        yield process


def address(server: ServerProcess) -> tuple[str, int]:
    host, port = server.url.split("//")[1].split("/")[0].rsplit(":", 1)
    return host, int(port)


def everything_logged(server: ServerProcess, tmp_path: Path) -> str:
    log_file = tmp_path / "home" / "logs" / "iaccode.log"
    return server.stderr + (log_file.read_text(errors="replace") if log_file.exists() else "")


async def still_serving(server: ServerProcess, within: float = 5) -> None:
    """The process is alive and a client with the token is answered within the protocol's
    5 s (or ``within``)."""
    assert server.process.returncode is None, f"the server ended: {server.stderr[-3000:]}"
    # One client, so the DELETE that ends the ACP connection goes on the same TCP connection:
    # a new one may meet the flood's full file table (a reset), which is not what is tested.
    async with httpx.AsyncClient(timeout=within) as http:
        with trio.fail_after(within):
            response = await http.post(
                server.url, json=INIT, headers={"Authorization": f"Bearer {TOKEN}"}
            )
        assert response.status_code == 200, response.text
        connection = response.headers["acp-connection-id"]
        await http.delete(
            server.url,
            headers={"Authorization": f"Bearer {TOKEN}", "Acp-Connection-Id": connection},
        )


async def connect(server: ServerProcess) -> trio.SocketStream:
    return await trio.open_tcp_stream(*address(server))


async def read_until(stream: trio.SocketStream, marker: bytes, timeout: float) -> bytes:
    """Bytes until ``marker`` (or the server closed) within ``timeout``; what came if not."""
    seen = b""
    with trio.move_on_after(timeout):
        while marker not in seen:
            try:
                data = await stream.receive_some(65536)
            except trio.BrokenResourceError:
                break
            if not data:
                break
            seen += data
    return seen


async def closed_by_server(stream: trio.SocketStream, timeout: float) -> bool:
    """The server closed the connection within ``timeout`` (EOF or reset; data is read and
    dropped meanwhile)."""
    with trio.move_on_after(timeout):
        while True:
            try:
                if not await stream.receive_some(65536):
                    return True
            except trio.BrokenResourceError:
                return True
    return False


def request_head(
    method: str, server: ServerProcess, *lines: str, path: str = "/acp", host: str | None = None
) -> bytes:
    host = host or "{}:{}".format(*address(server))
    return (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
        + "".join(f"{line}\r\n" for line in lines)
        + "\r\n"
    ).encode()


UPGRADE = (
    "Connection: Upgrade",
    "Upgrade: websocket",
    "Sec-WebSocket-Version: 13",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
)


def ws_frame(payload: bytes, opcode: int = 0x1, masked: bool = True) -> bytes:
    mask = os.urandom(4) if masked else b""
    length = len(payload)
    head = bytes([0x80 | opcode])
    if length < 126:
        head += bytes([(0x80 if masked else 0) | length])
    else:
        head += bytes([(0x80 if masked else 0) | 126]) + length.to_bytes(2, "big")
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if masked else payload
    return head + mask + body


# -- no client ends the server --------------------------------------------------------------


def h2_client() -> h2.connection.H2Connection:
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    return connection


def h2_request(
    server: ServerProcess, *, token: str | None, length: int, host: str | None = None
) -> list[tuple[str, str]]:
    headers = [
        (":method", "POST"),
        (":path", "/acp"),
        (":scheme", "http"),
        (":authority", host or "{}:{}".format(*address(server))),
        ("content-type", "application/json"),
        ("content-length", str(length)),
    ]
    if token is not None:
        headers.append(("authorization", f"Bearer {token}"))
    return headers


async def h2_events(
    stream: trio.SocketStream, connection: h2.connection.H2Connection, timeout: float
) -> list[h2.events.Event]:
    """What the server sends within ``timeout`` (acknowledging its settings)."""
    found: list[h2.events.Event] = []
    with trio.move_on_after(timeout):
        while not any(isinstance(e, h2.events.ResponseReceived) for e in found):
            data = await stream.receive_some(65536)
            if not data:
                break
            found += connection.receive_data(data)
            await stream.send_all(connection.data_to_send())
    return found


def status_of(events: list[h2.events.Event]) -> int | None:
    for event in events:
        if isinstance(event, h2.events.ResponseReceived):
            return int(dict(event.headers)[b":status"])
    return None


async def ws_wrong_token_and_frame_together(server: ServerProcess) -> None:
    async with await connect(server) as stream:
        await stream.send_all(
            request_head("GET", server, *UPGRADE, "Authorization: Bearer wrong") + ws_frame(b"hi")
        )
        await closed_by_server(stream, 5)


async def ws_wrong_token_then_frames(server: ServerProcess) -> None:
    async with await connect(server) as stream:
        await stream.send_all(request_head("GET", server, *UPGRADE, "Authorization: Bearer wrong"))
        await read_until(stream, b"\r\n\r\n", 5)
        with contextlib.suppress(trio.BrokenResourceError):
            for _ in range(20):
                await stream.send_all(ws_frame(b'{"jsonrpc": "2.0"}'))
        await closed_by_server(stream, 5)


async def ws_other_origin_and_frame(server: ServerProcess) -> None:
    async with await connect(server) as stream:
        await stream.send_all(
            request_head(
                "GET",
                server,
                *UPGRADE,
                f"Authorization: Bearer {TOKEN}",
                "Origin: http://evil.example",
            )
            + ws_frame(b"x" * 300)
        )
        await closed_by_server(stream, 5)


async def ws_other_path_and_close_frame(server: ServerProcess) -> None:
    async with await connect(server) as stream:
        await stream.send_all(
            request_head("GET", server, *UPGRADE, f"Authorization: Bearer {TOKEN}", path="/other")
            + ws_frame(b"\x03\xe8", opcode=0x8)
        )
        await closed_by_server(stream, 5)


async def ws_token_then_broken_frames(server: ServerProcess) -> None:
    """With the token: an unmasked frame, a reserved opcode, a length past the limit."""
    for frame in (
        ws_frame(b"hi", masked=False),
        ws_frame(b"hi", opcode=0x3),
        bytes([0x81, 0xFF]) + (2**62).to_bytes(8, "big") + os.urandom(4),
    ):
        async with await connect(server) as stream:
            await stream.send_all(
                request_head("GET", server, *UPGRADE, f"Authorization: Bearer {TOKEN}")
            )
            await read_until(stream, b"\r\n\r\n", 5)
            with contextlib.suppress(trio.BrokenResourceError):
                await stream.send_all(frame)
            await closed_by_server(stream, 5)


async def h2_wrong_token_then_body(server: ServerProcess) -> None:
    """The 401 comes before the body; the body comes anyway, 256 KiB of it, on a stream the
    server stops reading (and then closes) after 64 KiB."""
    async with await connect(server) as stream:
        connection = h2_client()
        connection.send_headers(1, h2_request(server, token="wrong", length=256 << 10))
        await stream.send_all(connection.data_to_send())
        await h2_events(stream, connection, 5)
        sent = 0
        with (
            trio.move_on_after(5),
            contextlib.suppress(trio.BrokenResourceError, h2.exceptions.ProtocolError),
        ):
            while sent < 256 << 10:
                room = min(connection.local_flow_control_window(1), 16384)
                if room:
                    connection.send_data(1, b"x" * room)
                    sent += room
                    await stream.send_all(connection.data_to_send())
                    continue
                data = await stream.receive_some(65536)  # wait for a window update
                if not data:
                    break
                connection.receive_data(data)
                await stream.send_all(connection.data_to_send())
        await closed_by_server(stream, 5)


async def h2_garbage_after_preface(server: ServerProcess) -> None:
    async with await connect(server) as stream:
        await stream.send_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + os.urandom(4096))
        await closed_by_server(stream, 5)


async def h1_pipelined_after_refusal(server: ServerProcess) -> None:
    async with await connect(server) as stream:
        body = json.dumps(INIT).encode()
        refused = request_head(
            "POST", server, "Content-Type: application/json", f"Content-Length: {len(body) + 1000}"
        )
        await stream.send_all(refused + body + request_head("GET", server) * 50)
        await closed_by_server(stream, 5)


ATTACKS: list[Callable[[ServerProcess], Awaitable[None]]] = [
    ws_wrong_token_and_frame_together,
    ws_wrong_token_then_frames,
    ws_other_origin_and_frame,
    ws_other_path_and_close_frame,
    ws_token_then_broken_frames,
    h2_wrong_token_then_body,
    h2_garbage_after_preface,
    h1_pipelined_after_refusal,
]


async def test_no_client_can_end_the_server(server: ServerProcess, figures: Figures) -> None:
    for attack in ATTACKS:
        await attack(server)
        await trio.sleep(0.2)  # what the server does with it, it has done by now
        try:
            await still_serving(server)
        except AssertionError as exc:
            raise AssertionError(f"after {attack.__name__}: {exc}") from None
        figures.add(CATEGORY, "connection_failures_survived")
    assert "the server failed" not in server.stderr


# -- refused from the headers, and a bounded body ---------------------------------------------

HUGE = 300 << 20


async def test_401_comes_from_the_headers_before_a_body_byte(
    server: ServerProcess, figures: Figures
) -> None:
    # HTTP/1.1: a 300 MiB body announced, 1 KiB of it sent.
    async with await connect(server) as stream:
        await stream.send_all(
            request_head(
                "POST", server, "Content-Type: application/json", f"Content-Length: {HUGE}"
            )
            + b"x" * 1024
        )
        answer = await read_until(stream, b"\r\n\r\n", 5)
        assert answer.startswith(b"HTTP/1.1 401"), f"no 401 within 5 s: {answer[:200]!r}"
        sent = 1024
        with trio.move_on_after(10), contextlib.suppress(trio.BrokenResourceError):
            while sent < HUGE:  # the server closes the connection instead of reading it all
                await stream.send_all(b"x" * 65536)
                sent += 65536
        assert sent < 64 << 20, f"{sent >> 20} MiB of an unauthenticated body were taken"
    figures.add(CATEGORY, "refused_from_the_headers")
    # HTTP/2: the same, the answer before the body's first DATA frame.
    async with await connect(server) as stream:
        connection = h2_client()
        connection.send_headers(1, h2_request(server, token="wrong", length=HUGE))
        await stream.send_all(connection.data_to_send())
        assert status_of(await h2_events(stream, connection, 5)) == 401
    figures.add(CATEGORY, "refused_from_the_headers")
    await still_serving(server)


async def test_a_body_that_drips_is_cut_off(server: ServerProcess, figures: Figures) -> None:
    """With the token: 1 byte a second of a 1,000-byte body; 408 after body_timeout."""
    async with await connect(server) as stream:
        await stream.send_all(
            request_head(
                "POST",
                server,
                "Content-Type: application/json",
                f"Authorization: Bearer {TOKEN}",
                "Content-Length: 1000",
            )
        )
        answer = b""
        with trio.move_on_after(BODY_TIMEOUT + 8):
            for _ in range(1000):
                with contextlib.suppress(trio.BrokenResourceError):
                    await stream.send_all(b" ")
                with trio.move_on_after(1):
                    data = await stream.receive_some(65536)
                    answer += data
                    if not data or b"\r\n\r\n" in answer:
                        break
        assert answer.startswith(b"HTTP/1.1 408"), f"no 408 after {BODY_TIMEOUT} s: {answer!r}"
        assert await closed_by_server(stream, 5)
    figures.add(CATEGORY, "dripping_bodies_cut_off")
    # Without the token the drip is refused at once.
    async with await connect(server) as stream:
        await stream.send_all(
            request_head("POST", server, "Content-Type: application/json", "Content-Length: 1000")
            + b" "
        )
        assert (await read_until(stream, b"\r\n\r\n", 5)).startswith(b"HTTP/1.1 401")
        assert await closed_by_server(stream, 5)
    await still_serving(server)


FLOOD = 400
FLOOD_FILES = 320
"""The server's file descriptors during the flood: fewer than the flood's connections."""


async def test_connections_without_the_token_leave_room_for_real_clients(
    server: ServerProcess, figures: Figures
) -> None:
    """FLOOD connections that never finish their headers, each opened again a second after
    the server closes it, against a server allowed FLOOD_FILES file descriptors: it holds at
    most MAX_UNTRUSTED of them, and a client with the token is still answered (the slack: the
    flood runs in this test's own process, on the same two cores)."""
    pid = server.process.pid
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (FLOOD_FILES, FLOOD_FILES))
    host, port = address(server)
    ours: set[int] = set()
    held_most = 0

    async def slow_client() -> None:
        while True:
            try:
                stream = await trio.open_tcp_stream(host, port)
            except OSError:
                await trio.sleep(1)
                continue
            async with stream:
                ours.add(stream.socket.getsockname()[1])
                with contextlib.suppress(trio.BrokenResourceError):
                    await stream.send_all(b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                await closed_by_server(stream, 60)
            await trio.sleep(1)

    async with trio.open_nursery() as nursery:
        for _ in range(FLOOD):
            nursery.start_soon(slow_client)
        for _ in range(3):  # a real client, three times, while the flood goes on
            await trio.sleep(1)
            held_most = max(held_most, len(tcp_peer_ports(pid) & ours))
            await still_serving(server, within=15)
        nursery.cancel_scope.cancel()
    figures.add(CATEGORY, "connections_without_the_token", len(ours))
    figures.most(CATEGORY, "most_held_without_the_token", held_most)
    assert held_most <= MAX_UNTRUSTED + 8, f"{held_most} connections without the token held"
    assert "the server failed" not in server.stderr


# -- what reaches the log ----------------------------------------------------------------------

FORGED = "2026-01-01 00:00:00,000 WARNING iaccode: forged line"


async def test_what_a_client_sends_reaches_the_log_escaped(
    server: ServerProcess, tmp_path: Path
) -> None:
    forged_path = "/acp%0A" + FORGED.replace(" ", "%20") + "%1B[2J%E2%80%AE"
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=5) as http:
        for headers, status in (({}, 401), (auth, 404)):
            response = await http.get(server.url.replace("/acp", forged_path), headers=headers)
            assert response.status_code == status
        await server.wait_log(r"(?s)GET /acp.{0,300}?: 404 no such endpoint")
        logged = everything_logged(server, tmp_path)
        assert not re.search(rf"^{re.escape(FORGED)}", logged, re.MULTILINE), logged[-2000:]
        # Headers cannot hold a line break, but they can hold other bytes.
        connection = (await http.post(server.url, json=INIT, headers=auth)).headers[
            "acp-connection-id"
        ]
        for name, value in (
            ("Acp-Connection-Id", "\x1b[31mred\u202e"),
            ("Acp-Session-Id", "sess\u202e\x7f"),
        ):
            raw = {
                key.encode(): text.encode()
                for key, text in {
                    **auth,
                    "Accept": "text/event-stream",
                    "Acp-Connection-Id": connection,
                }.items()
            }
            response = await http.get(server.url, headers={**raw, name.encode(): value.encode()})
            assert response.status_code == 404
    await server.wait_log(r"has no session")
    logged = everything_logged(server, tmp_path)
    assert "\x1b" not in logged and "\u202e" not in logged and "\x7f" not in logged
    assert "\u00e2\u0080\u00ae" not in logged  # the bidi override's bytes, read as latin-1
    assert "\\x1b[2J" in logged  # shown escaped


async def test_connection_ids_are_logged_as_a_prefix(server: ServerProcess, tmp_path: Path) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(timeout=5) as http:
        connection = (await http.post(server.url, json=INIT, headers=auth)).headers[
            "acp-connection-id"
        ]
        await http.delete(server.url, headers={**auth, "Acp-Connection-Id": connection})
        # Refusals naming it too.
        await http.post(
            server.url,
            json={"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
            headers={**auth, "Acp-Connection-Id": connection},
        )
    await server.wait_log(rf"connection {connection[:8]}\S* closed")
    assert connection not in everything_logged(server, tmp_path)


# -- the names the server answers to -------------------------------------------------------------


async def test_the_server_answers_only_to_its_own_host_names(server: ServerProcess) -> None:
    """DNS rebinding: a page of attacker.example whose name now resolves to 127.0.0.1 sends
    ``Host: attacker.example`` (and no Origin on a simple request, in some browsers)."""
    _, port = address(server)
    for host, status in (
        (f"attacker.example:{port}", 421),
        ("attacker.example", 421),
        (f"localhost.attacker.example:{port}", 421),
        (f"127.0.0.1:{port}", 200),
        (f"localhost:{port}", 200),
        (f"LOCALHOST.:{port}", 200),
        (f"[::1]:{port}", 200),
        ("acp.example.com", 200),
    ):
        async with await connect(server) as stream:
            body = json.dumps(INIT).encode()
            await stream.send_all(
                request_head(
                    "POST",
                    server,
                    "Content-Type: application/json",
                    f"Authorization: Bearer {TOKEN}",
                    f"Content-Length: {len(body)}",
                    host=host,
                )
                + body
            )
            answer = await read_until(stream, b"\r\n\r\n", 5)
            assert answer.startswith(f"HTTP/1.1 {status}".encode()), (host, answer[:300])
    async with await connect(server) as stream:  # the WebSocket upgrade too
        await stream.send_all(
            request_head(
                "GET",
                server,
                *UPGRADE,
                f"Authorization: Bearer {TOKEN}",
                host=f"attacker.example:{port}",
            )
        )
        assert (await read_until(stream, b"\r\n\r\n", 5)).startswith(b"HTTP/1.1 421")


# -- a client that stops reading ---------------------------------------------------------------


@contextlib.asynccontextmanager
async def small_socket(server: ServerProcess) -> AsyncIterator[trio.socket.SocketType]:
    """A socket with a small receive buffer, so that not reading it soon stops the server."""
    with trio.socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        await sock.connect(address(server))
        yield sock


async def send_all(sock: trio.socket.SocketType, data: bytes) -> None:
    while data:
        data = data[await sock.send(data) :]


async def until_session_id(sock: trio.socket.SocketType) -> str:
    seen = b""
    with trio.fail_after(10):
        while not (found := re.search(rb'"sessionId":"([^"]+)"', seen)):
            seen += await sock.recv(65536)
    return found.group(1).decode()


async def until_server_lets_go(server: ServerProcess, sock: trio.socket.SocketType) -> None:
    """The server holds no socket to ``sock`` (within 10 s)."""
    local_port = sock.getsockname()[1]
    with trio.fail_after(10):
        while local_port in tcp_peer_ports(server.process.pid):  # noqa: ASYNC110 - /proc
            await trio.sleep(0.1)


async def test_a_client_that_stops_reading_loses_its_socket(
    server: ServerProcess, model_server: FakeModelServer, tmp_path: Path, figures: Figures
) -> None:
    model_server.enqueue(*[reply([c * 1024] * 20_000) for c in "xyz"])
    workspace = tmp_path / "project"
    workspace.mkdir()
    new = {"cwd": str(workspace), "mcpServers": []}
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    # Over HTTP: the event stream on a socket of its own, which we stop reading.
    async with httpx.AsyncClient(timeout=10) as http, small_socket(server) as sock:
        connection = (await http.post(server.url, json=INIT, headers=auth)).headers[
            "acp-connection-id"
        ]
        conn = {**auth, "Acp-Connection-Id": connection}
        await send_all(
            sock,
            request_head(
                "GET",
                server,
                f"Authorization: Bearer {TOKEN}",
                "Accept: text/event-stream",
                f"Acp-Connection-Id: {connection}",
            ),
        )
        assert (
            await http.post(
                server.url,
                headers=conn,
                json={"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new},
            )
        ).status_code == 202
        session = await until_session_id(sock)
        assert (
            await http.post(
                server.url,
                headers={**conn, "Acp-Session-Id": session},
                json={
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": "flood"}]},
                },
            )
        ).status_code == 202
        await server.wait_log(r"\(http, [^)]*\) closing: the client read none", timeout=60)
        await until_server_lets_go(server, sock)
    figures.add(CATEGORY, "stalled_readers_closed")
    # Over WebSocket: the same.
    async with small_socket(server) as sock:
        await send_all(
            sock, request_head("GET", server, *UPGRADE, f"Authorization: Bearer {TOKEN}")
        )
        answer = b""
        with trio.fail_after(5):
            while b"\r\n\r\n" not in answer:
                answer += await sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 101"), answer
        for number, (method, params) in enumerate(
            (("initialize", {"protocolVersion": 1}), ("session/new", new))
        ):
            await send_all(
                sock,
                ws_frame(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
                    ).encode()
                ),
            )
        session = await until_session_id(sock)
        await send_all(
            sock,
            ws_frame(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 9,
                        "method": "session/prompt",
                        "params": {
                            "sessionId": session,
                            "prompt": [{"type": "text", "text": "flood"}],
                        },
                    }
                ).encode()
            ),
        )
        await server.wait_log(r"\(websocket, [^)]*\) closing: the client read none", timeout=60)
        await until_server_lets_go(server, sock)
    figures.add(CATEGORY, "stalled_readers_closed")
    # Over HTTP with a session stream: the connection's stream read, the session's not.
    async with (
        connect_remote(server.url, TOKEN, "http1", session_streams=False) as remote,
        small_socket(server) as sock,
    ):
        agent = AgentConnection(remote, None, server.stderr_path)  # type: ignore[arg-type]
        await agent.initialize()
        session = await agent.new_session(workspace)
        await send_all(
            sock,
            request_head(
                "GET",
                server,
                f"Authorization: Bearer {TOKEN}",
                "Accept: text/event-stream",
                f"Acp-Connection-Id: {remote.connection_id}",
                f"Acp-Session-Id: {session}",
            ),
        )
        answer = b""
        with trio.fail_after(5):
            while b"\r\n\r\n" not in answer:
                answer += await sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "flood"}]}
        )
        assert remote.connection_id is not None
        await server.wait_log(
            rf"connection {remote.connection_id[:8]} \(http, [^)]*\) "
            r"closing: the client read none",
            timeout=60,
        )
        await until_server_lets_go(server, sock)
    figures.add(CATEGORY, "stalled_readers_closed")
    await still_serving(server)


# -- starting ---------------------------------------------------------------------------------


async def test_a_port_in_use_is_one_line_and_exit_2(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    env = http_env(tmp_path / "home", model_server.base_url, {"IAC_CODE_SERVE_TOKEN": TOKEN})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [*SERVE_COMMAND[:-1], str(port)]
        assert command[0] == sys.executable
        done = await trio.run_process(command, env=env, capture_stderr=True, check=False)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if "cannot listen" in line]
    assert errors == [f"iaccode: cannot listen on 127.0.0.1:{port}: Address already in use"]
