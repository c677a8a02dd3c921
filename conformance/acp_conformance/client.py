"""The editor's side of agent -> client requests: permission answers, fs/* and terminal/*.

The suite plays a small but real client. It answers ``fs/*`` and ``terminal/*`` only when it
advertised the matching capability (reading and writing real files, running real commands);
a call the client did not advertise is a violation of WIRE-CLIENT-CAPS and gets -32601.
Permission questions are answered by :attr:`ClientServices.permission`, a policy that may
also return :data:`HOLD` to leave the question pending for the test to answer.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from typing import Any

import trio

HOLD = object()
"""A permission policy's answer meaning: do not answer now (the test will)."""


class ErrorAnswer:
    """An error answer to an agent request."""

    def __init__(self, code: int, message: str) -> None:
        self.error = {"code": code, "message": message}


def choose(kind: str) -> Callable[[dict[str, Any]], Any]:
    """Policy: select the first option of ``kind`` (``allow_once``, ``reject_always``, ...);
    answer ``cancelled`` when the agent offered none of that kind."""

    def policy(request: dict[str, Any]) -> Any:
        for option in request.get("params", {}).get("options", []):
            if option.get("kind") == kind:
                return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
        return {"outcome": {"outcome": "cancelled"}}

    return policy


def cancelled(request: dict[str, Any]) -> Any:
    return {"outcome": {"outcome": "cancelled"}}


def capability_for(method: str) -> str | None:
    """The client capability an agent -> client method needs (None: needs none)."""
    if method == "fs/read_text_file":
        return "fs.readTextFile"
    if method == "fs/write_text_file":
        return "fs.writeTextFile"
    if method.startswith("terminal/"):
        return "terminal"
    return None


def advertised(capabilities: dict[str, Any], path: str) -> bool:
    node: Any = capabilities
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node is True


class ClientServices:
    def __init__(self) -> None:
        self.capabilities: dict[str, Any] = {}
        self.permission: Callable[[dict[str, Any]], Any] = choose("allow_once")
        self.elicitation: Callable[[dict[str, Any]], Any] = lambda _: {"action": "decline"}
        """The answer to an ``elicitation/create`` (in a mode the client advertised)."""
        self.violations: list[str] = []
        self._terminals: dict[str, dict[str, Any]] = {}

    async def answer(self, request: dict[str, Any]) -> Any:
        """The result (or ErrorAnswer, or HOLD) for one agent request."""
        method = request["method"]
        params = request.get("params") or {}
        needed = capability_for(method)
        if needed is not None and not advertised(self.capabilities, needed):
            self.violations.append(
                f"agent called {method} but the client did not advertise {needed}"
            )
            return ErrorAnswer(-32601, f"client does not support {method}")
        if method == "session/request_permission":
            return self.permission(request)
        if method == "elicitation/create":
            mode = params.get("mode")
            if not isinstance((self.capabilities.get("elicitation") or {}).get(mode), dict):
                self.violations.append(
                    f"agent asked for input in {mode!r} mode, which the "
                    "client did not advertise (clientCapabilities."
                    "elicitation)"
                )
                return ErrorAnswer(-32601, f"client does not support {mode} elicitation")
            return self.elicitation(request)
        handler = _HANDLERS.get(method)
        if handler is None:
            return ErrorAnswer(-32601, f"Method not found: {method}")
        try:
            return await handler(self, params)
        except (OSError, KeyError, TypeError, ValueError) as exc:
            return ErrorAnswer(-32603, f"client could not {method}: {exc}")

    # -- fs/* --------------------------------------------------------------------------------

    async def read_text_file(self, params: dict[str, Any]) -> Any:
        text = await trio.Path(params["path"]).read_text()
        lines = text.splitlines(keepends=True)
        start = max(int(params.get("line") or 1), 1) - 1
        limit = params.get("limit")
        chosen = lines[start : start + int(limit)] if limit is not None else lines[start:]
        return {"content": "".join(chosen)}

    async def write_text_file(self, params: dict[str, Any]) -> Any:
        path = trio.Path(params["path"])
        await path.parent.mkdir(parents=True, exist_ok=True)
        await path.write_text(params["content"])
        return {}

    # -- terminal/* (short commands: run to completion at create) ----------------------------

    async def terminal_create(self, params: dict[str, Any]) -> Any:
        args = [str(a) for a in params.get("args") or []]
        command = [params["command"], *args] if args else ["sh", "-c", params["command"]]
        env = dict(os.environ)
        env.update({e["name"]: e["value"] for e in params.get("env") or []})
        output, exit_code = b"", None
        with trio.move_on_after(30):
            done = await trio.run_process(
                command,
                cwd=params.get("cwd") or None,
                env=env,
                capture_stdout=True,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
            output, exit_code = done.stdout, done.returncode
        limit = params.get("outputByteLimit")
        truncated = limit is not None and len(output) > int(limit)
        if limit is not None and truncated:
            output = output[-int(limit) :]
        terminal_id = f"term_{len(self._terminals) + 1}"
        self._terminals[terminal_id] = {
            "output": output.decode(errors="replace"),
            "truncated": truncated,
            "exitStatus": {"exitCode": exit_code, "signal": None},
        }
        return {"terminalId": terminal_id}

    async def terminal_output(self, params: dict[str, Any]) -> Any:
        return self._terminals[params["terminalId"]]

    async def terminal_wait_for_exit(self, params: dict[str, Any]) -> Any:
        return self._terminals[params["terminalId"]]["exitStatus"]

    async def terminal_kill(self, params: dict[str, Any]) -> Any:
        self._terminals[params["terminalId"]]
        return {}

    async def terminal_release(self, params: dict[str, Any]) -> Any:
        self._terminals.pop(params["terminalId"])
        return {}


_HANDLERS: dict[str, Callable[[ClientServices, dict[str, Any]], Any]] = {
    "fs/read_text_file": ClientServices.read_text_file,
    "fs/write_text_file": ClientServices.write_text_file,
    "terminal/create": ClientServices.terminal_create,
    "terminal/output": ClientServices.terminal_output,
    "terminal/wait_for_exit": ClientServices.terminal_wait_for_exit,
    "terminal/kill": ClientServices.terminal_kill,
    "terminal/release": ClientServices.terminal_release,
}
