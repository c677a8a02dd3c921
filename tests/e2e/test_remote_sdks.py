"""``iaccode serve`` driven by the official ACP SDKs' own remote clients, as editors built on
them would drive it: the TypeScript SDK (``@agentclientprotocol/sdk`` 2.4.0,
``experimental/http-client`` and ``experimental/ws-client``, on node with ``ws``; installed
from npm by ``remote_clients/package-lock.json``) and the Python SDK (``acp.http.client``,
``acp.ws.client``).

Each runs one flow: initialize, a session, a prompt, a prompt with a permission question, a
prompt cancelled mid-stream, a second session on the same connection; then a new connection
loads the first session. The HTTP clients open the RFD's session-scoped streams on their own
(the TypeScript one before its session/load too); the server must refuse none of their
requests, which its log would show.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import acp
import pytest
import trio
from acp.http.client import create_http_stream
from acp.schema import AgentMessageChunk
from acp.ws.client import create_websocket_stream
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import cache_dir
from acp_conformance.script import ToolUse, reply

from tests.support.serve import Server, start_server

TOKEN = "remote-sdk-test-token-0123456789"
CLIENTS = Path(__file__).resolve().parent / "remote_clients"
REFUSAL = re.compile(
    r"INFO iaccode\.remote\.app: (?:GET|POST|DELETE|PUT|WebSocket) .* "
    r"from \S+: (\d{3}) .*"
)
TRANSPORTS = ("http", "websocket")
WORDS = [f"word{i} " for i in range(300)]


def script_the_flow(model_server: FakeModelServer) -> None:
    model_server.enqueue(
        reply(["Hello ", "from ", "far ", "away."]),
        reply(tool_uses=[ToolUse("toolu_w", "write_file", {"path": "a.tf", "content": "x\n"})]),
        reply("Written."),
        reply(WORDS, delay=0.02),  # cancelled after its first chunk
        reply(["busy ", "elsewhere"]),
    )


@pytest.fixture
async def server(agent_env: dict[str, str], tmp_path: Path) -> AsyncIterator[Server]:
    """``iaccode serve`` in the test's process (``tests/support/serve.py``)."""
    async with start_server(agent_env, tmp_path / "serve.stderr", TOKEN) as started:
        yield started


def refusals(server: Server) -> list[str]:
    return [match.group(0) for match in REFUSAL.finditer(server.stderr)]


def texts(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


async def load_when_released(server: Server, count: int) -> None:
    """The first connection ended (its sessions released) before another loads one."""
    with trio.fail_after(15):
        while len(re.findall(r"connection \S+ closed", server.stderr)) < count:  # noqa: ASYNC110
            await trio.sleep(0.05)


# -- TypeScript ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def ts_clients() -> Path:
    """A folder with the TypeScript clients installed (``npm ci`` once per lock file, in the
    tests' cache) and ``flow.mjs`` beside them."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("skipped: no node")
    lock = (CLIENTS / "package-lock.json").read_bytes()
    folder = cache_dir().parent / f"remote-clients-{hashlib.sha256(lock).hexdigest()[:12]}"
    if not (folder / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(CLIENTS / name, folder / name)
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=folder,
            check=True,
            capture_output=True,
            timeout=300,
        )
    shutil.copy(CLIENTS / "flow.mjs", folder / "flow.mjs")
    return folder


async def run_flow(
    ts_clients: Path, server: Server, transport: str, workspace: Path, *load: str
) -> dict[str, Any]:
    done = await trio.run_process(
        ["node", str(ts_clients / "flow.mjs"), server.url, TOKEN, transport, str(workspace), *load],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_typescript_sdk_clients(
    ts_clients: Path, server: Server, model_server: FakeModelServer, workspace: Path, transport: str
) -> None:
    script_the_flow(model_server)
    flow = await run_flow(ts_clients, server, transport, workspace)
    results, updates = flow["results"], flow["seen"]["updates"]
    one, two = results["one"]["sessionId"], results["two"]["sessionId"]
    assert results["init"]["agentInfo"]["name"] == "iaccode"
    assert [results[k]["stopReason"] for k in ("hello", "write", "cancelled", "other")] == [
        "end_turn",
        "end_turn",
        "cancelled",
        "end_turn",
    ]
    assert texts(updates[one]).startswith("Hello from far away.Written.word0 ")
    assert texts(updates[two]) == "busy elsewhere"  # each session's updates, its own
    assert [q["toolCall"]["title"] for q in flow["seen"]["questions"]] == ["Write a.tf"]
    assert (workspace / "a.tf").read_text() == "x\n"
    await load_when_released(server, 1)
    loaded = await run_flow(ts_clients, server, transport, workspace, one)
    assert "Hello from far away." in texts(loaded["seen"]["updates"][one])
    assert refusals(server) == []


# -- Python ----------------------------------------------------------------------------------------


class Recorder(acp.Client):
    """Every update by session; permission questions answered "allow once"."""

    def __init__(self) -> None:
        self.updates: dict[str, list[Any]] = {}
        self.questions: list[Any] = []
        self.chunk = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.setdefault(session_id, []).append(update)
        if isinstance(update, AgentMessageChunk):
            self.chunk.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        self.questions.append(tool_call)
        chosen = next(o for o in options if o.kind == "allow_once")
        return acp.RequestPermissionResponse(
            outcome=acp.schema.AllowedOutcome(option_id=chosen.option_id, outcome="selected")
        )

    def text(self, session_id: str) -> str:
        return "".join(
            u.content.text
            for u in self.updates.get(session_id, [])
            if isinstance(u, AgentMessageChunk)
        )


async def python_transport(server: Server, transport: str) -> Any:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if transport == "http":
        return create_http_stream(server.url, headers=headers)
    return await create_websocket_stream("ws" + server.url[len("http") :], headers=headers)


async def python_flow(
    server: Server, transport: str, workspace: Path, client: Recorder
) -> dict[str, Any]:
    async with acp.connect_to_agent(client, await python_transport(server, transport)) as conn:
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        one = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        hello = await conn.prompt(session_id=one, prompt=[acp.text_block("hi")])
        write = await conn.prompt(session_id=one, prompt=[acp.text_block("write a file")])
        client.chunk.clear()
        long = asyncio.ensure_future(conn.prompt(session_id=one, prompt=[acp.text_block("go on")]))
        await client.chunk.wait()
        await conn.cancel(session_id=one)
        cancelled = await long
        two = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        other = await conn.prompt(session_id=two, prompt=[acp.text_block("and you?")])
    return {
        "init": init,
        "one": one,
        "two": two,
        "stops": [r.stop_reason for r in (hello, write, cancelled, other)],
    }


async def python_load(
    server: Server, transport: str, workspace: Path, session: str, client: Recorder
) -> None:
    async with acp.connect_to_agent(client, await python_transport(server, transport)) as conn:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.load_session(cwd=str(workspace), session_id=session, mcp_servers=[])


def in_asyncio(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, timeout=60))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_python_sdk_clients(
    server: Server, model_server: FakeModelServer, workspace: Path, transport: str
) -> None:
    """The SDK is asyncio; it runs in a thread of its own beside the test's trio."""
    script_the_flow(model_server)
    client = Recorder()
    flow = await trio.to_thread.run_sync(
        in_asyncio, python_flow(server, transport, workspace, client)
    )
    assert flow["init"].agent_info.name == "iaccode"
    assert flow["stops"] == ["end_turn", "end_turn", "cancelled", "end_turn"]
    assert client.text(flow["one"]).startswith("Hello from far away.Written.word0 ")
    assert client.text(flow["two"]) == "busy elsewhere"
    assert [q.title for q in client.questions] == ["Write a.tf"]
    await load_when_released(server, 1)
    replayed = Recorder()
    await trio.to_thread.run_sync(
        in_asyncio, python_load(server, transport, workspace, flow["one"], replayed)
    )
    assert "Hello from far away." in replayed.text(flow["one"])
    assert refusals(server) == []
