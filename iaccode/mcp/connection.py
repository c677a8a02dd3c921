"""One MCP server of a session: connect with the SDK's ``Client``, list its tools and prompts,
keep the lists current when the server says they changed, hold the connection, and call tools
on it.

    starting -> connected -> failed (it exited, its connection dropped)
             -> failed (could not start: the reason)

``serve`` runs one attempt, in the session's nursery, and returns when it fails; cancelling it
closes the connection (a stdio server's whole process tree with it). The session starts a new
attempt at a later prompt (``restart``).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import trio
from attrs import evolve

import iaccode
from iaccode.mcp import SDK_MODULES
from iaccode.mcp.config import ServerSpec
from iaccode.mcp.transport import StdioProcess, remote
from iaccode.printable import shown, visible
from iaccode.protocol.elicitation import Elicitation, ElicitationAnswer
from iaccode.tool_result import ToolFailure
from iaccode.tools.base import ToolContext

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult, GetPromptResult, Prompt, Tool

log = logging.getLogger(__name__)

T = TypeVar("T")

CONNECT_TIMEOUT = 60.0
"""Seconds a server may take to answer the handshake and its tool and prompt lists."""
LIST_TIMEOUT = 20.0
"""Seconds one listing (all its pages) may take, at the start and after a change alike."""
MAX_PAGES = 20
"""Pages of one list read at most: a server that pages on forever is cut off there."""
MAX_ITEMS = 200
"""Tools (and prompts) taken from one server: every tool's definition goes with every model
request, and more than this many would crowd the context (3,000 made each request 6.8 MiB)."""
MAX_DEFINITION_BYTES = 256 * 1024
"""Bytes of tool definitions (name, title, description, input schema as JSON) taken from one
server; a tool that does not fit is left out, the ones after it may still fit."""

Status = Literal["starting", "connected", "failed"]


def load_sdk() -> None:
    """Import the SDK (``SDK_MODULES``); in a worker thread: it takes seconds when the machine
    is busy, and the loop must go on answering meanwhile (``session/new``, a cancel)."""
    for name in SDK_MODULES:
        importlib.import_module(name)


class ServerGone(Exception):
    """The connection to a server that was connected ended; ``str()`` says how."""


class ServerConnection:
    def __init__(
        self, spec: ServerSpec, cwd: Path, on_change: Callable[[], None] = lambda: None
    ) -> None:
        self.spec = spec
        self._cwd = cwd
        self._on_change = on_change
        """Called when the server's tools or prompts were listed again after it said so."""
        self.status: Status = "starting"
        self.reason = ""
        """Why it failed (for the user): "/usr/bin/x: not found", "exited with status 1"."""
        self.was_connected = False
        """Whether the failed attempt had connected (it stopped, rather than not starting)."""
        self.tools: list[Tool] = []
        self.prompts: list[Prompt] = []
        self.dropped = ""
        """What the last listing left out and why (for the user, once); "" when nothing."""
        self.settled = trio.Event()
        """Set when this attempt is connected or failed."""
        self.ended = trio.Event()
        """Set when this attempt is over (failed, or cancelled)."""
        self._client: Client | None = None
        self._gone = trio.Event()
        self._gone_reason = ""
        self._lists_changed = trio.Event()
        """Set by a ``notifications/*/list_changed`` (protocol versions before 2026-07-28)."""
        self._asking: list[_Asking] = []
        """The tool calls running now that can put an elicitation to the user, latest last."""

    @property
    def name(self) -> str:
        return self.spec.name

    def restart(self) -> None:
        """Make ready for a new attempt (call ``serve`` again)."""
        self.status, self.reason, self.was_connected = "starting", "", False
        self.settled = trio.Event()
        self.ended = trio.Event()
        self._gone = trio.Event()

    async def serve(self) -> None:
        """One attempt: connect, then hold the connection until it ends or we are cancelled.

        Returns with ``status`` "failed" (never raises, but Cancelled); a stdio server is
        ended with its tree before this returns, cancelled or not.
        """
        process: StdioProcess | None = None
        # One scope around the whole connection (a deadline only until it is up): the
        # client's task groups live inside it, so no narrower scope may close before them.
        connecting = trio.CancelScope(deadline=trio.current_time() + CONNECT_TIMEOUT)
        try:
            # Abandoned on cancel: the thread finishes the import, and nothing waits for it.
            await trio.to_thread.run_sync(load_sdk, abandon_on_cancel=True)
            from mcp import Client
            from mcp_types import Implementation

            with connecting:
                async with contextlib.AsyncExitStack() as stack:
                    if self.spec.transport == "stdio":
                        process = StdioProcess(self.spec, self._cwd)
                        transport: Any = process.open()
                    else:
                        transport = remote(self.spec, stack)
                    client = Client(
                        transport,
                        client_info=Implementation(name="iaccode", version=iaccode.__version__),
                        message_handler=self._on_message,
                        elicitation_callback=self._on_elicitation,
                    )
                    await stack.enter_async_context(client)
                    await self._list(client)
                    connecting.deadline = math.inf
                    self._client = client
                    self.status, self.was_connected = "connected", True
                    self.settled.set()
                    log.info(
                        "MCP server %s connected (%s, protocol %s): %d tools, %d prompts",
                        self.name,
                        self.spec.transport,
                        client.protocol_version,
                        len(self.tools),
                        len(self.prompts),
                    )
                    await self._until_gone(process, client)
            if connecting.cancelled_caught:
                self._failed(f"no answer within {CONNECT_TIMEOUT:g} s", process)
        except Exception as exc:  # ServerGone, or the SDK's error: the reason for the user
            log.debug("MCP server %s: %r", self.name, exc, exc_info=exc)
            if process is not None and process.problem is not None:
                self._failed(process.problem, process)
            elif process is not None and process.ended_by_itself:
                self._failed(process.exit_reason, process)
            else:
                self._failed(_reason(exc), process)
        finally:
            self._client = None
            self.ended.set()

    async def _until_gone(self, process: StdioProcess | None, client: Client) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._follow_changes, client)
            if process is not None:

                async def watch() -> None:
                    await process.ended.wait()
                    self._lost("exited")

                nursery.start_soon(watch)
            await self._gone.wait()
            nursery.cancel_scope.cancel()
        raise ServerGone(self._gone_reason)

    async def _on_message(self, message: object) -> None:
        """What the server sends unasked (the SDK's ``message_handler``)."""
        from mcp_types import PromptListChangedNotification, ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification | PromptListChangedNotification):
            self._lists_changed.set()
        await trio.lowlevel.checkpoint()

    async def _follow_changes(self, client: Client) -> None:
        """List the tools and prompts again whenever the server says they changed: events of
        a ``subscriptions/listen`` stream at protocol 2026-07-28, its ``list_changed``
        notifications before (heeded even from a server that did not declare them). The session
        takes the new tools at its next prompt."""
        from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
        from mcp.shared.exceptions import MCPError

        capabilities = client.server_capabilities
        tools = bool(capabilities.tools and capabilities.tools.list_changed)
        prompts = bool(capabilities.prompts and capabilities.prompts.list_changed)
        if tools or prompts:
            try:
                async with client.listen(
                    tools_list_changed=tools, prompts_list_changed=prompts
                ) as changes:
                    async for _ in changes:
                        await self._list_again(client)
                return
            except ListenNotSupportedError:
                pass
            except (MCPError, TimeoutError) as exc:  # refused, or never acknowledged
                log.warning(
                    "MCP server %s: no subscriptions/listen stream (%s); its "
                    "list_changed notifications are still heeded",
                    self.name,
                    _reason(exc),
                )
            except SubscriptionLost as exc:  # the connection is going: _until_gone hears it
                log.info("MCP server %s: its change stream ended: %s", self.name, exc)
                return
        while True:
            await self._lists_changed.wait()
            self._lists_changed = trio.Event()
            await self._list_again(client)

    async def _list(self, client: Client) -> None:
        """Take the server's tools and prompts, as much of them as the bounds allow
        (``dropped`` says what was left out), each list within LIST_TIMEOUT (TimeoutError past
        it: the lists stay as they were)."""
        fitting = _Fitting()  # each tool judged as its page comes: a page may be 60 MiB
        tools, cut = await _listing(client.list_tools, "tools", fitting.take)
        too_big = fitting.dropped()
        prompts: list[Prompt] = []
        prompts_cut = ""
        if client.server_capabilities.prompts:
            prompts, prompts_cut = await _listing(client.list_prompts, "prompts")
        problems = [why for why in (cut, too_big, prompts_cut) if why]
        self.tools, self.prompts = tools, prompts
        self.dropped = "; ".join(problems)
        if problems:
            log.warning("MCP server %s: %s", self.name, self.dropped)

    async def _list_again(self, client: Client) -> None:
        from mcp.shared.exceptions import MCPError
        from pydantic import ValidationError

        try:
            await self._list(client)
        except (MCPError, ValidationError, TimeoutError) as exc:  # keep the old lists
            log.warning(
                "MCP server %s said its lists changed, then could not list them: %s",
                self.name,
                _reason(exc),
            )
            return
        log.info(
            "MCP server %s changed: %d tools, %d prompts",
            self.name,
            len(self.tools),
            len(self.prompts),
        )
        self._on_change()

    def _lost(self, reason: str) -> None:
        if not self._gone.is_set():
            self._gone_reason = reason
            self._gone.set()

    def _failed(self, reason: str, process: StdioProcess | None) -> None:
        self.status, self.reason = "failed", reason
        self.tools, self.prompts = [], []
        self.settled.set()
        tail = process.stderr_tail if process is not None else ""
        log.warning(
            "MCP server %s (%s) failed: %s%s",
            self.name,
            self.spec.transport,
            reason,
            f"\n--- the end of its stderr ---\n{tail}" if tail else "",
        )

    async def check(self, timeout: float) -> None:  # noqa: ASYNC109 - a bound, not a deadline
        """For a connected HTTP or SSE server (a stdio one is watched all along): ping it, and
        when it does not answer within ``timeout``, end the connection and wait (as long
        again) until it has ended; then ``status`` is "failed". Protocol 2026-07-28 has no
        ``ping``: there the probe is a ``server/discover`` (answered from the server's state,
        adopted by nobody)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        client = self._client
        if client is None or self.spec.transport == "stdio":
            return
        with trio.move_on_after(timeout) as waited:
            try:
                version = client.protocol_version
                if version in MODERN_PROTOCOL_VERSIONS:
                    await client.session.send_discover(version)
                else:  # the session's (the Client's warns that 2026-07-28 dropped it)
                    await client.session.send_ping()
            except Exception as exc:  # any failure: the server is not there to use
                self._lost(_reason(exc))
        if waited.cancelled_caught:
            self._lost(f"no answer to a ping within {timeout:g} s")
        if self._gone.is_set():
            with trio.move_on_after(timeout):
                await self.ended.wait()

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], ask: UserAsker | None = None
    ) -> CallToolResult:
        """Call a tool. Raises ToolFailure when the server is not connected, answers an error
        or goes away meanwhile (then it is marked failed). Cancellation: the SDK tells the
        server (``notifications/cancelled``) and we do not wait for it. ``ask``: where the
        server's elicitations during the call go (:func:`ask_user`); without it, or once the
        call is over, they are declined (or cancelled, when still open)."""
        asking = _Asking(ask) if ask is not None else None
        if asking is not None:
            self._asking.append(asking)
        try:
            return await self._ask(lambda client: client.call_tool(tool, arguments))
        finally:
            if asking is not None:
                self._asking.remove(asking)
                asking.close()

    async def _on_elicitation(self, context: Any, params: Any) -> Any:
        """The server's ``elicitation/create`` (the SDK's ``elicitation_callback``): put to
        the user through the running tool call's editor, answered back as the user answered.
        None to go by (no tool call of ours running, an editor without that mode, its
        failure): ``decline``; the call ended while the form was open: ``cancel``."""
        from mcp_types import ElicitResult

        if not self._asking:
            log.info("MCP server %s elicits outside a tool call: declined", self.name)
            return ElicitResult(action="decline")
        asking = self._asking[-1]  # the SDK does not say which call asks: the latest
        answer = await asking.ask(_elicitation(params, self.name))
        if answer is None:
            return ElicitResult(action="cancel" if asking.closed else "decline")
        if answer.action == "accept":
            return ElicitResult(action="accept", content=answer.content)
        return ElicitResult(action="decline" if answer.action == "decline" else "cancel")

    async def get_prompt(self, prompt: str, arguments: dict[str, str]) -> GetPromptResult:
        """A prompt's messages; raises ToolFailure as ``call_tool`` does."""
        return await self._ask(lambda client: client.get_prompt(prompt, arguments))

    async def _ask(self, send: Callable[[Client], Awaitable[T]]) -> T:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED
        from pydantic import ValidationError

        client = self._client
        if client is None or self.status != "connected":
            raise ToolFailure(
                f"MCP server {self.name} is not connected"
                f"{': ' + self.reason if self.reason else ''}."
            )
        try:
            return await send(client)
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                self._lost("the connection closed")
                raise ToolFailure(f"MCP server {self.name} went away during the call.") from exc
            raise ToolFailure(
                f"MCP server {self.name} answered an error: {exc.error.message}"
            ) from exc
        except ValidationError as exc:  # it answered, but not with a result: it is still there
            raise ToolFailure(
                f"MCP server {self.name} answered with an invalid result: "
                f"{exc.error_count()} problem(s), the first: "
                f"{exc.errors()[0]['msg']}"
            ) from exc
        except Exception as exc:  # the transport's errors (OSError, httpx, anyio): it is gone
            self._lost(_reason(exc))
            raise ToolFailure(
                f"MCP server {self.name} went away during the call: {_reason(exc)}"
            ) from exc


async def _listing(
    list_page: Callable[..., Awaitable[Any]],
    field: str,
    take: Callable[[Any], bool] = lambda item: True,
) -> tuple[list[Any], str]:
    """The items of a paginated list (``tools/list``, ``prompts/list``), at most MAX_ITEMS from
    at most MAX_PAGES pages, each only if ``take`` takes it (as its page comes: nothing
    left out is kept until the end), and what was left out ("" when nothing). Past
    LIST_TIMEOUT in all, what the pages that came hold is kept (TimeoutError when none came)."""
    items: list[Any] = []
    cursor = None
    seen: set[str] = set()
    repeated = False
    pages = 0
    with trio.move_on_after(LIST_TIMEOUT) as waited:
        for _ in range(MAX_PAGES):
            page = await list_page(cursor=cursor)
            pages += 1
            items += [item for item in getattr(page, field) if take(item)][
                : MAX_ITEMS + 1 - len(items)
            ]
            cursor = page.next_cursor
            repeated = cursor in seen
            if not cursor or repeated or len(items) > MAX_ITEMS:
                break
            seen.add(cursor)
    if waited.cancelled_caught and not pages:
        raise TimeoutError(f"its {field} list took longer than {LIST_TIMEOUT:g} s")
    if waited.cancelled_caught:
        return items[:MAX_ITEMS], (
            f"its {field} list took longer than {LIST_TIMEOUT:g} s "
            f"({min(len(items), MAX_ITEMS)} taken from {pages} pages)"
        )
    if len(items) > MAX_ITEMS:
        return items[:MAX_ITEMS], f"only its first {MAX_ITEMS} {field} were taken"
    if repeated:
        return items, f"its {field} list came back to a page it had sent ({len(items)} taken)"
    if cursor:
        return items, (
            f"its {field} list still went on after {MAX_PAGES} pages ({len(items)} taken)"
        )
    return items, ""


class _Fitting:
    """Takes tools in order while their definitions fit in MAX_DEFINITION_BYTES in all (one
    that does not is left out; one after it may still fit)."""

    def __init__(self) -> None:
        self.size = 0
        self.left = 0

    def take(self, tool: Tool) -> bool:
        definition = tool.model_dump_json(include={"name", "title", "description", "input_schema"})
        if self.size + len(definition) > MAX_DEFINITION_BYTES:
            self.left += 1
            return False
        self.size += len(definition)
        return True

    def dropped(self) -> str:
        """What was left out ("" when nothing)."""
        return (
            f"{self.left} tool(s) left out: their definitions went past "
            f"{MAX_DEFINITION_BYTES // 1024} KiB"
            if self.left
            else ""
        )


def _reason(exc: BaseException) -> str:
    """The innermost useful message of an error (task groups wrap them in groups)."""
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    if isinstance(exc, ServerGone | MCPError) or (isinstance(exc, OSError) and not exc.errno):
        return text or type(exc).__name__  # our own words, or the server's
    return (
        text
        if text and type(exc).__name__ in text
        else (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
    )


UserAsker = Callable[[Elicitation], Awaitable[ElicitationAnswer | None]]
"""Put an elicitation to the user (``Editor.elicit``, tied to the tool call)."""


def ask_user(ctx: ToolContext) -> UserAsker | None:
    """Where an MCP server's elicitations during the tool call of ``ctx`` go: the editor,
    on that tool call (None: the tool runs where nobody can be asked)."""
    elicit, call_id = ctx.elicit, ctx.tool_call_id
    if elicit is None:
        return None

    async def ask(elicitation: Elicitation) -> ElicitationAnswer | None:
        return await elicit(evolve(elicitation, tool_call_id=call_id))

    return ask


class _Asking:
    """One running tool call's way to the user; closing it cancels what it still asks."""

    def __init__(self, ask: UserAsker) -> None:
        self._ask = ask
        self._open: set[trio.CancelScope] = set()
        self.closed = False

    async def ask(self, elicitation: Elicitation) -> ElicitationAnswer | None:
        if self.closed:
            return None
        with trio.CancelScope() as scope:
            self._open.add(scope)
            try:
                return await self._ask(elicitation)
            finally:
                self._open.discard(scope)
        return None  # cancelled: the call is over

    def close(self) -> None:
        self.closed = True
        for scope in self._open:
            scope.cancel()


def _elicitation(params: Any, server: str) -> Elicitation:
    """An MCP ``elicitation/create``'s params as ours. The message names the server (the user
    sees who asks: a server could pose as the agent), on the same screen: its characters shown
    as they are (:func:`visible`) and no run of blank lines that pushes the name out of view;
    the form's titles and descriptions likewise, its structure as it came."""
    wire = params.model_dump(by_alias=True, exclude_none=True, mode="json")
    message = f"The {shown(server)} MCP server asks: {_plain(str(wire.get('message', '')))}"
    if wire.get("mode") == "url":
        return Elicitation(
            message, "url", url=wire.get("url"), elicitation_id=wire.get("elicitationId")
        )
    return Elicitation(message, "form", requested_schema=_plain_texts(wire.get("requestedSchema")))


_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n){2,}")


def _plain(text: str) -> str:
    return _BLANK_LINES.sub("\n\n", visible(text.strip()))


def _plain_texts(schema: Any) -> Any:
    """The schema with each ``title`` and ``description`` (what the form shows) plain."""
    if isinstance(schema, list):
        return [_plain_texts(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _plain(value)
        if key in ("title", "description") and isinstance(value, str)
        else _plain_texts(value)
        for key, value in schema.items()
    }
