"""``initialize`` answered before the rest of the agent loads (iaccode/server/handshake.py).

The early answer must be byte for byte the full server's. Each case spawns the agent twice:
once with ``initialize`` first (the early path answers it), once behind a notification (the
early path leaves the connection to the full server, which answers it), and compares the raw
lines. The debug log says which one answered.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.environment import agent_environment
from acp_conformance.schema import WireChecker

from tests.support.agent_process import AGENT_COMMAND, SEED_ALIASES, AgentConnection, spawn_agent

pytestmark = pytest.mark.process  # the early handshake is the start of a process

EARLY = "initialize was answered before start-up"
DIFFERS = "differs from the server's"
PROBE = b'{"jsonrpc":"2.0","method":"_iaccode/probe"}\n'
"""An extension notification the agent ignores: sent first, it leaves the handshake to the
full server."""


def _initialize(params: Any, request_id: Any = 1) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    return json.dumps(message).encode() + b"\n"


async def _answer(env: dict[str, str], stderr: Path, data: bytes,
                  command: list[str] | None = None) -> tuple[bytes, str]:
    """The raw line the agent answers ``data`` with, and its log once it has exited."""
    env = {**env, "IAC_CODE_LOG_LEVEL": "DEBUG"}
    checker = WireChecker(aliases=SEED_ALIASES)
    async with spawn_agent(env, stderr, checker, command) as agent:
        await agent.send_raw(data)
        await agent.receive()
        await agent.close_stdin()
        assert await agent.wait_exit(timeout=10) == 0
        return agent.raw_lines[-1], agent.stderr


async def _both(env: dict[str, str], tmp_path: Path, line: bytes,
                args: tuple[str, ...] = ()) -> bytes:
    """The early answer to ``line`` after checking it equals the full server's."""
    command = [*AGENT_COMMAND, *args] if args else None
    early, early_log = await _answer(env, tmp_path / "early.stderr", line, command)
    full, full_log = await _answer(env, tmp_path / "full.stderr", PROBE + line, command)
    assert EARLY in early_log and DIFFERS not in early_log, early_log[-3000:]
    assert EARLY not in full_log
    assert early == full
    return early


PARAMS = [
    pytest.param({"protocolVersion": 1}, id="only-the-version"),
    pytest.param({"protocolVersion": 1, "clientCapabilities": {}}, id="empty-capabilities"),
    pytest.param({"protocolVersion": 1,
                  "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                                         "terminal": True},
                  "clientInfo": {"name": "zed", "title": "Zed", "version": "0.201.3"}},
                 id="an-editor"),
    pytest.param({"protocolVersion": 1,
                  "clientCapabilities": {"fs": {"readTextFile": False, "_meta": {"x": [1]}},
                                         "future": {"nested": [None, {"a": 2.5}]},
                                         "_meta": {"zed": True}},
                  "clientInfo": {"name": "c", "version": "1", "_meta": {}, "extra": 1},
                  "somethingNew": ["a", {"b": None}], "_meta": {"traceparent": "00-1-2-01"}},
                 id="unknown-fields-and-meta"),
]


@pytest.mark.parametrize("params", PARAMS)
async def test_the_early_answer_is_the_full_servers(tmp_path: Path, params: Any) -> None:
    env = agent_environment(tmp_path / "home")
    answer = await _both(env, tmp_path, _initialize(params))
    assert json.loads(answer)["result"]["authMethods"][0]["id"] == "anthropic-api-key"


@pytest.mark.parametrize("request_id", [0, 2**53, -7, "init", "ünïcode ✓", "\ud800lone"])
async def test_any_request_id_is_echoed_the_same(tmp_path: Path, request_id: Any) -> None:
    env = agent_environment(tmp_path / "home", {"ANTHROPIC_API_KEY": "k"})
    answer = await _both(env, tmp_path, _initialize({"protocolVersion": 1}, request_id))
    assert json.loads(answer)["id"] == request_id


def _write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


AUTH_CASES = [
    pytest.param({"ANTHROPIC_API_KEY": "k"}, "", (), None, id="anthropic-key"),
    pytest.param({"ANTHROPIC_AUTH_TOKEN": "t"}, "", (), None, id="anthropic-token"),
    pytest.param({"IAC_CODE_API_KEY": "k"}, "", (), None, id="iac-code-api-key"),
    pytest.param({"ANTHROPIC_API_KEY": "k", "IAC_CODE_API_KEY": ""}, 'api_key_env = "MINE"\n',
                 (), "anthropic-api-key", id="api-key-env-unset"),
    pytest.param({"IAC_CODE_PROVIDER": "openai"}, "", (), "openai-api-key", id="openai-no-key"),
    pytest.param({"OPENAI_API_KEY": "k"}, "", ("--provider", "openai"), None,
                 id="openai-option"),
    pytest.param({"MY_KEY": "k"}, 'provider = "deepseek"\napi_key_env = "MY_KEY"\n', (), None,
                 id="deepseek-config"),
    pytest.param({}, 'provider = "ollama"\nmodels = ["qwen3"]\n', (), None, id="ollama"),
    pytest.param({}, "", ("--provider=openai_compatible",), "openai-compatible-api-key",
                 id="compatible-without-url"),
    pytest.param({"IAC_CODE_BASE_URL": "http://127.0.0.1:9/v1"}, 'provider = "openai_compatible"\n',
                 ("--model", "m"), None, id="compatible-with-url-and-model"),
    pytest.param({"IAC_CODE_PROVIDER": "dashscope"}, 'provider = "openai"\n', (),
                 "dashscope-api-key", id="environment-beats-file"),
]


@pytest.mark.parametrize(("extra", "config", "args", "offered"), AUTH_CASES)
async def test_auth_methods_follow_the_provider_settings(
        tmp_path: Path, extra: dict[str, str], config: str, args: tuple[str, ...],
        offered: str | None) -> None:
    home = tmp_path / "home"
    if config:
        _write_config(home, config)
    env = agent_environment(home, extra)
    answer = await _both(env, tmp_path, _initialize({"protocolVersion": 1}), args)
    methods = json.loads(answer)["result"]["authMethods"]
    assert [method["id"] for method in methods] == ([offered] if offered else [])


async def test_a_model_script_needs_no_key(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"version": 1, "exchanges": []}')
    env = agent_environment(tmp_path / "home")
    answer = await _both(env, tmp_path, _initialize({"protocolVersion": 1}),
                         ("--model-script", str(script)))
    assert json.loads(answer)["result"]["authMethods"] == []


@pytest.mark.parametrize("asked", ["1", 2, 1.5, None])
async def test_another_version_gets_the_same_answer_after_a_warning(
        tmp_path: Path, asked: Any) -> None:
    env = agent_environment(tmp_path / "home")
    early, _ = await _answer(env, tmp_path / "early.stderr", _initialize({"protocolVersion": 1}))
    other, log = await _answer(env, tmp_path / "other.stderr",
                               _initialize({"protocolVersion": asked}))
    assert other == early
    assert EARLY not in log
    assert f"the client asked for protocol version {json.dumps(asked)}" in log


async def _agent(tmp_path: Path, checked: bool = True, **extra: str) -> Any:
    env = agent_environment(tmp_path / "home", {"IAC_CODE_LOG_LEVEL": "DEBUG", **extra})
    checker = WireChecker(aliases=SEED_ALIASES) if checked else None
    return spawn_agent(env, tmp_path / "agent.stderr", checker)


async def test_what_follows_initialize_in_the_same_write_is_served(
        tmp_path: Path, workspace: Path) -> None:
    async with await _agent(tmp_path, ANTHROPIC_API_KEY="k") as agent:
        new = {"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": str(workspace), "mcpServers": []}}
        await agent.send_raw(_initialize({"protocolVersion": 1}) + json.dumps(new).encode()
                             + b"\n")
        first, second = await agent.receive(), await agent.receive()
        assert first["id"] == 1 and first["result"]["protocolVersion"] == 1
        assert second["id"] == 2 and second["result"]["sessionId"]
        assert EARLY in agent.stderr


async def test_an_initialize_written_in_pieces_is_answered_early(tmp_path: Path) -> None:
    line = _initialize({"protocolVersion": 1, "clientInfo": {"name": "slow", "version": "1"}})
    async with await _agent(tmp_path, checked=False) as agent:  # it reads whole lines only
        for start in range(0, len(line), 20):
            await agent.send_raw(line[start:start + 20])
            await trio.sleep(0.01)
        answer = await agent.receive()
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
        await still_initialized(agent)
    assert EARLY in agent.stderr


async def still_initialized(agent: AgentConnection) -> None:
    """The full server took over initialized: a method other than initialize is served."""
    answer = await agent.request("session/list", {})
    assert "result" in answer, answer


@pytest.mark.parametrize("params", [
    pytest.param({"protocolVersion": 1, "clientCapabilities": {"terminal": "yes"}},
                 id="a-wrong-type"),
    pytest.param({"protocolVersion": 1, "clientCapabilities": None}, id="a-null"),
    pytest.param({"protocolVersion": 1, "clientInfo": {"name": "no version"}},
                 id="a-missing-field"),
    pytest.param({}, id="no-version"),
])
async def test_params_the_decoder_refuses_get_its_error(tmp_path: Path, params: Any) -> None:
    async with await _agent(tmp_path) as agent:
        await agent.send_raw(_initialize(params))
        answer = await agent.receive()
        assert answer["error"]["code"] == -32602, answer
        assert (await agent.call("initialize", {"protocolVersion": 1}))["protocolVersion"] == 1
    assert EARLY not in agent.stderr


async def test_a_first_line_longer_than_the_early_read_is_served(tmp_path: Path) -> None:
    params = {"protocolVersion": 1, "_meta": {"padding": "x" * 200_000}}
    async with await _agent(tmp_path) as agent:
        await agent.send_raw(_initialize(params))
        answer = await agent.receive()
        assert answer["result"]["protocolVersion"] == 1
        await still_initialized(agent)
    assert EARLY not in agent.stderr


async def test_a_line_over_the_line_limit_is_refused_as_before(tmp_path: Path) -> None:
    async with await _agent(tmp_path, IAC_CODE_MAX_LINE_BYTES="40") as agent:
        await agent.send_raw(_initialize({"protocolVersion": 1}))
        answer = await agent.receive()
        assert answer["error"]["code"] == -32600
    assert EARLY not in agent.stderr


async def test_a_recorded_session_keeps_the_handshake_for_the_transcript(
        tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    env = agent_environment(tmp_path / "home", {"IAC_CODE_LOG_LEVEL": "DEBUG"})
    command = [*AGENT_COMMAND, "--record", str(transcript)]
    async with spawn_agent(env, tmp_path / "agent.stderr", None, command) as agent:
        await agent.send_raw(_initialize({"protocolVersion": 1}))
        assert (await agent.receive())["result"]["protocolVersion"] == 1
        await agent.close_stdin()
        assert await agent.wait_exit(timeout=10) == 0
    assert EARLY not in agent.stderr
    assert b'"method":"initialize"' in transcript.read_bytes().replace(b" ", b"")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
async def test_a_signal_before_the_first_line_exits_cleanly(
        tmp_path: Path, signum: signal.Signals) -> None:
    async with await _agent(tmp_path) as agent:
        await _reading_a_pipe(agent.process.pid)
        agent.process.send_signal(signum)
        assert await agent.wait_exit(timeout=10) == 0
        assert await agent.read_until_eof() == []


async def _reading_a_pipe(pid: int) -> None:
    """Until the process waits in a read of its stdin pipe (the kernel's wait channel says so;
    where it does not tell, a second)."""
    with trio.fail_after(15):
        while True:
            try:
                channel = await trio.Path(f"/proc/{pid}/wchan").read_text()
            except OSError:
                channel = "0"
            if channel == "0":
                await trio.sleep(1)
                return
            if "pipe" in channel:
                return
            await trio.sleep(0.02)


async def test_a_bad_config_still_stops_the_agent(tmp_path: Path) -> None:
    """The one difference the early answer makes: a config the full server refuses stops the
    agent just after the handshake's answer, rather than before it."""
    home = tmp_path / "home"
    _write_config(home, "max_tokens = -1\n")
    async with await _agent(tmp_path) as agent:
        await agent.send_raw(_initialize({"protocolVersion": 1}))
        assert await agent.wait_exit(timeout=10) == 2
        assert "max_tokens" in agent.stderr


async def test_a_bad_model_script_is_named_in_one_line(tmp_path: Path) -> None:
    """A model script that cannot be played stops the agent with what is wrong with the file,
    not with a traceback of where the server was."""
    script = tmp_path / "script.json"
    script.write_text('[{"bogus": 1}]')
    async with await _agent(tmp_path, IAC_CODE_MODEL_SCRIPT=str(script)) as agent:
        await agent.send_raw(_initialize({"protocolVersion": 1}))
        assert await agent.wait_exit(timeout=10) == 1
        assert f"the model script cannot be played: {script}: exchange 0:" in agent.stderr
        assert "Traceback" not in agent.stderr
