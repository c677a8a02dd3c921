"""web_fetch through the agent: every way of naming the machine itself, a private network or a
metadata service is refused before any connection.

A canary HTTP server listens on 127.0.0.1 and must see no connection; the loopback guard loaded
into the agent must see no attempt to leave the machine (an address the tool failed to refuse
would show up there instead of reaching the network). Host names that resolve to internal
addresses come from the guard's fake DNS (``IAC_ADV_GUARD_HOSTS``). Redirects, a slow drip, an
endless body and a server that never answers come from a hostile server on 127.0.0.1 that the
agent is allowed to reach (config.toml ``[tools] web_allowed_hosts``), as an intranet server
would be: its redirects to anywhere internal are refused, and its time and size caps hold.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply
from hypothesis import given, settings
from hypothesis import strategies as st

from iaccode.tools.web.addresses import address_refusal
from tests.adversarial.conftest import Figures
from tests.adversarial.support import http_agent, request_tool_results, start

CATEGORY = "web_fetch"


class Listener:
    """A TCP server on 127.0.0.1: each connection is counted and handled in its own thread."""

    def __init__(self) -> None:
        self.connections = 0
        self.handlers: list[threading.Thread] = []
        self._stop = threading.Event()
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._socket.settimeout(0.1)
        self.port = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except OSError:
                continue
            self.connections += 1
            handler = threading.Thread(target=self._handle_and_close, args=(conn,), daemon=True)
            self.handlers.append(handler)
            handler.start()

    def _handle_and_close(self, conn: socket.socket) -> None:
        try:
            self.handle(conn)
        except OSError:
            return  # the agent hung up: what a cap does
        finally:
            conn.close()

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for handler in self.handlers:
            handler.join(2)
        self._socket.close()


class Canary(Listener):
    """Must see no connection (it would answer a redirect to the metadata address)."""

    def handle(self, conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )


def refused_urls(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/",
        f"http://localhost:{port}/",
        f"http://LOCALHOST:{port}/",
        f"http://localhost.:{port}/",
        f"http://app.localhost:{port}/",
        f"http://[::1]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://[0:0:0:0:0:ffff:7f00:1]:{port}/",
        f"http://0x7f000001:{port}/",
        f"http://2130706433:{port}/",
        f"http://0177.0.0.1:{port}/",
        f"http://127.1:{port}/",
        f"http://127.0.0.2:{port}/",
        f"http://0:{port}/",
        f"http://0.0.0.0:{port}/",
        f"http://[::]:{port}/",
        f"https://127.0.0.1:{port}/",
        f"http://127.0.0.1:{port}@evil/",
        f"http://user:pw@127.0.0.1:{port}/",
        f"http://[64:ff9b::7f00:1]:{port}/",
        f"http://[2002:7f00:1::]:{port}/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[fd00:ec2::254]/",
        "http://169.254.170.2/v2/credentials",
        "http://100.100.100.200/",
        "http://168.63.129.16/",
        "http://metadata.google.internal/",
        "http://metadata/",
        "http://instance-data/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://240.0.0.1/",
        "file:///etc/passwd",
        f"gopher://127.0.0.1:{port}/",
        f"ftp://127.0.0.1:{port}/",
        f"http://127.0.0.1:{port}\\@example.com/",
        "http://[::ffff:10.0.0.1]/",
        "http://0x0a000001/",
        "http://%31%32%37.0.0.1/",
        "http://127.0.0.1:0/",
    ]


@pytest.fixture
def model_server():  # type: ignore[no-untyped-def]
    with FakeModelServer() as server:
        yield server


async def test_internal_addresses_are_refused_through_the_agent(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    canary = Canary()
    try:
        urls = refused_urls(canary.port)
        model_server.enqueue(
            reply(
                tool_uses=[
                    ToolUse(f"toolu_w{n}", "web_fetch", {"url": url}) for n, url in enumerate(urls)
                ]
            ),
            reply("done"),
        )
        async with http_agent(tmp_path, model_server.base_url) as agent:
            session = await start(agent, workspace)
            response, _, requests = await agent.run_prompt(session, "fetch", timeout=60)
            assert response["result"]["stopReason"] == "end_turn"
            assert requests == []  # web_fetch never asks: it refuses
    finally:
        canary.close()
    results = request_tool_results(model_server.requests[1].body)
    not_refused = [
        (url, results[f"toolu_w{n}"]["content"][:200])
        for n, url in enumerate(urls)
        if results[f"toolu_w{n}"]["is_error"] is not True
    ]
    assert not_refused == []
    assert canary.connections == 0, "web_fetch connected to loopback"
    figures.add(CATEGORY, "urls_refused_through_the_agent", len(urls))
    figures.add(CATEGORY, "cases", len(urls))


_V4 = st.integers(min_value=0, max_value=2**32 - 1)
_INTERNAL_V4 = [
    ("10.0.0.0", 8),
    ("127.0.0.0", 8),
    ("169.254.0.0", 16),
    ("172.16.0.0", 12),
    ("192.168.0.0", 16),
    ("100.64.0.0", 10),
    ("0.0.0.0", 8),
    ("224.0.0.0", 4),
    ("240.0.0.0", 4),
]


@st.composite
def internal_v4(draw: st.DrawFn) -> str:
    import ipaddress

    base, bits = draw(st.sampled_from(_INTERNAL_V4))
    network = ipaddress.ip_network(f"{base}/{bits}")
    return str(network[draw(st.integers(min_value=0, max_value=network.num_addresses - 1))])


@settings(max_examples=300, deadline=None)
@given(internal_v4(), st.sampled_from(["plain", "mapped", "nat64", "6to4", "compat-mapped"]))
def test_every_internal_v4_address_is_refused_in_every_ipv6_disguise(
    figures: Figures, address: str, disguise: str
) -> None:
    import ipaddress

    v4 = ipaddress.IPv4Address(address)
    forms: dict[str, ipaddress.IPv4Address | ipaddress.IPv6Address] = {
        "plain": v4,
        "mapped": ipaddress.IPv6Address(f"::ffff:{v4}"),
        "nat64": ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(v4)),
        "6to4": ipaddress.IPv6Address((0x2002 << 112) | (int(v4) << 80)),
        "compat-mapped": ipaddress.IPv6Address(f"0:0:0:0:0:ffff:{v4}"),
    }
    assert address_refusal(forms[disguise]) is not None, (address, disguise)
    figures.add(CATEGORY, "address_disguises_checked", 1)


FAKE_DNS = {
    "rebind.adv.test": "127.0.0.1",
    "v6.adv.test": "::1",
    "meta.adv.test": "169.254.169.254",
    "lan.adv.test": "192.168.0.10",
    "mapped.adv.test": "::ffff:10.1.2.3",
    "mixed.adv.test": "93.184.216.34,10.0.0.7",  # one public address does not launder a private
}


def dns_env() -> dict[str, str]:
    return {"IAC_ADV_GUARD_HOSTS": "; ".join(f"{k}={v}" for k, v in FAKE_DNS.items())}


async def test_names_that_resolve_internal_are_refused(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    canary = Canary()
    try:
        urls = [f"http://{name}:{canary.port}/" for name in FAKE_DNS]
        urls += [f"http://{name}.:{canary.port}/x" for name in FAKE_DNS]  # the trailing dot
        model_server.enqueue(
            reply(
                tool_uses=[
                    ToolUse(f"toolu_d{n}", "web_fetch", {"url": url}) for n, url in enumerate(urls)
                ]
            ),
            reply("done"),
        )
        async with http_agent(tmp_path, model_server.base_url, extra=dns_env()) as agent:
            session = await start(agent, workspace)
            response, _, _ = await agent.run_prompt(session, "fetch", timeout=60)
            assert response["result"]["stopReason"] == "end_turn"
    finally:
        canary.close()
    results = request_tool_results(model_server.requests[1].body)
    for n, url in enumerate(urls):
        assert results[f"toolu_d{n}"]["is_error"] is True, (url, results[f"toolu_d{n}"])
        assert "resolves to" in results[f"toolu_d{n}"]["content"], results[f"toolu_d{n}"]
    assert canary.connections == 0, "web_fetch connected to loopback"
    figures.add(CATEGORY, "dns_names_refused", len(urls))
    figures.add(CATEGORY, "cases", len(urls))


class HostileServer(Listener):
    """A server the agent may reach (an intranet host): it redirects into internal addresses,
    drips, floods and stalls. Counts what it flooded."""

    def __init__(self, redirects: list[str]) -> None:
        self.redirects = redirects
        self.flood_bytes = 0
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        conn.settimeout(60)
        request = b""
        while b"\r\n\r\n" not in request:
            data = conn.recv(4096)
            if not data:
                return
            request += data
        path = request.split(b" ", 2)[1].decode()
        if path.startswith("/redirect/"):
            target = self.redirects[int(path.rsplit("/", 1)[1])]
            conn.sendall(
                f"HTTP/1.1 302 Found\r\nLocation: {target}\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
            )
        elif path == "/drip":  # headers, then a byte every 0.2 s, forever
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n"
            )
            while not self._stop.wait(0.2):
                conn.sendall(b"d")
        elif path == "/drip-headers":  # the status line, one byte at a time
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"s" * 10_000:
                if self._stop.wait(0.2):
                    return
                conn.sendall(bytes([byte]))
        elif path == "/flood":  # an endless chunked body, as fast as it is read
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            chunk = b"%x\r\n%s\r\n" % (65536, b"f" * 65536)
            while not self._stop.is_set():
                conn.sendall(chunk)
                self.flood_bytes += 65536
        elif path == "/silent":  # never a byte back
            self._stop.wait(60)


async def test_an_allowed_host_cannot_redirect_inside_drip_or_flood(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    canary = Canary()
    redirects = [
        f"http://127.0.0.1:{canary.port}/",
        f"http://localhost:{canary.port}/",
        f"http://rebind.adv.test:{canary.port}/",
        "http://169.254.169.254/latest/meta-data/",
        "http://meta.adv.test/",
        "http://[::1]/",
        "http://10.0.0.1/",
        "file:///etc/passwd",
        f"http://[::ffff:127.0.0.1]:{canary.port}/",
    ]
    server = HostileServer(redirects)
    home = tmp_path / "agent-home"
    home.mkdir()
    timeout = 2.0
    (home / "config.toml").write_text(
        f'[tools]\nweb_timeout = {timeout}\nweb_allowed_hosts = ["127.0.0.1:{server.port}"]\n'
    )
    base = f"http://127.0.0.1:{server.port}"
    calls = {f"toolu_r{n}": f"{base}/redirect/{n}" for n in range(len(redirects))}
    capped = {
        "toolu_drip": f"{base}/drip",
        "toolu_headers": f"{base}/drip-headers",
        "toolu_silent": f"{base}/silent",
        "toolu_flood": f"{base}/flood",
    }
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse(call_id, "web_fetch", {"url": url})
                for call_id, url in {**calls, **capped}.items()
            ]
        ),
        reply("done"),
    )
    try:
        async with http_agent(tmp_path, model_server.base_url, extra=dns_env(), home=home) as agent:
            session = await start(agent, workspace)
            began = time.monotonic()
            response, _, _ = await agent.run_prompt(session, "fetch", timeout=60)
            took = time.monotonic() - began
            assert response["result"]["stopReason"] == "end_turn"
            rss = agent_rss(agent)
    finally:
        server.close()
        canary.close()
    results = request_tool_results(model_server.requests[1].body)
    for call_id, url in calls.items():
        assert results[call_id]["is_error"] is True, (url, results[call_id])
        assert "refused" in results[call_id]["content"], results[call_id]
    assert canary.connections == 0, "a redirect reached loopback"
    for call_id in ("toolu_drip", "toolu_headers", "toolu_silent"):
        assert results[call_id]["is_error"] is True, results[call_id]
        assert (
            "timed out" in results[call_id]["content"]
            or "took longer" in results[call_id]["content"]
        ), results[call_id]
    flood = results["toolu_flood"]
    assert "cut at the 5242880-byte download limit" in flood["content"][:300], flood
    assert len(flood["content"]) <= 40_000, len(flood["content"])  # the output cap
    assert server.flood_bytes <= 16 * 1024 * 1024, server.flood_bytes  # it stopped reading
    # The calls run concurrently: all of them within the timeout, plus the model's turns.
    assert took < timeout * 4 + 10, f"the fetches took {took:.1f} s"
    assert rss < 400 * 1024, f"agent RSS {rss} KiB after the flood"
    figures.add(CATEGORY, "redirects_into_internal_refused", len(calls))
    figures.add(CATEGORY, "capped_fetches", len(capped))
    figures.add(CATEGORY, "cases", len(calls) + len(capped))


def agent_rss(agent: object) -> int:
    from tests.adversarial.support import rss_kib

    return rss_kib(agent.process.pid)  # type: ignore[attr-defined]
