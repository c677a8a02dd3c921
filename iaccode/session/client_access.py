"""The editor's files and terminals, reached through ``fs/*`` and ``terminal/*`` requests.

Used only when the client advertised the capability (``fs.readTextFile``,
``fs.writeTextFile``, ``terminal: true``); otherwise tools work on the local machine. Reading
through the editor sees its unsaved buffers, and writes land in them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from iaccode.tools.base import FileAccess, ToolFailure
from iaccode.turn.env import Request
from iaccode.wire.errors import RpcError


class ClientFiles:
    """FileAccess through the editor for the directions it advertised, locally otherwise."""

    def __init__(self, request: Request, session_id: str, local: FileAccess, *,
                 read: bool, write: bool) -> None:
        self._request = request
        self._session_id = session_id
        self._local = local
        self._read = read
        self._write = write

    async def read_text(self, path: Path) -> str:
        if not self._read:
            return await self._local.read_text(path)
        _refuse_special(path)
        result = await self._call("fs/read_text_file", {"sessionId": self._session_id,
                                                        "path": str(path)}, path)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise ToolFailure(f"The editor gave no text for {path}.")
        return content

    async def write_text(self, path: Path, text: str) -> None:
        if not self._write:
            return await self._local.write_text(path, text)
        await self._call("fs/write_text_file", {"sessionId": self._session_id,
                                                "path": str(path), "content": text}, path)

    async def _call(self, method: str, params: dict[str, Any], path: Path) -> Any:
        try:
            return await self._request(method, params)
        except RpcError as exc:
            detail = f" ({exc.data})" if exc.data else ""
            verb = "read" if method == "fs/read_text_file" else "write"
            raise ToolFailure(f"The editor could not {verb} {path}: {exc.message}{detail}"
                              ) from exc


def _refuse_special(path: Path) -> None:
    """The editor may block on a FIFO or a device just like we would: refuse them first."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ToolFailure(f"File not found: {path}") from None
    except OSError:
        return  # let the editor say what is wrong
    if stat.S_ISDIR(mode):
        raise ToolFailure(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        raise ToolFailure(f"{path} is not a regular file (a FIFO, socket or device).")


class ClientTerminal:
    """``terminal/*`` requests for one session."""

    def __init__(self, request: Request, session_id: str) -> None:
        self._request = request
        self._session_id = session_id

    async def create(self, command: str, args: list[str], cwd: str,
                     output_byte_limit: int) -> str:
        result = await self._request("terminal/create", {
            "sessionId": self._session_id, "command": command, "args": args, "cwd": cwd,
            "outputByteLimit": output_byte_limit})
        terminal_id = result.get("terminalId") if isinstance(result, dict) else None
        if not isinstance(terminal_id, str):
            raise ToolFailure("The editor did not create a terminal.")
        return terminal_id

    async def output(self, terminal_id: str) -> dict[str, Any]:
        return await self._terminal("terminal/output", terminal_id)

    async def wait_for_exit(self, terminal_id: str) -> dict[str, Any]:
        return await self._terminal("terminal/wait_for_exit", terminal_id)

    async def kill(self, terminal_id: str) -> None:
        await self._terminal("terminal/kill", terminal_id)

    async def release(self, terminal_id: str) -> None:
        await self._terminal("terminal/release", terminal_id)

    async def _terminal(self, method: str, terminal_id: str) -> dict[str, Any]:
        result = await self._request(method, {"sessionId": self._session_id,
                                              "terminalId": terminal_id})
        return result if isinstance(result, dict) else {}
