"""A session's MCP servers: each a task in the session's nursery, their tools for a turn, the
``/mcp`` listing and their prompts as slash commands.

The servers start with the session (``serve``), in the background: ``session/new`` does not
wait. The first model request of each prompt waits for those still starting, up to
``mcp_startup_timeout`` (``prepare``), and goes on without the late ones (their tools join at a
later prompt; so do the tools a server adds later and says so). A server that failed is
reported to the user once (an agent message naming it and the reason; the log has its stderr
tail) and tried again at each next prompt. Closing the session (``aclose``) ends every
connection; a stdio server's whole process tree with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from attrs import frozen

from iaccode.mcp.config import ServerSpec, spec_secrets
from iaccode.mcp.names import shortened, tool_name
from iaccode.printable import shown
from iaccode.protocol.content import ContentBlock, ImageContent, TextContent
from iaccode.tool_result import ToolFailure
from iaccode.tools.base import Tool

if TYPE_CHECKING:
    from mcp_types import Prompt

    from iaccode.mcp.connection import ServerConnection

log = logging.getLogger(__name__)

PING_TIMEOUT = 5.0
"""Seconds a connected HTTP or SSE server has to answer the ping before a prompt."""
CLOSE_TIMEOUT = 5.0
"""How long closing waits for the servers to end (a stdio server: stdin, TERM, then KILL)."""


@frozen
class PromptCommand:
    """An MCP prompt as the slash command ``/<server>:<prompt>``."""

    name: str
    connection: ServerConnection
    prompt: Prompt

    @property
    def hint(self) -> str:
        return " ".join(
            f"<{shown(a.name, 40)}>" if a.required else f"[{shown(a.name, 40)}]"
            for a in self.prompt.arguments or []
        )

    @property
    def description(self) -> str:
        """What the editor's command menu says of it (one line, printable)."""
        return shown(self.prompt.description or "", 200) or (
            f"Prompt {shown(self.prompt.name)} of MCP server {shown(self.connection.name)}"
        )


class McpServers:
    def __init__(
        self, specs: list[ServerSpec], cwd: Path, on_change: Callable[[], None] = lambda: None
    ) -> None:
        self.connections: list[ServerConnection] = []
        if specs:  # the connection (and with it the transports) only when there are servers
            from iaccode.mcp.connection import ServerConnection
            from iaccode.secret_env import hold

            for spec in specs:  # what a server is given, it must not hand back
                for name, value in spec_secrets(spec):
                    hold(name, value)
            self.connections = [ServerConnection(spec, cwd, on_change) for spec in specs]
        self._on_change = on_change
        """Called when the servers' tools or prompts change (so the commands are re-sent)."""
        self._told: dict[str, str] = {}
        """Server name -> the failure the user was told of (not told twice running)."""
        self._told_dropped: dict[str, str] = {}
        """Server name -> what its listing left out, as the user was told (told once)."""
        self.offered: dict[str, Tool] = {}
        """The connected servers' tools as of the last ``prepare`` (replaced, never changed:
        the system prompt's section reads it from a worker thread)."""
        self._nursery: trio.Nursery | None = None
        self._scope = trio.CancelScope()
        self._ended = trio.Event()

    def __bool__(self) -> bool:
        return bool(self.connections)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run every server until ``aclose``. Cancellation ends them all (shielded, bounded)."""
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    for connection in self.connections:
                        nursery.start_soon(self._run, connection)
                    task_status.started()
                    await trio.sleep_forever()
        finally:
            self._nursery = None
            self._ended.set()

    async def _run(self, connection: ServerConnection) -> None:
        """One attempt; the session hears when it has connected (or failed) and ended."""
        settled = connection.settled

        async def announce_when_settled() -> None:
            await settled.wait()
            self._on_change()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(announce_when_settled)
            await connection.serve()
        self._on_change()

    async def aclose(self) -> None:
        """End every server and wait (bounded) until they have ended."""
        self._scope.cancel()
        if self.connections:
            with trio.move_on_after(CLOSE_TIMEOUT):
                await self._ended.wait()

    async def prepare(self, timeout: float) -> list[str]:  # noqa: ASYNC109 - a setting
        """Before a prompt's first model request: ping the remote servers (one that is gone
        counts as failed), start again the servers that failed, wait until the SDK is loaded
        and then up to ``timeout`` for those starting, take the connected ones' tools
        (``offered``), and return the failures to tell the user (a failure is told once,
        however often the retry fails the same way)."""
        if self.connections:  # the SDK first: local work, which ``timeout`` is not about
            from iaccode.mcp.connection import load_sdk

            try:
                await trio.to_thread.run_sync(load_sdk, abandon_on_cancel=True)
            except Exception as exc:  # each connection fails with it and the user is told
                log.debug("the MCP SDK did not load: %r", exc)
        async with trio.open_nursery() as nursery:  # is each remote one still there?
            for connection in self.connections:
                if connection.status == "connected":
                    nursery.start_soon(connection.check, min(timeout, PING_TIMEOUT))
        messages = self._untold_failures()
        for connection in self.connections:
            if connection.status == "failed" and self._nursery is not None:
                connection.restart()
                self._nursery.start_soon(self._run, connection)
        with trio.move_on_after(timeout):
            for connection in self.connections:
                await connection.settled.wait()
        for connection in self.connections:
            if connection.status == "starting":
                log.warning(
                    "MCP server %s still starting after %g s; going on without it",
                    connection.name,
                    timeout,
                )
        self.offered = self._connected_tools()
        return messages + self._untold_failures()

    def _untold_failures(self) -> list[str]:
        messages = []
        for connection in self.connections:
            if connection.status == "connected":
                self._told.pop(connection.name, None)
                if connection.dropped and self._told_dropped.get(connection.name) != (
                    connection.dropped
                ):
                    self._told_dropped[connection.name] = connection.dropped
                    messages.append(
                        f"MCP server {shown(connection.name)} listed more than the "
                        f"agent takes: {connection.dropped}; the rest are left out."
                    )
            elif connection.status == "failed" and self._told.get(connection.name) != (
                told := f"{connection.was_connected}:{connection.reason}"
            ):
                self._told[connection.name] = told
                what = "stopped" if connection.was_connected else "could not start"
                messages.append(
                    f"MCP server {shown(connection.name)} {what}: {shown(connection.reason, 300)}"
                )
        return messages

    def tools(self) -> dict[str, Tool]:
        """The tools for this prompt's turn (as of ``prepare``), by the name the model calls
        them."""
        return dict(self.offered)

    def _connected_tools(self) -> dict[str, Tool]:
        from iaccode.mcp.tool import mcp_tool

        tools: dict[str, Tool] = {}
        for connection in self.connections:
            if connection.status != "connected":
                continue
            for spec in connection.tools:
                name = tool_name(connection.name, spec.name)
                if name in tools:  # two names that sanitise alike: tell them apart
                    name = shortened(f"{connection.name}\0{spec.name}", name)
                tools[name] = mcp_tool(connection, spec, name)
        return tools

    def prompt_commands(self) -> dict[str, PromptCommand]:
        """``<server>:<prompt>`` -> the prompt, for the connected servers."""
        commands = {}
        for connection in self.connections:
            if connection.status == "connected":
                for prompt in connection.prompts:
                    name = shown(f"{connection.name}:{prompt.name}").replace(" ", "-")
                    commands[name] = PromptCommand(name, connection, prompt)
        return commands

    def listing(self) -> str:
        """What ``/mcp`` shows: each server's name, transport, status and number of tools."""
        if not self.connections:
            return (
                "No MCP servers. They come from the editor (mcpServers in session/new) "
                "and from [mcp_servers.NAME] tables in config.toml."
            )
        lines = ["MCP servers:"]
        for connection in self.connections:
            spec = connection.spec
            where = spec.command if spec.transport == "stdio" else spec.url
            status: str = connection.status
            if status == "failed":
                status = f"failed: {shown(connection.reason, 300)}"
            elif status == "connected":
                status = f"connected, {_count(len(connection.tools), 'tool')}"
                if connection.prompts:
                    status += f", {_count(len(connection.prompts), 'prompt')}"
            origin = "editor" if spec.origin == "editor" else "config.toml"
            lines.append(
                f"- {shown(connection.name)} ({spec.transport}, {shown(where or '')}, "
                f"from the {origin}): {status}"
            )
        return "\n".join(lines)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


async def expand_prompt(command: PromptCommand, rest: str) -> list[ContentBlock] | str:
    """The prompt's messages as the user's message, its arguments taken from ``rest`` (the
    line after the command: all of it for one argument, else one word each and the rest of
    the line for the last). A str when it cannot be: what to tell the user."""
    arguments = command.prompt.arguments or []
    words = rest.split(maxsplit=len(arguments) - 1) if arguments and rest else []
    values = {a.name: value for a, value in zip(arguments, words, strict=False)}
    missing = [a.name for a in arguments if a.required and a.name not in values]
    if missing:
        return (
            f"/{command.name} needs {', '.join(missing)}: /{command.name} {command.hint}".rstrip()
        )
    try:
        result = await command.connection.get_prompt(command.prompt.name, values)
    except ToolFailure as exc:
        return f"/{command.name}: {exc}"
    blocks: list[ContentBlock] = []
    for message in result.messages:
        content = message.content
        if content.type == "text":
            blocks.append(TextContent(content.text))
        elif content.type == "image":
            blocks.append(ImageContent(content.data, content.mime_type))
        elif content.type == "resource" and getattr(content.resource, "text", None) is not None:
            blocks.append(TextContent(content.resource.text))  # type: ignore[union-attr]
    if not blocks:
        return f"/{command.name}: the MCP server's prompt has no text."
    return blocks
