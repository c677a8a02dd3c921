"""An editor with a real terminal (``terminal: true``): it runs what ``terminal/create`` asks
for, in the editor's own environment plus the request's ``env``, and keeps answering the
agent's other requests (permission questions above all) while a command runs, as Zed does.

    terminal = RealTerminal(agent, permission=lambda request: REJECT)
    answer, messages = await terminal.prompt(session_id, "text")
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

import trio

from tests.support.agent_process import AgentConnection

Policy = Callable[[dict[str, Any]], dict[str, Any]]


def selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


class RealTerminal:
    def __init__(
        self, agent: AgentConnection, permission: Policy, env: Mapping[str, str] | None = None
    ) -> None:
        self.agent = agent
        self.permission = permission
        self.env = dict(os.environ if env is None else env)
        self.created: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self._processes: dict[str, trio.Process] = {}
        self._output: dict[str, bytearray] = {}
        self._done: dict[str, trio.Event] = {}
        self._send = trio.Lock()

    async def prompt(
        self, session_id: str, text: str, timeout: float = 600
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Prompt and serve the agent until the prompt is answered."""
        prompt_id = await self.agent.send_request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        others: list[dict[str, Any]] = []
        with trio.fail_after(timeout):
            async with trio.open_nursery() as nursery:
                while True:
                    message = await self.agent.receive(timeout=timeout)
                    if "method" in message and "id" in message:
                        nursery.start_soon(self._serve, message, nursery)
                    elif message.get("id") == prompt_id and "method" not in message:
                        break
                    else:
                        others.append(message)
                nursery.cancel_scope.cancel()
        for process in self._processes.values():
            if process.returncode is None:
                process.kill()
        return message, others

    async def _reply(self, request_id: Any, result: Any) -> None:
        async with self._send:
            await self.agent.reply(request_id, result)

    async def _serve(self, message: dict[str, Any], nursery: trio.Nursery) -> None:
        method, params = message["method"], message.get("params") or {}
        if method == "session/request_permission":
            self.questions.append(message)
            await self._reply(message["id"], self.permission(message))
        elif method == "terminal/create":
            await self._reply(message["id"], await self._create(params, nursery))
        elif method == "terminal/wait_for_exit":
            await self._done[params["terminalId"]].wait()
            await self._reply(message["id"], self._status(params["terminalId"]))
        elif method == "terminal/output":
            terminal_id = params["terminalId"]
            result: dict[str, Any] = {
                "output": self._output[terminal_id].decode("utf-8", "replace"),
                "truncated": False,
            }
            if self._done[terminal_id].is_set():
                result["exitStatus"] = self._status(terminal_id)
            await self._reply(message["id"], result)
        elif method in ("terminal/kill", "terminal/release"):
            process = self._processes[params["terminalId"]]
            if process.returncode is None:
                process.kill()
            await self._reply(message["id"], {})
        else:
            raise AssertionError(f"unexpected request {method}")

    async def _create(self, params: dict[str, Any], nursery: trio.Nursery) -> dict[str, Any]:
        self.created.append(params)
        env = {**self.env, **{item["name"]: item["value"] for item in params.get("env") or []}}
        process = await trio.lowlevel.open_process(
            [params["command"], *params.get("args", [])],
            cwd=params.get("cwd"),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        terminal_id = f"term-{len(self._processes) + 1}"
        self._processes[terminal_id] = process
        self._output[terminal_id] = bytearray()
        self._done[terminal_id] = trio.Event()
        nursery.start_soon(self._collect, terminal_id, process)
        return {"terminalId": terminal_id}

    async def _collect(self, terminal_id: str, process: trio.Process) -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.receive_some(65536):
            self._output[terminal_id] += chunk
        await process.wait()
        self._done[terminal_id].set()

    def _status(self, terminal_id: str) -> dict[str, Any]:
        code = self._processes[terminal_id].returncode
        assert code is not None
        return (
            {"exitCode": code, "signal": None}
            if code >= 0
            else {"exitCode": None, "signal": f"SIG{-code}"}
        )
