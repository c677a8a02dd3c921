"""``iaccode acp`` starting: the ``initialize`` answer for each provider setting, what the first
write may hold, and what stops the agent at start-up (a bad config.toml, a bad model script).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.schema import WireChecker

from tests.support.agent_process import AGENT_COMMAND, METHOD_ALIASES, AgentConnection, spawn_agent
from tests.support.environment import agent_environment


def _initialize(params: Any, request_id: Any = 1) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    return json.dumps(message).encode() + b"\n"


async def _answer(
    env: dict[str, str], stderr: Path, data: bytes, command: list[str] | None = None
) -> tuple[bytes, str]:
    """The raw line the agent answers ``data`` with, and its log once it has exited."""
    env = {**env, "IAC_CODE_LOG_LEVEL": "DEBUG"}
    checker = WireChecker(aliases=METHOD_ALIASES)
    async with spawn_agent(env, stderr, checker, command) as agent:
        await agent.send_raw(data)
        await agent.receive()
        await agent.close_stdin()
        assert await agent.wait_exit(timeout=10) == 0
        return agent.raw_lines[-1], agent.stderr


CAPABILITIES = [
    pytest.param({"protocolVersion": 1}, id="only-the-version"),
    pytest.param({"protocolVersion": 1, "clientCapabilities": {}}, id="empty-capabilities"),
    pytest.param(
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
            },
            "clientInfo": {"name": "zed", "title": "Zed", "version": "0.201.3"},
        },
        id="an-editor",
    ),
    pytest.param(
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "auth": {"terminal": True},
                "session": {"notices": {}, "compaction": {}},
            },
        },
        id="terminal-auth-and-session-capabilities",
    ),
    pytest.param(
        {
            "protocolVersion": 1,
            "clientCapabilities": {"terminal": True, "_meta": {"terminal-auth": True}},
        },
        id="the-registry-validators-terminal-auth-hint",
    ),
    pytest.param(
        {
            "protocolVersion": 1,
            "clientCapabilities": {"auth": {"terminal": False}, "_meta": {"terminal-auth": "yes"}},
        },
        id="terminal-auth-refused-and-a-hint-that-is-not-true",
    ),
]


@pytest.mark.parametrize("params", CAPABILITIES)
async def test_terminal_login_is_offered_to_clients_that_run_terminal_auth(
    tmp_path: Path, params: Any
) -> None:
    env = agent_environment(tmp_path / "home")
    answer, _ = await _answer(env, tmp_path / "agent.stderr", _initialize(params))
    result = json.loads(answer)["result"]
    methods = result["authMethods"]
    capabilities = params.get("clientCapabilities", {})
    terminal = (
        capabilities.get("auth", {}).get("terminal") is True
        or capabilities.get("_meta", {}).get("terminal-auth") is True
    )
    assert [method["id"] for method in methods] == (
        ["anthropic-api-key", "iaccode-login"] if terminal else ["anthropic-api-key"]
    )
    if terminal:  # the client runs `iaccode acp login` in a terminal for the user
        assert methods[1]["type"] == "terminal" and methods[1]["args"] == ["login"]
    assert result["agentCapabilities"]["auth"] == {"logout": {}}
    assert "additionalDirectories" in result["agentCapabilities"]["sessionCapabilities"]


def _write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


AUTH_CASES = [
    # A provider that takes a key offers where it goes whether it is set or not (after a
    # logout the client needs the method); a keyless API offers only what is missing.
    pytest.param({"ANTHROPIC_API_KEY": "k"}, "", (), "anthropic-api-key", id="anthropic-key"),
    pytest.param({"ANTHROPIC_AUTH_TOKEN": "t"}, "", (), "anthropic-api-key", id="anthropic-token"),
    pytest.param({"IAC_CODE_API_KEY": "k"}, "", (), "anthropic-api-key", id="iac-code-api-key"),
    pytest.param(
        {"ANTHROPIC_API_KEY": "k", "IAC_CODE_API_KEY": ""},
        'api_key_env = "MINE"\n',
        (),
        "anthropic-api-key",
        id="api-key-env-unset",
    ),
    pytest.param({"IAC_CODE_PROVIDER": "openai"}, "", (), "openai-api-key", id="openai-no-key"),
    pytest.param(
        {"OPENAI_API_KEY": "k"}, "", ("--provider", "openai"), "openai-api-key", id="openai-option"
    ),
    pytest.param(
        {"MY_KEY": "k"},
        'provider = "deepseek"\napi_key_env = "MY_KEY"\n',
        (),
        "deepseek-api-key",
        id="deepseek-config",
    ),
    pytest.param({}, 'provider = "ollama"\nmodels = ["qwen3"]\n', (), None, id="ollama"),
    pytest.param(
        {},
        "",
        ("--provider=openai_compatible",),
        "openai-compatible-api-key",
        id="compatible-without-url",
    ),
    pytest.param(
        {"IAC_CODE_BASE_URL": "http://127.0.0.1:9/v1"},
        'provider = "openai_compatible"\n',
        ("--model", "m"),
        None,
        id="compatible-with-url-and-model",
    ),
    pytest.param(
        {"IAC_CODE_PROVIDER": "dashscope"},
        'provider = "openai"\n',
        (),
        "dashscope-api-key",
        id="environment-beats-file",
    ),
]


@pytest.mark.parametrize(("extra", "config", "args", "offered"), AUTH_CASES)
async def test_auth_methods_follow_the_provider_settings(
    tmp_path: Path, extra: dict[str, str], config: str, args: tuple[str, ...], offered: str | None
) -> None:
    home = tmp_path / "home"
    if config:
        _write_config(home, config)
    env = agent_environment(home, extra)
    answer, _ = await _answer(
        env, tmp_path / "agent.stderr", _initialize({"protocolVersion": 1}), [*AGENT_COMMAND, *args]
    )
    methods = json.loads(answer)["result"]["authMethods"]
    assert [method["id"] for method in methods] == ([offered] if offered else [])


async def test_a_model_script_offers_what_its_provider_takes(tmp_path: Path) -> None:
    """A script needs no key, but the methods stay the provider's: a recorded session and its
    replay (on the recorded model answers) answer initialize alike."""
    script = tmp_path / "script.json"
    script.write_text('{"version": 1, "exchanges": []}')
    env = agent_environment(tmp_path / "home")
    answer, _ = await _answer(
        env,
        tmp_path / "agent.stderr",
        _initialize({"protocolVersion": 1}),
        [*AGENT_COMMAND, "--model-script", str(script)],
    )
    assert [m["id"] for m in json.loads(answer)["result"]["authMethods"]] == ["anthropic-api-key"]


@pytest.mark.parametrize("asked", ["1", 2, 1.5, None])
async def test_another_version_gets_the_same_answer_after_a_warning(
    tmp_path: Path, asked: Any
) -> None:
    env = agent_environment(tmp_path / "home")
    ours, _ = await _answer(env, tmp_path / "ours.stderr", _initialize({"protocolVersion": 1}))
    other, log = await _answer(
        env, tmp_path / "other.stderr", _initialize({"protocolVersion": asked})
    )
    assert other == ours
    assert f"the client asked for protocol version {json.dumps(asked)}" in log


async def _agent(tmp_path: Path, checked: bool = True, **extra: str) -> Any:
    env = agent_environment(tmp_path / "home", {"IAC_CODE_LOG_LEVEL": "DEBUG", **extra})
    checker = WireChecker(aliases=METHOD_ALIASES) if checked else None
    return spawn_agent(env, tmp_path / "agent.stderr", checker)


async def test_what_follows_initialize_in_the_same_write_is_served(
    tmp_path: Path, workspace: Path
) -> None:
    async with await _agent(tmp_path, ANTHROPIC_API_KEY="k") as agent:
        new = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": []},
        }
        await agent.send_raw(_initialize({"protocolVersion": 1}) + json.dumps(new).encode() + b"\n")
        first, second = await agent.receive(), await agent.receive()
        assert first["id"] == 1 and first["result"]["protocolVersion"] == 1
        assert second["id"] == 2 and second["result"]["sessionId"]


async def test_an_initialize_written_in_pieces_is_answered(tmp_path: Path) -> None:
    line = _initialize({"protocolVersion": 1, "clientInfo": {"name": "slow", "version": "1"}})
    async with await _agent(tmp_path, checked=False) as agent:  # it reads whole lines only
        for start in range(0, len(line), 20):
            await agent.send_raw(line[start : start + 20])
            await trio.sleep(0.01)
        answer = await agent.receive()
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
        await still_initialized(agent)


async def still_initialized(agent: AgentConnection) -> None:
    """The full server took over initialized: a method other than initialize is served."""
    answer = await agent.request("session/list", {})
    assert "result" in answer, answer


@pytest.mark.parametrize(
    "params",
    [
        pytest.param(
            {"protocolVersion": 1, "clientCapabilities": {"terminal": "yes"}}, id="a-wrong-type"
        ),
        pytest.param({"protocolVersion": 1, "clientCapabilities": None}, id="a-null"),
        pytest.param(
            {"protocolVersion": 1, "clientInfo": {"name": "no version"}}, id="a-missing-field"
        ),
        pytest.param({}, id="no-version"),
    ],
)
async def test_params_the_decoder_refuses_get_its_error(tmp_path: Path, params: Any) -> None:
    async with await _agent(tmp_path) as agent:
        await agent.send_raw(_initialize(params))
        answer = await agent.receive()
        assert answer["error"]["code"] == -32602, answer
        assert (await agent.call("initialize", {"protocolVersion": 1}))["protocolVersion"] == 1


async def test_a_long_first_line_is_served(tmp_path: Path) -> None:
    params = {"protocolVersion": 1, "_meta": {"padding": "x" * 200_000}}
    async with await _agent(tmp_path) as agent:
        await agent.send_raw(_initialize(params))
        answer = await agent.receive()
        assert answer["result"]["protocolVersion"] == 1
        await still_initialized(agent)


async def test_a_line_over_the_line_limit_is_refused_as_before(tmp_path: Path) -> None:
    async with await _agent(tmp_path, IAC_CODE_MAX_LINE_BYTES="40") as agent:
        await agent.send_raw(_initialize({"protocolVersion": 1}))
        answer = await agent.receive()
        assert answer["error"]["code"] == -32600


async def test_a_recorded_session_keeps_the_handshake_for_the_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    env = agent_environment(tmp_path / "home", {"IAC_CODE_LOG_LEVEL": "DEBUG"})
    command = [*AGENT_COMMAND, "--record", str(transcript)]
    async with spawn_agent(env, tmp_path / "agent.stderr", None, command) as agent:
        await agent.send_raw(_initialize({"protocolVersion": 1}))
        assert (await agent.receive())["result"]["protocolVersion"] == 1
        await agent.close_stdin()
        assert await agent.wait_exit(timeout=10) == 0
    assert b'"method":"initialize"' in transcript.read_bytes().replace(b" ", b"")


async def test_a_bad_config_stops_the_agent(tmp_path: Path) -> None:
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


THREADS_SEE = r"""
import ctypes, sys, threading

libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
started = []
start = threading.Thread.start


def watched(self):
    # What the C environment holds as the thread starts: what it would read or hand on.
    started.append(f"{self.name}: {libc.getenv(b'ANTHROPIC_API_KEY')!r}")
    return start(self)


threading.Thread.start = watched
from iaccode.cli import main

code = main(["acp"])
print("\n".join(["THREADS", *started]), file=sys.stderr)
sys.exit(code)
"""


async def test_no_thread_starts_before_the_secrets_leave_the_environment(
    tmp_path: Path, workspace: Path
) -> None:
    """The seal (``cli.seal_secrets``) changes the C environment, which no other thread may
    read meanwhile: the preload thread, and trio's workers, start after it."""
    import sys

    env = agent_environment(tmp_path / "home", {"ANTHROPIC_API_KEY": "sk-ant-start-up"})
    command = [sys.executable, "-c", THREADS_SEE]
    async with spawn_agent(env, tmp_path / "agent.stderr", None, command) as agent:
        await agent.call("initialize", {"protocolVersion": 1})
        await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        await agent.close_stdin()
        assert await agent.wait_exit(timeout=20) == 0
        started = agent.stderr.split("THREADS\n", 1)[1].splitlines()
    assert any(line.startswith("iaccode-preload: ") for line in started), started
    assert len(started) >= 2, started  # trio's worker (the session's creation) too
    assert all(line.endswith(": None") for line in started), started
