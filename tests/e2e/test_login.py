"""``iaccode login`` / ``logout`` as a user runs them, and the ACP side: the ``terminal`` auth
method, ``authenticate`` re-reading the saved key, ``logout`` forgetting it.

``iaccode login`` runs in a real pseudo-terminal (the ``pty`` module: a controlling terminal,
so the key prompt really is hidden); the ACP side is driven by the official Python SDK client.
The model is the fake Messages API, which records the key each request carried.
"""

from __future__ import annotations

import asyncio
import os
import pty
import select
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import AuthCapabilities, ClientCapabilities
from acp_conformance.fakes.messages import FakeModelServer, RecordedRequest
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_official_sdk_client import RecordingClient, run
from tests.support.environment import agent_environment

ROOT = Path(__file__).resolve().parents[2]
NO_KEYRING = "keyring.backends.fail.Keyring"
"""A machine without a keyring: the key goes to credentials.toml (never the developer's own
keyring)."""
TEST_KEYRING = "tests.support.file_keyring.FileKeyring"
KEY = "sk-ant-test-0123456789abcdef"


class Terminal:
    """A program on a pseudo-terminal: wait for what it prints, type answers."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.output = b""
        pid, fd = pty.fork()
        if pid == 0:  # the child: the terminal is its controlling terminal
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd

    def expect(self, text: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.output:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(
                    f"never saw {text!r}; the terminal shows:\n"
                    f"{self.output.decode(errors='replace')}"
                )

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def wait(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while self._read(max(0.0, deadline - time.monotonic())):
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 4096)
        except OSError:  # EIO: the program exited and closed the terminal
            return False
        self.output += data
        return bool(data)

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")


def sent_key(request: RecordedRequest) -> str | None:
    """The key a request to the fake Messages API carried (the SDK sends it as a bearer token,
    older ones as ``x-api-key``)."""
    bearer = request.headers.get("authorization", "")
    return bearer.removeprefix("Bearer ") if bearer else request.headers.get("x-api-key")


def login_env(home: Path, keyring: str = NO_KEYRING, **extra: str) -> dict[str, str]:
    env = agent_environment(
        home, {"PYTHON_KEYRING_BACKEND": keyring, "PYTHONPATH": str(ROOT), **extra}
    )
    for name in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY"):
        env.pop(name, None)
    return env


def iaccode(*args: str) -> list[str]:
    return [sys.executable, "-m", "iaccode", *args]


def test_login_in_a_terminal_saves_the_key_unseen(tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = Terminal(iaccode("login"), login_env(home))
    terminal.expect("Which provider's key?")
    terminal.expect("Provider [1-")
    assert "Anthropic [anthropic]  (default)" in terminal.text
    terminal.type("2")  # OpenAI, the second of the list
    terminal.expect("Paste your OpenAI API key (it is not shown): ")
    terminal.type("sk-openai-pasted-9876")
    assert terminal.wait() == 0
    assert "sk-openai-pasted-9876" not in terminal.text  # never echoed
    assert f"Saved the OpenAI API key in {home / 'credentials.toml'}." in terminal.text
    assert 'to use openai, set provider = "openai"' in terminal.text
    stored = home / "credentials.toml"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert 'api_key = "sk-openai-pasted-9876"' in stored.read_text()


def test_terminal_auth_runs_acp_login_with_the_agents_provider(tmp_path: Path) -> None:
    """Clients append the method's args to the agent's own: ``iaccode acp --provider
    dashscope login`` asks with the agent's provider as the default."""
    home = tmp_path / "home"
    terminal = Terminal(iaccode("acp", "--provider", "dashscope", "login"), login_env(home))
    terminal.expect("DashScope (Qwen) [dashscope]  (default)")
    terminal.expect("Provider [1-")
    terminal.type("")  # Enter: the default
    terminal.expect("Paste your DashScope (Qwen) API key")
    terminal.type("sk-dashscope-42424242")
    assert terminal.wait() == 0
    assert 'api_key = "sk-dashscope-42424242"' in (home / "credentials.toml").read_text()


def test_login_refuses_what_is_not_a_key_and_saves_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = Terminal(iaccode("login", "--provider", "anthropic"), login_env(home))
    terminal.expect("Paste your Anthropic API key")
    terminal.type("two words")
    assert terminal.wait() == 1
    assert "Nothing saved." in terminal.text
    assert not (home / "credentials.toml").exists()


def test_login_ended_with_ctrl_d_saves_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = Terminal(iaccode("login"), login_env(home))
    terminal.expect("Provider [1-")
    os.write(terminal.fd, b"\x04")  # end of input
    assert terminal.wait() == 1
    assert "Nothing saved." in terminal.text and not (home / "credentials.toml").exists()


def test_the_keyring_holds_the_key_when_there_is_one(tmp_path: Path) -> None:
    home, items = tmp_path / "home", tmp_path / "keyring.json"
    env = login_env(home, TEST_KEYRING, IAC_TEST_KEYRING_FILE=str(items))
    done = subprocess.run(
        iaccode("login", "--provider", "anthropic"),
        env=env,
        input=KEY + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the OS keyring (service 'iac-code', user 'anthropic')" in done.stdout
    text = (home / "credentials.toml").read_text()
    assert "keyring = true" in text and KEY not in text
    assert KEY in items.read_text()
    out = subprocess.run(
        iaccode("logout"), env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert out.returncode == 0 and "Removed the saved Anthropic API key." in out.stdout
    assert KEY not in items.read_text() and not (home / "credentials.toml").exists()


def _saved(home: Path, env: dict[str, str], key: str = KEY) -> None:
    done = subprocess.run(
        iaccode("login", "--provider", "anthropic"),
        env=env,
        input=key + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("keyring", [NO_KEYRING, TEST_KEYRING])
def test_the_editor_logs_in_through_terminal_auth_and_out_again(
    tmp_path: Path, model_server: FakeModelServer, workspace: Path, keyring: str
) -> None:
    """What an editor with terminal auth does: initialize offers the terminal method; a new
    session needs a key (-32000); the editor runs the method in a terminal, the user pastes
    the key, the editor authenticates; the session works with that key; logout forgets it."""
    home = tmp_path / "home"
    env = login_env(
        home,
        keyring,
        IAC_TEST_KEYRING_FILE=str(tmp_path / "keyring.json"),
        ANTHROPIC_BASE_URL=model_server.base_url,
        IAC_CODE_MAX_RETRIES="0",
    )
    model_server.enqueue(reply("Hello with the saved key"))
    client = RecordingClient()

    async def main() -> None:
        async with acp.spawn_agent_process(client, *iaccode("acp"), env=env) as (conn, _):
            init = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(auth=AuthCapabilities(terminal=True)),
            )
            assert init.auth_methods is not None and init.agent_capabilities is not None
            methods = {method.id: method for method in init.auth_methods}
            assert set(methods) == {"anthropic-api-key", "iaccode-login"}
            terminal_method: Any = methods["iaccode-login"]
            assert terminal_method.type == "terminal" and terminal_method.args == ["login"]
            assert init.agent_capabilities.auth is not None
            assert init.agent_capabilities.auth.logout is not None

            with pytest.raises(acp.RequestError) as refused:
                await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert refused.value.code == -32000
            assert "iaccode login" in str(refused.value.data)

            # The editor runs the agent's command with the method's args, in a terminal.
            terminal = Terminal(iaccode("acp", *terminal_method.args), env)
            await asyncio.to_thread(terminal.expect, "Provider [1-")
            terminal.type("")
            await asyncio.to_thread(terminal.expect, "Paste your Anthropic API key")
            terminal.type(KEY)
            assert await asyncio.to_thread(terminal.wait) == 0

            await conn.authenticate(method_id="iaccode-login")
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Hi")])
            assert answer.stop_reason == "end_turn"
            assert sent_key(model_server.requests[-1]) == KEY

            # The SDK has no logout helper yet (0.12): its own models, on its connection.
            raw = await conn._conn.send_request(
                "logout", acp.schema.LogoutRequest().model_dump(by_alias=True, exclude_none=True)
            )
            acp.schema.LogoutResponse.model_validate(raw)
            assert not (home / "credentials.toml").exists()
            with pytest.raises(acp.RequestError) as again:
                await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert again.value.code == -32000
            with pytest.raises(acp.RequestError) as prompt_refused:
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("x")])
            assert prompt_refused.value.code == -32000

    run(main())
    if keyring == TEST_KEYRING:
        assert KEY not in (tmp_path / "keyring.json").read_text()


def test_the_environment_wins_over_the_saved_key(
    tmp_path: Path, model_server: FakeModelServer, workspace: Path
) -> None:
    home = tmp_path / "home"
    env = login_env(home, ANTHROPIC_BASE_URL=model_server.base_url)
    _saved(home, env)
    model_server.enqueue(reply("one"), reply("two"))
    client = RecordingClient()

    async def main() -> None:
        agent_env = {**env, "ANTHROPIC_API_KEY": "sk-from-the-environment"}
        async with acp.spawn_agent_process(client, *iaccode("acp"), env=agent_env) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Hi")])
            assert sent_key(model_server.requests[-1]) == "sk-from-the-environment"
            # A logout forgets the saved key; the environment's goes on working.
            await conn._conn.send_request("logout", {})
            assert not (home / "credentials.toml").exists()
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Again")])
            assert sent_key(model_server.requests[-1]) == "sk-from-the-environment"

    run(main())


def test_a_login_reaches_a_running_agent_and_commands_never_see_the_key(
    tmp_path: Path, model_server: FakeModelServer, workspace: Path
) -> None:
    """The saved key is read when it changed (no restart), and it is not in the environment
    the agent's commands get."""
    home = tmp_path / "home"
    env = login_env(home, ANTHROPIC_BASE_URL=model_server.base_url)
    _saved(home, env, "sk-ant-first-1111111111")
    model_server.enqueue(
        reply("first"), reply(tool_uses=[ToolUse("t1", "bash", {"command": "env"})]), reply("done")
    )
    client = RecordingClient(choice="allow_once")

    async def main() -> None:
        async with acp.spawn_agent_process(client, *iaccode("acp"), env=env) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Hi")])
            assert sent_key(model_server.requests[-1]) == "sk-ant-first-1111111111"
            await asyncio.to_thread(_saved, home, env, "sk-ant-second-222222222")
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("env")])
            assert {sent_key(r) for r in model_server.requests[-2:]} == {"sk-ant-second-222222222"}

    run(main())
    tool_results = str(model_server.requests[-1].body)
    assert "PATH=" in tool_results  # the command ran and its environment came back
    assert "sk-ant-second" not in tool_results and "sk-ant-first" not in tool_results
