"""A live session: its conversation, settings, nursery, and at most one running turn.

Each session owns a trio nursery (``serve``); each prompt's turn runs there in its own cancel
scope. ``session/cancel`` and ``session/close`` cancel that scope and the prompt then answers
``cancelled``; a ``$/cancel_request`` for the prompt request cancels the same scope and the
request answers -32800. Either way the answer goes out after the turn's last update.

Everything the session learns is written as it happens: each finished message to its history
file, each settings change (model, mode, thinking, permission memory, title) to its metadata.
When that fails (disk full, a read-only data dir) the session goes on and the user is told,
once per run of failures, in an ``agent_message_chunk`` (with ``_meta.iaccode.error``) that is
sent before the prompt answers.

Opening a session needs none of the turn's machinery: ``iaccode.turn`` (with the tools and the
IaC checks) and ``iaccode.context`` are imported with the first prompt, or before it by the
preload (``iaccode/preload.py``), never on ``session/new``'s path.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from attrs import evolve

from iaccode import choices
from iaccode.config import Config
from iaccode.host.local_files import LocalFiles
from iaccode.installed import forget_imports_from
from iaccode.llm.base import Provider, TokenUsage
from iaccode.llm.prices import CostMeter
from iaccode.mcp.config import ServerSpec
from iaccode.mcp.servers import McpServers, expand_prompt
from iaccode.protocol.content import ContentBlock, TextContent
from iaccode.protocol.convert import to_wire
from iaccode.protocol.messages import (
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CurrentModeUpdate,
    PlanEntry,
    PlanUpdate,
    PromptResponse,
    SessionInfoUpdate,
    SteeringResponse,
    StopReason,
    Usage,
)
from iaccode.session.editor import Editor, EditorRequest
from iaccode.session.errors import InvalidParams
from iaccode.store.meta import SessionMeta, utc_now
from iaccode.store.store import SessionFile, StoreError
from iaccode.tools.base import Tool
from iaccode.tools.tool_output import output_dir
from iaccode.transcript.tools import ToolTable
from iaccode.turn.transcript import Transcript

if TYPE_CHECKING:
    from iaccode.context import SessionContext
    from iaccode.turn.env import QueueUpdate, SendUpdate, TurnEnv
    from iaccode.turn.exposure import Exposure
    from iaccode.turn.turn import Turn

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 2.0
"""How long ``close`` waits for a cancelled turn to finish answering."""

CONTEXT_DELAY = 0.2
"""Seconds after the session opens before its system prompt is built in the background: the
requests an editor sends right after ``session/new`` (another session, its settings) are not
slowed by the build; a prompt that comes sooner builds it itself."""

TITLE_LENGTH = 80

COMMANDS = [
    AvailableCommand("compact", "Summarise the conversation so far to free context"),
    AvailableCommand("clear", "Start a fresh context in this session (the history stays)"),
    AvailableCommand("mcp", "List the MCP servers: transport, status and number of tools"),
]


class Session:
    def __init__(
        self,
        *,
        meta: SessionMeta,
        file: SessionFile | None,
        records: list[dict[str, Any]],
        config: Config,
        provider: Provider,
        send_update: SendUpdate,
        request: EditorRequest,
        client: ClientCapabilities,
        mcp_servers: list[ServerSpec],
        tool_table: ToolTable | None = None,
        unsaved: str | None = None,
        queue_update: QueueUpdate = lambda update: False,
    ) -> None:
        """``file`` None: nothing is saved; ``unsaved`` says why, and the first prompt tells
        the user. ``tool_table`` makes each turn's tools (a recording or a replay wraps some);
        ``queue_update``: see ``EditorAccess.queue_update``."""
        self.meta = meta
        self.id = meta.session_id
        self.cwd = Path(os.path.realpath(meta.cwd))
        self.additional_dirs = _real_paths(meta.additional_directories)
        """The client's extra project folders (``additionalDirectories``), as real paths."""
        forget_imports_from(self.cwd)  # the SDKs and parsers come later, never from here
        self.mcp = McpServers(mcp_servers, self.cwd, on_change=self._commands_changed)
        """The session's MCP servers (the editor's and config.toml's), started in ``serve``."""
        self._mcp_tools_shown: Collection[str] = frozenset()
        """The MCP tools the system prompt names (it is rebuilt when they change)."""
        self._commands_sent: list[AvailableCommand] | None = None
        """The commands the editor was last told of (None: not yet; then nothing is sent)."""
        self.remembered: dict[str, bool] = dict(meta.remembered)
        """Permission answers that hold for the session: tool name -> allow (True) / reject."""
        self.records = records
        """The stored records this session was opened with (shown again on load)."""
        self._exposure: Exposure | None = None
        self._file = file
        self._warnings: list[str] = []
        """Store failures the user has not been told of yet."""
        if unsaved is not None:
            self._warnings.append(
                f"This session is open read-only: nothing from now on will be saved ({unsaved})."
            )
        self._meta_failing = False
        self.transcript = Transcript.from_records(records, file, self._store_failed)
        self.transcript.repair()
        self._config = config
        self._provider = provider
        self.editor = Editor(
            request,
            send_update,
            self.id,
            client,
            LocalFiles(max_bytes=config.tool_limits.read_max_bytes),
            queue_update,
            root=self.cwd,
        )
        """Every call to the editor for this session's turns."""
        self._tool_table = tool_table or ToolTable()
        self._turn: trio.CancelScope | None = None
        self._running: Turn | None = None
        """The running turn (steering messages go to it)."""
        self._turn_done = trio.Event()
        self._turn_done.set()
        self._turn_lock = trio.Lock()
        """Held by the prompt whose turn runs; trio's Lock is fair, so queued prompts run in
        the order they arrived."""
        self._queued = 0
        """Prompts waiting for the running turn to end."""
        self._cancels = 0
        """How many times ``cancel`` was called: a queued prompt that sees it changed since it
        arrived answers ``cancelled`` without running."""
        self._nursery: trio.Nursery | None = None
        self._serve_scope = trio.CancelScope()
        self._saved_output = Path(os.path.realpath(output_dir(config.home, self.id)))
        self.cost = CostMeter(meta.cost_usd, meta.context_tokens)
        """What the session's requests cost (known models only), saved in its meta."""
        self._context: SessionContext | None = None

    @property
    def context(self) -> SessionContext:
        """The system prompt, built from sections (``iaccode.context``): made when first
        needed (the session's background build, or its first prompt), not in ``session/new``."""
        if self._context is None:
            from iaccode.context import SessionContext

            self._context = SessionContext(
                self.cwd, self._config.home, self, additional=self.additional_dirs
            )
        return self._context

    @property
    def exposure(self) -> Exposure:
        """Whether it read secrets (web_fetch then asks per host; ``turn/exposure.py``),
        from its stored calls: read with the first prompt, not in ``session/new``."""
        if self._exposure is None:
            from iaccode.turn.exposure import Exposure

            tools = self._tool_table.builtin()
            self._exposure = Exposure.from_records(
                self.records,
                lambda name: name not in tools or tools[name].reads_what_it_names,
            )
        return self._exposure

    # -- settings ---------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self.meta.model

    @property
    def mode(self) -> str:
        return self.meta.mode

    @property
    def thought_level(self) -> str:
        return self.meta.thought_level

    def update_meta(self, **changes: Any) -> None:
        """Change settings and save them at once (atomically)."""
        self.meta = evolve(
            self.meta,
            **changes,
            updated_at=utc_now(),
            remembered=dict(self.remembered),
            message_count=self.transcript.message_count,
            cost_usd=self.cost.total,
            context_tokens=self.cost.context_tokens,
        )
        if self._file is not None:
            try:
                self._file.write_meta(self.meta)
            except StoreError as exc:
                if not self._meta_failing:
                    log.error("%s", exc)
                    self._store_failed(f"Could not save the session settings: {exc}")
                self._meta_failing = True
            else:
                self._meta_failing = False

    def set_additional_directories(self, directories: tuple[str, ...]) -> None:
        """A client reattaching (``session/resume`` of a live session) gives the complete list
        of extra project folders from now on; the next prompt's system prompt names them."""
        if directories == self.meta.additional_directories:
            return
        self.update_meta(additional_directories=directories)
        self.additional_dirs = _real_paths(directories)
        if self._context is not None:  # else it is made with them
            self._context.set_additional(self.additional_dirs)

    async def set_mode(self, mode_id: str) -> None:
        """Switch mode and tell the editor (``current_mode_update``). Takes effect at once,
        for the running turn's next tool call too."""
        if mode_id not in choices.MODES:
            raise InvalidParams(
                {
                    "params.modeId": (
                        f"unknown mode {mode_id!r}; the modes are {', '.join(choices.MODES)}"
                    )
                }
            )
        self.update_meta(mode=mode_id)
        await self.editor.send_update(CurrentModeUpdate(mode_id))

    async def announce(self) -> None:
        """What a client wants to know about a session it just opened: the commands, and for
        one with a history, how full its context is and what it cost so far."""
        await self._send_commands()
        if self.cost.context_tokens:
            from iaccode.turn.turn import usage_update

            await self.editor.send_update(usage_update(self.cost, self._config.context_window))

    async def _send_commands(self) -> None:
        self._commands_sent = self._commands()
        await self.editor.send_update(AvailableCommandsUpdate(self._commands_sent))

    def _commands(self) -> list[AvailableCommand]:
        return COMMANDS + [
            AvailableCommand(
                command.name,
                command.description,
                AvailableCommandInput(command.hint) if command.hint else None,
            )
            for command in self.mcp.prompt_commands().values()
        ]

    def _commands_changed(self) -> None:
        """An MCP server connected or failed: its prompts come or go from the commands."""
        if (
            self._nursery is not None
            and self._commands_sent is not None
            and self._commands() != self._commands_sent
        ):
            self._nursery.start_soon(self._send_commands)

    def _store_failed(self, message: str) -> None:
        """Saving failed: the session goes on, and the user is told: at once, and at the latest
        before the running prompt answers (``_tell_warnings``)."""
        self._warnings.append(message)
        if self._nursery is not None:
            self._nursery.start_soon(self._tell_warnings)

    async def _tell_warnings(self) -> None:
        while self._warnings:
            message = self._warnings.pop(0)
            await self.editor.advise(message, title="The session is not being saved")

    # -- lifecycle --------------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the session's nursery until ``close``. Turns run in it."""
        with self._serve_scope:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if self.mcp:
                    await nursery.start(self.mcp.serve)  # connects in the background
                nursery.start_soon(self._build_context)
                task_status.started()
                await trio.sleep_forever()

    async def _show_plan(self, entries: list[PlanEntry]) -> None:
        """todo_write: keep the plan with the history (``session/load`` shows the last one)
        and show it."""
        update = PlanUpdate(entries)
        self.transcript.plan(to_wire(update)["entries"])
        await self.editor.send_update(update)

    async def _build_context(self) -> None:
        """The system prompt, built as the session opens (off the request path: its modules
        are imported in a worker thread). A failure is logged and the first prompt tries again;
        the session itself goes on."""
        try:
            await trio.sleep(CONTEXT_DELAY)
            await trio.to_thread.run_sync(importlib.import_module, "iaccode.context")
            await self.context.refresh()
        except Exception:  # a bug in building the prompt must not end the session
            log.exception("session %s: building the system prompt failed", self.id)

    @property
    def busy(self) -> bool:
        return self._turn is not None or self._queued > 0

    def _turn_env(self, tools: dict[str, Tool]) -> TurnEnv:
        from iaccode.turn.env import ModelSide, SessionState, ToolEnv, TurnEnv
        from iaccode.turn.subagent import SubAgent

        sub_agent = SubAgent(tools, self.transcript)
        tools[sub_agent.name] = sub_agent
        env = TurnEnv(
            model=ModelSide(
                provider=self._provider,
                model=self.model,
                system=lambda: self.context.current.main,
                subagent_system=lambda: self.context.current.subagent,
                thinking=lambda: self.thought_level,
                cost=self.cost,
            ),
            calls=ToolEnv(
                config=self._config,
                tools=tools,
                editor=self.editor,
                session=SessionState(
                    cwd=self.cwd,
                    mode=lambda: self.mode,
                    remembered=self.remembered,
                    cancel_turn=self._cancel_running,
                    saved_output=self._saved_output,
                    show_plan=self._show_plan,
                    exposure=self.exposure,
                    additional_dirs=self.additional_dirs,
                ),
            ),
        )
        sub_agent.bind(env)
        return env

    async def prompt(self, blocks: list[ContentBlock], ready: Callable[[], None]) -> PromptResponse:
        """Run one turn in the session's nursery and wait for it; while another turn runs,
        first wait for it to end (prompts run one at a time, in the order they arrived).

        Calls ``ready()`` once the prompt is registered, so a cancel read after this prompt
        finds it. Cancellation (``cancel``, ``close``): the running turn answers ``cancelled``
        with the usage so far, and so does every prompt queued at that moment, without
        running. Cancelling the calling task cancels the turn, waits for it, and re-raises.
        Errors: a bug in the turn is re-raised here (the request answers -32603).
        """
        content = _model_content(blocks)  # before any model request (and before queueing)
        arrived = self._cancels
        self._queued += 1
        waiting = True
        ready()
        try:
            async with self._turn_lock:
                self._queued -= 1
                waiting = False
                if self._cancels != arrived or self._nursery is None:
                    return PromptResponse("cancelled", _usage(TokenUsage()))
                return await self._run_turn(blocks, content)
        finally:
            if waiting:  # cancelled while queued ($/cancel_request)
                self._queued -= 1

    async def _run_turn(
        self, blocks: list[ContentBlock], content: list[dict[str, Any]]
    ) -> PromptResponse:
        assert self._nursery is not None
        scope = self._turn = trio.CancelScope()
        finished = self._turn_done = trio.Event()
        from iaccode.turn.turn import Turn

        tools = self._tool_table.builtin()  # the MCP servers' join once they are ready (_run)
        turn = self._running = Turn(self._turn_env(tools), self.transcript)
        stop_reason: list[StopReason] = []
        failure: list[Exception] = []

        async def run_turn() -> None:
            try:
                with scope:
                    stop_reason.append(await self._run(turn, blocks, content, tools))
            except Exception as exc:  # handed to the prompt's task, which reports it
                failure.append(exc)
            finally:
                self._turn = None
                self._running = None
                try:
                    self.update_meta()  # message count, permission memory, updated_at
                    # Before the answer: a warning after it would belong to no turn.
                    with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
                        await self._tell_warnings()
                finally:
                    finished.set()  # always: the prompt (and a shutdown) wait for it

        self._nursery.start_soon(run_turn)
        try:
            await finished.wait()
        except trio.Cancelled:
            scope.cancel()
            with trio.CancelScope(shield=True):
                await finished.wait()
            raise
        if failure:
            raise failure[0]
        return PromptResponse(stop_reason[0] if stop_reason else "cancelled", _usage(turn.usage))

    async def steer(
        self, blocks: list[ContentBlock], idle_behavior: str | None
    ) -> SteeringResponse:
        """``_session/steering``: add the message to the running turn (it reaches the model
        with the next request and is saved as a user message); with no turn running, answer
        ``promptRequired`` when asked to, else start a turn with it (nobody waits for its
        answer; its updates stream as usual)."""
        if self._running is not None and self._turn is not None and not self._turn.cancel_called:
            self._running.steer(_model_content(blocks), [to_wire(b) for b in blocks])
            return SteeringResponse("injected")
        if idle_behavior == "promptRequired":
            return SteeringResponse("promptRequired", reason="noRunningTurn")
        if self._nursery is None:
            raise RuntimeError("Session.serve must be started before prompts")
        await self._nursery.start(self._unanswered_prompt, blocks)
        return SteeringResponse("startedNewTurn")

    async def _unanswered_prompt(
        self, blocks: list[ContentBlock], task_status: trio.TaskStatus[None]
    ) -> None:
        """A turn that no ``session/prompt`` waits for (started by steering)."""
        try:
            response = await self.prompt(blocks, task_status.started)
        except Exception:
            log.exception("the turn started by _session/steering failed")
            return
        log.info("the turn started by _session/steering ended: %s", response.stop_reason)

    async def _run(
        self,
        turn: Turn,
        blocks: list[ContentBlock],
        content: list[dict[str, Any]],
        tools: dict[str, Tool],
    ) -> StopReason:
        await self._tell_warnings()  # e.g. that this session cannot be saved
        command = _command(blocks, self.mcp.prompt_commands())
        if command is not None and not command.startswith("/"):
            self._running = None  # no model turn to steer: steering starts one after this
        if command in ("mcp", "compact", "clear"):  # answered here: the model never sees it
            self.transcript.prompt([to_wire(b) for b in blocks])
        if command == "mcp":
            listing = self.mcp.listing()
            self.transcript.notice(listing)
            await self.editor.send_update(AgentMessageChunk(TextContent(listing)))
            return "end_turn"
        if command is not None and command.startswith("/"):  # an MCP prompt: a model turn
            expanded = await self._expand_prompt(command[1:], blocks)
            if expanded is None:
                return "end_turn"
            blocks, content = expanded, _model_content(expanded)
        if command == "compact":
            if not await turn.compact():
                text = "Nothing to compact yet: the conversation is a single turn."
                self.transcript.notice(text)
                await self.editor.send_update(AgentMessageChunk(TextContent(text)))
            return "end_turn"
        if command == "clear":
            text = "Context cleared: the model starts fresh (the history stays in this session)."
            self.transcript.replace([], notice=text)
            await self.editor.send_update(AgentMessageChunk(TextContent(text)))
            return "end_turn"
        if self.mcp:
            await self._prepare_mcp(tools)
        await self.context.refresh()  # a rebuild only if an instruction file changed
        if self.meta.title is None:
            await self._set_title(blocks)
        return await turn.run(content, [to_wire(b) for b in blocks])

    async def _prepare_mcp(self, tools: dict[str, Tool]) -> None:
        """Wait (bounded) for the MCP servers still starting, tell the user of failures, and
        give the turn their tools; the system prompt is rebuilt when the tools changed."""
        for failure in await self.mcp.prepare(self._config.mcp_startup_timeout):
            await self.editor.advise(failure, title="An MCP server is not available")
        mcp_tools = self._tool_table.external(self.mcp.tools())
        tools.update(mcp_tools)
        if mcp_tools.keys() != self._mcp_tools_shown:
            self._mcp_tools_shown = mcp_tools.keys()
            self.context.invalidate()  # its MCP section names them

    async def _expand_prompt(
        self, name: str, blocks: list[ContentBlock]
    ) -> list[ContentBlock] | None:
        """``/<server>:<prompt> rest of line`` as the prompt's text; None when it cannot be
        (the user is told why)."""
        command = self.mcp.prompt_commands()[name]
        text = blocks[0].text if isinstance(blocks[0], TextContent) else ""
        rest = text.strip().split(maxsplit=1)[1:]
        expanded = await expand_prompt(command, rest[0] if rest else "")
        if isinstance(expanded, str):  # what went wrong
            await self.editor.send_update(AgentMessageChunk(TextContent(expanded)))
            return None
        return expanded

    async def _set_title(self, blocks: list[ContentBlock]) -> None:
        text = " ".join(b.text for b in blocks if isinstance(b, TextContent)).split()
        title = " ".join(text)
        if not title:
            return
        if len(title) > TITLE_LENGTH:
            title = title[: TITLE_LENGTH - 1].rstrip() + "…"
        self.update_meta(title=title)
        await self.editor.send_update(
            SessionInfoUpdate(title=title, updated_at=self.meta.updated_at)
        )

    def cancel(self) -> None:
        """Cancel the running turn, if any, and every prompt queued behind it. Never blocks."""
        self._cancels += 1
        self._cancel_running()

    def _cancel_running(self) -> None:
        """Cancel the running turn only (a permission question answered ``cancelled``): the
        prompts queued behind it still run."""
        if self._turn is not None:
            self._turn.cancel()

    async def close(self) -> None:
        """Cancel the running turn, wait (bounded) until it has answered, end the nursery and
        release the session on disk."""
        self.cancel()
        with trio.move_on_after(CLOSE_TIMEOUT):
            await self._turn_done.wait()
        await self.mcp.aclose()  # bounded; a stdio server's whole tree ends
        self._serve_scope.cancel()
        if self._file is not None:
            self.transcript.flush()
        self.release()

    def release(self) -> None:
        """Close the history file (and so its lock) once the session's tasks have ended: what
        a process's exit does, for a server that goes on (``serve_agent``)."""
        if self._file is not None:
            self._file.close()


def _real_paths(directories: tuple[str, ...]) -> tuple[Path, ...]:
    return tuple(Path(os.path.realpath(directory)) for directory in directories)


def _model_content(blocks: list[ContentBlock]) -> list[dict[str, Any]]:
    """The prompt as the model gets it; a bad image is the request's error (-32602), found
    before any model request, so nothing is lost."""
    from iaccode.turn.prompt_input import PromptInputError, to_model_content

    try:
        return to_model_content(blocks)
    except PromptInputError as exc:
        raise InvalidParams({exc.field: str(exc)}) from None


def _command(blocks: list[ContentBlock], prompts: Collection[str] = ()) -> str | None:
    """``compact`` / ``clear`` / ``mcp`` when the prompt is that slash command;
    ``/<server>:<prompt>`` for one of the MCP ``prompts``."""
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        word = blocks[0].text.strip().split(maxsplit=1)
        if word and word[0] in ("/compact", "/clear", "/mcp"):
            return word[0][1:]
        if word and word[0][1:] in prompts:
            return word[0]
    return None


def _usage(usage: TokenUsage) -> Usage:
    inputs = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    return Usage(
        input_tokens=inputs,
        output_tokens=usage.output_tokens,
        total_tokens=inputs + usage.output_tokens,
        cached_read_tokens=usage.cache_read_input_tokens or None,
        cached_write_tokens=usage.cache_creation_input_tokens or None,
        thought_tokens=usage.thought_tokens or None,
    )
