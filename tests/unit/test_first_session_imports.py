"""The first session's path imports only what opening a session needs.

What an editor waits for is spawn -> the first ``session/new`` answered
(``docs/performance.md``): everything the main thread imports until then is on that path. The
turn loop, the tools, the IaC readers, the system prompt's sections, the ``mcp`` and model SDKs, the
listing's sqlite3 and the remote stack load later (``iaccode/preload.py``, the first prompt);
so do the stored keys, the redaction of secrets and what reads a session's exposure to them.
``iaccode acp`` itself loads the log's redaction and the secrets seal before the server
(``cli.run_acp``): those are not part of the server's path checked here.
The server runs in a fresh interpreter on memory streams; a finder records every module the
main thread imports, from the start to the moment the answer to ``session/new`` is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.environment import agent_environment

SCRIPT = r"""
import json, sys, threading

imported = []


class Spy:
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            imported.append(name)
        return None


sys.meta_path.insert(0, Spy())

import trio
import trio.testing

from iaccode.config import Config
from iaccode.server.provider import make_provider
from iaccode.server.serve import serve_agent
from iaccode.wire.connection import Connection

CWD = sys.argv[1]
seen = {}


def tap(direction, line, *rest):
    if direction == "out" and b'"id":2,' in line and "answer" not in seen:
        seen["answer"] = list(imported)


async def main():
    config = Config.from_env()
    client, server = trio.testing.memory_stream_pair()
    connection = Connection(server, server, max_line_bytes=1 << 20, tap=tap)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_agent, config, make_provider(config), connection)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 1}}
        new = {"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": CWD, "mcpServers": []}}
        await client.send_all(json.dumps(init).encode() + b"\n"
                              + json.dumps(new).encode() + b"\n")
        data = b""
        while "answer" not in seen:
            data += await client.receive_some()
        await client.aclose()
    print(json.dumps(seen["answer"]))


trio.run(main)
"""

LATER = (
    "iaccode.turn.turn",
    "iaccode.turn.tool_runner",
    "iaccode.tools.bash",
    "iaccode.tools.read_file",
    "iaccode.tools.web_fetch",
    "iaccode.iac",
    "iaccode.context",
    "iaccode.mcp.connection",
    "iaccode.remote",
    "iaccode.transcript.recorder",
    "mcp",
    "anthropic",
    "openai",
    "httpx",
    "pathspec",
    "hcl2",
    "yaml",
    "sqlite3",
    "bs4",
    # A stored key is looked for only without one in the environment, the secrets of
    # the output only once a tool runs; the store makes its folder in a worker thread.
    "iaccode.llm.stored_keys",
    "keyring",
    "iaccode.redaction",
    "iaccode.secret_env",
    "iaccode.private_files",
    "iaccode.process_secrets",
    "iaccode.turn.exposure",
)


def test_opening_the_first_session_imports_none_of_what_a_prompt_needs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = agent_environment(tmp_path / "home", {"ANTHROPIC_API_KEY": "sk-test"})
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(project)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    imported: list[str] = json.loads(done.stdout)
    assert "iaccode.server.agent" in imported  # the spy saw the server load
    early = sorted(
        name
        for name in imported
        if any(name == later or name.startswith(later + ".") for later in LATER)
    )
    assert early == []
