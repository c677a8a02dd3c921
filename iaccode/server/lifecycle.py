"""Opening and releasing the sessions of one connection: new, load / resume, fork, close, delete.

Holds the live sessions by id. Each runs in the connection's session nursery
(``Session.serve``); its history is in the store, which outlives it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from attrs import evolve

from iaccode.config import Config
from iaccode.llm.base import Provider
from iaccode.mcp.config import ServerConfigError, ServerSpec, from_acp, merge
from iaccode.protocol import messages as m
from iaccode.server.credentials import Credentials
from iaccode.server.editor_requests import editor_requests
from iaccode.server.options import QueueUpdate, SendUpdate
from iaccode.server.store_call import store_call
from iaccode.session.session import Session
from iaccode.store.meta import SessionMeta, utc_now
from iaccode.store.store import (
    FormatTooNew,
    SessionFile,
    SessionLocked,
    SessionNotFound,
    SessionStore,
    StoreError,
    new_session_id,
)
from iaccode.tools import tool_output
from iaccode.transcript.tools import ToolTable
from iaccode.turn.stored_images import restore
from iaccode.wire import errors
from iaccode.wire.connection import Connection

if TYPE_CHECKING:
    from iaccode.transcript.recorder import Recorder

log = logging.getLogger(__name__)


class SessionLifecycle:
    def __init__(
        self,
        *,
        config: Config,
        provider: Provider,
        connection: Connection,
        session_nursery: trio.Nursery,
        credentials: Credentials,
        offered: dict[str, str],
        send_update: SendUpdate,
        queue_update: QueueUpdate,
        recorder: Recorder | None = None,
    ) -> None:
        self.config = config
        self.provider = provider
        self.connection = connection
        self.client_capabilities = m.ClientCapabilities()
        """What the editor said it can do (``initialize``), handed to each session opened."""
        self.live: dict[str, Session] = {}
        self.store = SessionStore(config.home / "sessions")
        self._session_nursery = session_nursery
        """Where each session's own nursery lives (``Session.serve``)."""
        self._credentials = credentials
        self._offered = offered
        self._send_update = send_update
        self._queue_update = queue_update
        self._recorder = recorder
        self._tool_table = ToolTable(recorder, config.recorded_tools)
        """Each turn's tools, wrapped to record or play what depends on the machine or a
        server."""

    def get(self, session_id: str) -> Session:
        """A live session; -32602 naming the id when there is none."""
        session = self.live.get(session_id)
        if session is None:
            raise errors.invalid_params({"params.sessionId": f"session not found: {session_id}"})
        return session

    # -- opening ----------------------------------------------------------------------------

    async def new(self, params: m.NewSessionRequest) -> Session:
        cwd, servers, more = await self._admit(params)
        self._snapshot(cwd)
        stamp = utc_now()
        meta = SessionMeta(
            session_id=new_session_id(),
            cwd=str(cwd),
            created_at=stamp,
            updated_at=stamp,
            model=self.config.model,
            mode=self.config.default_mode,
            thought_level=self.config.thought_level,
            additional_directories=more,
        )
        file = await store_call(self.store.create, meta)
        session = self._open_session(meta, file, [], servers)
        await self._start(session)
        log.info("session %s opened in %s", session.id, cwd)
        return session

    async def restore(self, params: m.LoadSessionRequest, *, reattach: bool) -> Session:
        """A stored session, live again; with ``reattach`` a session already live here is
        simply returned, else it is released first (refused while a prompt runs)."""
        cwd, servers, more = await self._admit(params)
        self._snapshot(cwd)
        live = self.live.get(params.session_id)
        if live is not None:
            if reattach:
                live.set_additional_directories(more)
                return live
            if live.busy:
                raise errors.invalid_params(
                    {
                        "params.sessionId": (
                            "a prompt is running in this session; cancel it or use session/resume"
                        )
                    }
                )
            del self.live[live.id]
            await live.close()
        file, meta, records, unsaved = await store_call(self._open_stored, params.session_id)
        stored = meta
        # The request's folders, never the stored ones (the RFD: the client resends them).
        meta = evolve(meta, cwd=str(cwd), additional_directories=more)
        meta = self._served(meta)
        session = self._open_session(meta, file, records, servers, unsaved)
        if meta.additional_directories != stored.additional_directories:
            session.update_meta()  # session/list reports what is active
        await self._start(session)
        log.info("session %s restored (%d records)", session.id, len(records))
        return session

    async def fork(self, params: m.LoadSessionRequest) -> Session:
        """A new session with a copy of the history as it stands after the last finished
        message; a turn running in the source goes on undisturbed."""
        cwd, servers, more = await self._admit(params)
        source, _ = await store_call(self.store.read, params.session_id)
        stamp = utc_now()
        meta = evolve(
            source,
            session_id=new_session_id(),
            cwd=str(cwd),
            created_at=stamp,
            additional_directories=more,  # the request's, never the source's
            updated_at=stamp,
            cost_usd=0.0,  # its own spending; the context is the same
            title=f"{source.title} (fork)" if source.title else None,
        )
        meta = self._served(meta)
        file, records = await store_call(self._fork_stored, params.session_id, meta)
        session = self._open_session(meta, file, records, servers)
        session.update_meta()
        await self._start(session)
        return session

    async def _admit(
        self, params: m.NewSessionRequest | m.LoadSessionRequest
    ) -> tuple[Path, list[ServerSpec], tuple[str, ...]]:
        """What every opening checks first, in this order: the directories, the key, the MCP
        servers."""
        cwd = await _checked_cwd(params.cwd)
        more = await _checked_directories(params.additional_directories or [], cwd)
        self._credentials.require()
        return cwd, self._mcp_servers(params.mcp_servers), more

    def _mcp_servers(self, raw: list[Any]) -> list[ServerSpec]:
        """The editor's ``mcpServers`` over config.toml's; a bad one is -32602 naming it."""
        try:
            return merge(self.config.mcp_servers, from_acp(raw))
        except ServerConfigError as exc:
            raise errors.invalid_params({f"params.{exc.where}": exc.problem}) from exc

    def _open_session(
        self,
        meta: SessionMeta,
        file: SessionFile | None,
        records: list[dict[str, Any]],
        mcp_servers: list[ServerSpec],
        unsaved: str | None = None,
    ) -> Session:
        session_id = meta.session_id
        return Session(
            meta=meta,
            file=file,
            records=records,
            config=self.config,
            provider=self.provider,
            send_update=lambda update: self._send_update(session_id, update),
            queue_update=lambda update: self._queue_update(session_id, update),
            request=editor_requests(self.connection),
            client=self.client_capabilities,
            mcp_servers=mcp_servers,
            tool_table=self._tool_table,
            unsaved=unsaved,
        )

    async def _start(self, session: Session) -> None:
        await self._session_nursery.start(session.serve)
        self.live[session.id] = session

    def _served(self, meta: SessionMeta) -> SessionMeta:
        """A stored session's meta with a model this provider offers: one written under
        another provider (or model list) goes on with the configured model."""
        if meta.model in self._offered:
            return meta
        log.info(
            "session %s: model %s is not offered by provider %s; using %s",
            meta.session_id,
            meta.model,
            self.config.provider,
            self.config.model,
        )
        return evolve(meta, model=self.config.model)

    def _open_stored(
        self, session_id: str
    ) -> tuple[SessionFile | None, SessionMeta, list[dict[str, Any]], str | None]:
        """Open a stored session for writing or, when it can be read but not written (a
        read-only data dir), for reading only: then the file is None and the last item says
        why. A session locked by another process is not opened."""
        try:
            file, meta, records = self.store.open(session_id)
        except (SessionNotFound, SessionLocked, FormatTooNew):
            raise
        except StoreError as exc:
            meta, records = self.store.read(session_id)
            log.warning("session %s opened read-only: %s", session_id, exc)
            return None, meta, records, str(exc)
        return file, meta, [restore(record, file.load_image) for record in records], None

    def _fork_stored(
        self, source_id: str, meta: SessionMeta
    ) -> tuple[SessionFile, list[dict[str, Any]]]:
        home, fork_id = self.config.home, meta.session_id
        try:
            renamed = tool_output.copy_for_fork(home, source_id, fork_id)
        except OSError as exc:  # the history still forks; its saved output stays the source's
            log.warning("fork of %s: saved tool output not copied: %s", source_id, exc)
            tool_output.remove(home, fork_id)
            renamed = None
        try:
            file, records = self.store.fork(source_id, meta, renamed)
        except BaseException:
            tool_output.remove(home, fork_id)
            raise
        return file, [restore(record, file.load_image) for record in records]

    def _snapshot(self, cwd: Path) -> None:
        """A recording keeps the workspace as the first session found it, for replays."""
        if self._recorder is not None:
            self._recorder.workspace(cwd)

    # -- releasing --------------------------------------------------------------------------

    async def close(self, session_id: str) -> None:
        """Cancel a running turn, release the session; its history stays on disk."""
        session = self.get(session_id)
        del self.live[session_id]
        await session.close()
        log.info("session %s closed", session_id)

    async def delete(self, session_id: str) -> None:
        """Release the session if it is live, then remove its history and tool output."""
        live = self.live.pop(session_id, None)
        if live is not None:
            await live.close()
        await store_call(self.store.delete, session_id)
        await trio.to_thread.run_sync(tool_output.remove, self.config.home, session_id)


async def _checked_directories(raw: list[str], cwd: Path) -> tuple[str, ...]:
    """``additionalDirectories``: each an absolute path to an existing directory (-32602
    naming the entry otherwise: the RFD forbids dropping one silently). Exact repeats, and the
    cwd itself, are left out (the RFD allows it; the first occurrence keeps its place)."""
    kept: list[str] = []
    for index, entry in enumerate(raw):
        where = f"params.additionalDirectories[{index}]"
        if not Path(entry).is_absolute() or not await trio.Path(entry).is_dir():
            raise errors.invalid_params(
                {where: (f"must be an absolute path to an existing directory: {entry!r}")}
            )
        if entry != str(cwd) and entry not in kept:
            kept.append(entry)
    return tuple(kept)


async def _checked_cwd(raw: str) -> Path:
    cwd = Path(raw)
    if not cwd.is_absolute() or not await trio.Path(cwd).is_dir():
        raise errors.invalid_params(
            {"params.cwd": (f"must be an absolute path to an existing directory: {raw!r}")}
        )
    return cwd
