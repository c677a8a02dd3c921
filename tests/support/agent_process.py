"""Drive a real ``iaccode acp`` subprocess over its stdio, line by line, as an editor would.

Every message the agent sends is kept (``received``) and, when a WireChecker is given, checked
against the official schema as it arrives.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

AGENT_COMMAND = [sys.executable, "-m", "iaccode", "acp"]

SEED_ALIASES = {"sessions/list": "session/list", "config/set": "session/set_config_option"}
"""The seed document's method names that iac-code answers too."""
RECEIVE_TIMEOUT = 15.0


class RpcReply:
    """An error answer from ``on_request`` (``{"code": ..., "message": ...}``)."""

    def __init__(self, code: int, message: str) -> None:
        self.error = {"code": code, "message": message}


class AgentProcess:
    def __init__(self, process: trio.Process, checker: Any | None, stderr_path: Path) -> None:
        self.process = process
        self.checker = checker
        self.stderr_path = stderr_path
        self.received: list[dict[str, Any]] = []
        self.raw_lines: list[bytes] = []
        self._buffer = bytearray()
        self._ids = itertools.count(1)
        self._unread: list[dict[str, Any]] = []

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    # -- sending ----------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are; the checker learns of any request ids among them."""
        if self.checker is not None:
            for line in data.splitlines():
                self._tell_checker(line)
        assert self.process.stdin is not None
        await self.process.stdin.send_all(data)

    def _tell_checker(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return
        if isinstance(message, dict) and isinstance(message.get("id"), int | str):
            self.checker.client_sent(message)

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_request(self, method: str, params: Any = None) -> int:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return request_id

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()

    # -- receiving --------------------------------------------------------------------------

    async def receive(self, timeout: float = RECEIVE_TIMEOUT) -> dict[str, Any]:
        """The next message the agent sent (raises on timeout or end of output)."""
        if self._unread:
            return self._unread.pop(0)
        message = await self._read_message(timeout)
        if message is None:
            raise EOFError(f"agent closed stdout; stderr:\n{self.stderr[-3000:]}")
        return message

    async def _read_message(self, timeout: float) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        with trio.fail_after(timeout):
            while b"\n" not in self._buffer:
                chunk = await self.process.stdout.receive_some(1 << 20)
                if not chunk:
                    if self._buffer:
                        raise AssertionError(f"unterminated output: {bytes(self._buffer[:200])!r}")
                    return None
                self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        self.raw_lines.append(line)
        message = json.loads(line)  # anything but JSON on stdout fails the test here
        assert isinstance(message, dict), line
        self.received.append(message)
        if self.checker is not None:
            self.checker.assert_agent_sent(message)
        return message

    async def receive_update(self, *kinds: str, timeout: float = RECEIVE_TIMEOUT
                             ) -> dict[str, Any]:
        """The next ``session/update`` of one of ``kinds`` (others are skipped)."""
        with trio.fail_after(timeout):
            while True:
                message = await self.receive(timeout)
                if (message.get("method") == "session/update"
                        and message["params"]["update"]["sessionUpdate"] in kinds):
                    return message

    async def response(self, request_id: int, timeout: float = RECEIVE_TIMEOUT
                       ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Wait for the answer to ``request_id``; also return what came before it."""
        before: list[dict[str, Any]] = []
        with trio.fail_after(timeout):
            while True:
                message = await self.receive(timeout)
                if message.get("id") == request_id and "method" not in message:
                    return message, before
                before.append(message)

    async def request(self, method: str, params: Any = None,
                      timeout: float = RECEIVE_TIMEOUT) -> dict[str, Any]:
        """Send a request and return its whole response message (result or error)."""
        request_id = await self.send_request(method, params)
        response, before = await self.response(request_id, timeout)
        self._unread.extend(before)
        return response

    async def call(self, method: str, params: Any = None) -> Any:
        """Send a request and return its result; fail the test on an error answer."""
        response = await self.request(method, params)
        assert "result" in response, response
        return response["result"]

    async def initialize(self, **client_capabilities: Any) -> dict[str, Any]:
        return await self.call("initialize", {  # type: ignore[no-any-return]
            "protocolVersion": 1,
            "clientCapabilities": client_capabilities,
            "clientInfo": {"name": "tests", "version": "0"},
        })

    async def new_session(self, cwd: Path) -> str:
        result = await self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str, timeout: float = RECEIVE_TIMEOUT
                     ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Prompt; return the response and the updates sent before it."""
        request_id = await self.send_request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
        return await self.response(request_id, timeout)

    async def run_prompt(self, session_id: str, prompt: str | list[dict[str, Any]],
                         on_request: Any = None, timeout: float = RECEIVE_TIMEOUT
                         ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """Prompt and serve the agent's requests until the prompt is answered.

        ``on_request(message) -> result`` answers each agent request (permission questions,
        ``fs/*``, ``terminal/*``); it may be async; returning an ``RpcReply`` sends an error.
        Returns (the prompt's response, the updates before it, the agent's requests).
        """
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else prompt
        request_id = await self.send_request("session/prompt",
                                             {"sessionId": session_id, "prompt": blocks})
        updates: list[dict[str, Any]] = []
        requests: list[dict[str, Any]] = []
        with trio.fail_after(timeout):
            while True:
                message = await self.receive(timeout)
                if "method" in message and "id" in message:
                    requests.append(message)
                    if on_request is None:
                        raise AssertionError(f"unexpected request from the agent: {message}")
                    result = on_request(message)
                    if hasattr(result, "__await__"):
                        result = await result
                    await self.reply(message["id"], result)
                elif message.get("method") == "session/update":
                    updates.append(message)
                elif message.get("id") == request_id:
                    return message, updates, requests
                else:
                    updates.append(message)

    async def reply(self, request_id: Any, result: Any) -> None:
        if isinstance(result, RpcReply):
            await self.send({"jsonrpc": "2.0", "id": request_id, "error": result.error})
        else:
            await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def wait_exit(self, timeout: float) -> int:
        with trio.fail_after(timeout):
            return await self.process.wait()

    async def read_until_eof(self, timeout: float = RECEIVE_TIMEOUT) -> list[dict[str, Any]]:
        messages = list(self._unread)
        self._unread.clear()
        while (message := await self._read_message(timeout)) is not None:
            messages.append(message)
        return messages


def agent_environment(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: ours minus any real credentials, plus the test's settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))}
    env["IAC_CODE_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


class spawn_agent:  # noqa: N801 - used like a function: ``async with spawn_agent(...) as agent``
    def __init__(self, env: Mapping[str, str], stderr_path: Path, checker: Any | None = None,
                 command: list[str] | None = None) -> None:
        self._env = dict(env)
        self._stderr_path = stderr_path
        self._checker = checker
        self._command = command or AGENT_COMMAND

    async def __aenter__(self) -> AgentProcess:
        self._stderr_file = self._stderr_path.open("wb")
        process = await trio.lowlevel.open_process(
            self._command, stdin=-1, stdout=-1, stderr=self._stderr_file, env=self._env)
        self._agent = AgentProcess(process, self._checker, self._stderr_path)
        return self._agent

    async def __aexit__(self, *exc_info: object) -> None:
        process = self._agent.process
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    await stream.aclose()
        self._stderr_file.close()
