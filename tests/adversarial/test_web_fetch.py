"""web_fetch through the agent: every way of naming the machine itself, a private network or a
metadata service is refused before any connection.

A canary HTTP server listens on 127.0.0.1 and must see no connection; the loopback guard loaded
into the agent must see no attempt to leave the machine (an address the tool failed to refuse
would show up there instead of reaching the network). Redirects are covered in depth by
``tests/unit/tools/test_web_fetch.py`` (they need an allowed first hop, which only the unit
tests can configure); here a redirect chain cannot start, since every first hop is refused.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iaccode.llm.script import ToolUse, reply
from iaccode.tools.web_fetch import address_refusal
from tests.adversarial.conftest import Figures
from tests.adversarial.support import http_agent, request_tool_results, start
from tests.fakes.model_server import FakeModelServer

CATEGORY = "web_fetch"


class Canary:
    """A TCP listener on 127.0.0.1 that counts connections (and answers a redirect)."""

    def __init__(self) -> None:
        self.connections = 0
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen()
        self._socket.settimeout(0.1)
        self.port = self._socket.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except OSError:
                continue
            self.connections += 1
            try:
                conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            finally:
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1)
        self._socket.close()


def refused_urls(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/", f"http://localhost:{port}/", f"http://LOCALHOST:{port}/",
        f"http://localhost.:{port}/", f"http://app.localhost:{port}/", f"http://[::1]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/", f"http://[0:0:0:0:0:ffff:7f00:1]:{port}/",
        f"http://0x7f000001:{port}/", f"http://2130706433:{port}/", f"http://0177.0.0.1:{port}/",
        f"http://127.1:{port}/", f"http://127.0.0.2:{port}/", f"http://0:{port}/",
        f"http://0.0.0.0:{port}/", f"http://[::]:{port}/", f"https://127.0.0.1:{port}/",
        f"http://127.0.0.1:{port}@evil/", f"http://user:pw@127.0.0.1:{port}/",
        f"http://[64:ff9b::7f00:1]:{port}/", f"http://[2002:7f00:1::]:{port}/",
        "http://169.254.169.254/latest/meta-data/", "http://[::ffff:a9fe:a9fe]/",
        "http://[fd00:ec2::254]/", "http://169.254.170.2/v2/credentials",
        "http://100.100.100.200/", "http://168.63.129.16/", "http://metadata.google.internal/",
        "http://metadata/", "http://instance-data/", "http://10.0.0.1/", "http://172.16.0.1/",
        "http://192.168.1.1/", "http://100.64.0.1/", "http://[fe80::1]/", "http://[fc00::1]/",
        "http://224.0.0.1/", "http://255.255.255.255/", "http://240.0.0.1/",
        "file:///etc/passwd", f"gopher://127.0.0.1:{port}/", f"ftp://127.0.0.1:{port}/",
        f"http://127.0.0.1:{port}\\@example.com/", "http://[::ffff:10.0.0.1]/",
        "http://0x0a000001/", "http://%31%32%37.0.0.1/", "http://127.0.0.1:0/",
    ]


@pytest.fixture
def model_server():  # type: ignore[no-untyped-def]
    with FakeModelServer() as server:
        yield server


async def test_internal_addresses_are_refused_through_the_agent(
        tmp_path: Path, workspace: Path, model_server: FakeModelServer,
        figures: Figures) -> None:
    canary = Canary()
    try:
        urls = refused_urls(canary.port)
        model_server.enqueue(
            reply(tool_uses=[ToolUse(f"toolu_w{n}", "web_fetch", {"url": url})
                             for n, url in enumerate(urls)]),
            reply("done"))
        async with http_agent(tmp_path, model_server.base_url) as agent:
            session = await start(agent, workspace)
            response, _, requests = await agent.run_prompt(session, "fetch", timeout=60)
            assert response["result"]["stopReason"] == "end_turn"
            assert requests == []  # web_fetch never asks: it refuses
    finally:
        canary.close()
    results = request_tool_results(model_server.requests[1].body)
    not_refused = [(url, results[f"toolu_w{n}"]["content"][:200]) for n, url in enumerate(urls)
                   if results[f"toolu_w{n}"]["is_error"] is not True]
    assert not_refused == []
    assert canary.connections == 0, "web_fetch connected to loopback"
    figures.add(CATEGORY, "urls_refused_through_the_agent", len(urls))
    figures.add(CATEGORY, "cases", len(urls))


_V4 = st.integers(min_value=0, max_value=2 ** 32 - 1)
_INTERNAL_V4 = [("10.0.0.0", 8), ("127.0.0.0", 8), ("169.254.0.0", 16), ("172.16.0.0", 12),
                ("192.168.0.0", 16), ("100.64.0.0", 10), ("0.0.0.0", 8), ("224.0.0.0", 4),
                ("240.0.0.0", 4)]


@st.composite
def internal_v4(draw: st.DrawFn) -> str:
    import ipaddress

    base, bits = draw(st.sampled_from(_INTERNAL_V4))
    network = ipaddress.ip_network(f"{base}/{bits}")
    return str(network[draw(st.integers(min_value=0, max_value=network.num_addresses - 1))])


@settings(max_examples=300, deadline=None)
@given(internal_v4(), st.sampled_from(["plain", "mapped", "nat64", "6to4", "compat-mapped"]))
def test_every_internal_v4_address_is_refused_in_every_ipv6_disguise(
        figures: Figures, address: str, disguise: str) -> None:
    import ipaddress

    v4 = ipaddress.IPv4Address(address)
    forms = {
        "plain": v4,
        "mapped": ipaddress.IPv6Address(f"::ffff:{v4}"),
        "nat64": ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(v4)),
        "6to4": ipaddress.IPv6Address((0x2002 << 112) | (int(v4) << 80)),
        "compat-mapped": ipaddress.IPv6Address(f"0:0:0:0:0:ffff:{v4}"),
    }
    assert address_refusal(forms[disguise]) is not None, (address, disguise)
    figures.add(CATEGORY, "address_disguises_checked", 1)
