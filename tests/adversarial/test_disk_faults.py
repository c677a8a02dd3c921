"""Persistence faults: the data dir's disk fills up mid-session, the disk is full at
``session/new``, the data dir is read-only, the project folder's disk is full.

The disk is a small tmpfs the test mounts (and always unmounts); where mounting is not allowed
(or with ``IAC_ADV_DISK_FAULTS=rlimit``) it is ``RLIMIT_FSIZE`` on the agent instead, raised and
lowered with ``prlimit`` (SIGXFSZ ignored, so writes fail with EFBIG instead of killing it).
The read-only case needs a mount and is skipped, saying so, without one.

What must hold: every prompt is answered (a stop reason, or an error with a readable message),
the user is told, in the turn, that what they do is not being saved and why; the agent goes on
serving (and saving again once there is room); nothing already written is damaged: after a
restart the session loads, replays its turns, and its history rebuilds (``Transcript`` +
``repair``, as a load does) into a request the API accepts; stdout carries protocol only, and
a log file that cannot be written is reported once on stderr, not once per line.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import resource
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, reply

from iaccode.store.store import SessionStore, StoreError, encode_record
from iaccode.turn.transcript import Transcript, api_messages
from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    allow,
    final_status,
    guard_violations,
    history_problems,
    kill_quietly,
    scripted_env,
    shown_text,
    strict_stdout,
    survivors,
)
from tests.support.agent_process import AGENT_COMMAND, METHOD_ALIASES, AgentConnection

CATEGORY = "disk_faults"
FULL = ("No space left on device", "File too large")
"""How a full disk reads (ENOSPC on a tmpfs, EFBIG under RLIMIT_FSIZE)."""
READ_ONLY = "Read-only file system"


# -- the disk ----------------------------------------------------------------------------------


def _run(*command: str) -> str | None:
    """Run a mount command; None when it worked, else why not."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


class Disk:
    """A folder the test can fill up and free again: its own tmpfs, or (``how == "rlimit"``)
    a plain folder, "full" for the agent through RLIMIT_FSIZE 0 (every file write of the
    agent and of what it runs fails then: the data dir, the project and its logs alike)."""

    def __init__(self, path: Path, how: str, why: str | None) -> None:
        self.path = path
        self.how = how
        self.why_not_tmpfs = why
        self._filler = path / ".filler"
        self._limits: dict[int, tuple[int, int]] = {}
        """pid -> its RLIMIT_FSIZE before ``fill``."""

    def fill(self, agent: AgentConnection, pad: Iterable[Path] = ()) -> None:
        """No room left. ``pad``: files whose last block is topped up first (the agent's log),
        so that their next line needs a block too."""
        if self.how == "rlimit":
            pid = agent.process.pid
            self._limits[pid] = resource.prlimit(pid, resource.RLIMIT_FSIZE)
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, self._limits[pid][1]))
            return
        block = os.statvfs(self.path).f_bsize
        for path in pad:
            with contextlib.suppress(FileNotFoundError), path.open("ab") as file:
                file.write(b"\n" * (-file.tell() % block))
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            chunk = b"\0" * (64 * 1024)
            while True:
                os.write(fd, chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)
        assert os.statvfs(self.path).f_bavail == 0

    def free(self, agent: AgentConnection) -> None:
        if self.how == "rlimit":
            pid = agent.process.pid
            resource.prlimit(pid, resource.RLIMIT_FSIZE, self._limits.pop(pid))
            return
        self._filler.unlink()

    def read_only(self) -> None:
        assert self.how == "tmpfs"
        why = _run("mount", "-o", "remount,ro", str(self.path))
        assert why is None, f"cannot remount {self.path} read-only: {why}"


@contextlib.contextmanager
def small_disk(path: Path, size: str = "1m") -> Iterator[Disk]:
    path.mkdir()
    why: str | None = "IAC_ADV_DISK_FAULTS=rlimit"
    if os.environ.get("IAC_ADV_DISK_FAULTS") != "rlimit":
        why = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    disk = Disk(path, "tmpfs" if why is None else "rlimit", why)
    try:
        yield disk
    finally:
        if disk.how == "tmpfs":
            kill_quietly(survivors(path))
            if _run("umount", str(path)) is not None:
                _run("umount", "-l", str(path))  # detach it whatever holds it


def _ignore_sigxfsz() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _copier(read_fd: int, path: Path) -> threading.Thread:
    """A thread that copies what comes through ``read_fd`` to ``path`` until its end."""
    out = path.open("wb")

    def copy() -> None:
        with open(read_fd, "rb", buffering=0) as source, out:
            while chunk := source.read(1 << 16):
                out.write(chunk)
                out.flush()

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


@contextlib.asynccontextmanager
async def agent_on(env: dict[str, str], stderr_path: Path) -> AsyncIterator[AgentConnection]:
    """``iaccode acp`` (like ``spawn_agent``), its stderr copied through a pipe by a thread: a
    file would be cut short by RLIMIT_FSIZE along with the rest. Every message is schema-checked
    as it arrives, and stdout must be JSON-RPC lines only."""
    read_fd, write_fd = os.pipe()
    copier = _copier(read_fd, stderr_path)
    try:
        process = await trio.lowlevel.open_process(
            AGENT_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=write_fd,
            env=env,
            preexec_fn=_ignore_sigxfsz,
        )
    finally:
        os.close(write_fd)
    agent = AgentConnection(process, WireChecker(aliases=METHOD_ALIASES), stderr_path)
    try:
        yield agent
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with contextlib.suppress(trio.ClosedResourceError, OSError):
                        await stream.aclose()
            await trio.to_thread.run_sync(copier.join, 3.0)
    strict_stdout(agent.raw_lines)


def environment(
    tmp_path: Path, name: str, home: Path, exchanges: list[dict[str, Any]]
) -> dict[str, str]:
    """A scripted agent whose data dir is ``home``; its script and the guard's log live
    elsewhere (the data dir may be full or read-only)."""
    env = scripted_env(tmp_path / f"{name}-aux", exchanges)
    env["IAC_CODE_HOME"] = str(home)
    return env


# -- what the user saw, what the disk holds ----------------------------------------------------


def warnings(messages: Iterable[dict[str, Any]]) -> list[str]:
    """The warnings among ``messages``: agent_message_chunks marked "⚠" (the mark the agent's
    error messages carry). Each must also say it is an error in ``_meta.iaccode.error``, for
    an editor that shows errors apart."""
    found = []
    for message in messages:
        update = (message.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") != "agent_message_chunk":
            continue
        text = update["content"].get("text") or ""
        if "⚠" in text:
            found.append(text.strip())
            error = ((update.get("_meta") or {}).get("iaccode") or {}).get("error")
            assert error and error in text, f"a warning without _meta.iaccode.error: {update}"
    return found


def says_full(text: str) -> bool:
    return any(reason in text for reason in FULL)


async def late_warnings(agent: AgentConnection) -> list[str]:
    """Store warnings that came after the last answer (read up to a session/list answer)."""
    await agent.call("session/list", {})
    late = warnings(agent._unread)
    agent._unread.clear()
    return late


def user_texts(records: list[dict[str, Any]]) -> list[str]:
    return [
        b.get("text", "")
        for r in records
        if r.get("type") == "message" and r["message"].get("role") == "user"
        for b in r["message"].get("content") or []
        if isinstance(b, dict) and b.get("type") == "text"
    ]


def history_check(home: Path, session_id: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The session's records, read as a load reads them, and what the API would refuse in the
    request they rebuild into."""
    _, records = SessionStore(home / "sessions").read(session_id)
    transcript = Transcript.from_records(records)
    transcript.repair()
    return records, history_problems(api_messages(transcript.messages))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def temp_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*.tmp"))


def bypass(agent: AgentConnection, session_id: str) -> Any:
    return agent.call("session/set_mode", {"sessionId": session_id, "modeId": "bypass"})


# -- 1. the data dir fills up mid-session ------------------------------------------------------


async def test_data_dir_fills_up_mid_session(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    big_text = [f"big answer {i} " + "t" * 10_000 for i in range(10)]  # ~100 KB
    script = [
        reply("before one"),
        reply(tool_uses=[ToolUse("toolu_b1", "bash", {"command": "echo saved-output"})]),
        reply("before two done"),
        # The disk is full from here.
        reply(
            big_text,
            tool_uses=[
                ToolUse("toolu_w1", "write_file", {"path": "big.txt", "content": "w" * 100_000})
            ],
        ),
        reply("full one done " + "f" * 50_000),
        reply("still full"),
        # Room again.
        reply("after the disk had room"),
    ]
    with small_disk(tmp_path / "data") as disk:
        home = disk.path / "home"
        log_file = home / "logs" / "iaccode.log"
        async with agent_on(
            environment(tmp_path, "a", home, script), tmp_path / "a.stderr"
        ) as agent:
            await agent.initialize()
            session = await agent.new_session(workspace)
            await bypass(agent, session)
            for text in ("before-1", "before-2"):
                response, updates, _ = await agent.run_prompt(session, text, allow)
                assert response["result"]["stopReason"] == "end_turn", response
                assert warnings(updates) == []
            saved_before = (home / "sessions" / session / "history.jsonl").read_bytes()

            disk.fill(agent, pad=[log_file])
            told: list[str] = []
            for text in ("full-1", "full-2"):
                response, updates, _ = await agent.run_prompt(session, text, allow, timeout=30)
                assert response.get("result", {}).get("stopReason") == "end_turn", response
                told += warnings(updates)
                assert await late_warnings(agent) == [], "a warning came after the answer"
            # Told, in the turn, why and what it means; once, not once per record or turn.
            history_told = [w for w in told if "history" in w]
            assert len(history_told) == 1 and says_full(history_told[0]), told
            assert "saved as soon as writing works again" in history_told[0]
            assert len(told) <= 2, told  # the history, and at most the settings once
            listed = await agent.call("session/list", {})
            assert [s["sessionId"] for s in listed["sessions"]] == [session]
            # The history written before is intact (a failed append leaves nothing behind).
            on_disk = (home / "sessions" / session / "history.jsonl").read_bytes()
            assert on_disk.startswith(saved_before) and on_disk.endswith(b"\n")
            _, problems = history_check(home, session)
            assert problems == [], problems

            disk.free(agent)
            response, updates, _ = await agent.run_prompt(session, "after-free", allow)
            assert response["result"]["stopReason"] == "end_turn", response
            assert warnings(updates) == [], "nothing more to warn of once there is room"
            await agent.close_stdin()
            assert await agent.wait_exit(10) == 0
        stderr = (tmp_path / "a.stderr").read_text()
        assert "Traceback" not in stderr and "Logging error" not in stderr, stderr[-3000:]
        assert stderr.count("cannot write the log file") == 1, stderr[-3000:]
        assert "session history saved again" in log_file.read_text(), "the log file recovered"

        # Everything is there: what waited in memory was written once there was room.
        records, problems = history_check(home, session)
        assert problems == [], problems
        assert user_texts(records) == ["before-1", "before-2", "full-1", "full-2", "after-free"]
        assert any(
            b.get("id") == "toolu_w1"
            for r in records
            if r.get("type") == "message"
            for b in r["message"]["content"]
            if isinstance(b, dict)
        )

        # After a restart the session loads, replays every turn, and answers.
        async with agent_on(
            environment(tmp_path, "b", home, [reply("verified")]), tmp_path / "b.stderr"
        ) as agent:
            await agent.initialize()
            answer = await agent.request(
                "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
            )
            assert "result" in answer, answer
            replayed = json.dumps(agent._unread)
            agent._unread.clear()
            for text in (
                "before-1",
                "full-1",
                "full-2",
                "after-free",
                "big answer 9",
                "full one done",
                "saved-output",
            ):
                assert text in replayed, f"{text!r} is not replayed"
            response, _, _ = await agent.run_prompt(session, "verify", allow)
            assert response["result"]["stopReason"] == "end_turn", response
        assert history_check(home, session)[1] == []
        assert guard_violations(tmp_path / "a-aux") == []
    figures.set(CATEGORY, "fault_method", disk.how)
    figures.add(CATEGORY, "faults_injected", 1)
    figures.add(CATEGORY, "prompts_on_a_full_disk", 2)
    figures.add(CATEGORY, "histories_checked", 3)
    figures.add(CATEGORY, "cases", 1)


def answered(records: list[dict[str, Any]]) -> bool:
    """The big answer (50,000 w's) is in the records."""
    return any(
        b.get("text") == "w" * 50_000
        for r in records
        if r.get("type") == "message"
        for b in r["message"].get("content") or []
        if isinstance(b, dict)
    )


async def test_regression_what_waited_for_room_is_written_at_exit(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """Records held back by a full disk were written only by a later record: if the editor
    closed the agent once there was room again, they were lost. Now the agent tries them once
    more as it exits."""
    with small_disk(tmp_path / "data") as disk:
        home = disk.path / "home"
        async with agent_on(
            environment(tmp_path, "a", home, [reply("first"), reply("w" * 50_000)]),
            tmp_path / "a.stderr",
        ) as agent:
            await agent.initialize()
            session = await agent.new_session(workspace)
            response, _, _ = await agent.run_prompt(session, "before")
            assert response["result"]["stopReason"] == "end_turn", response
            disk.fill(agent, pad=[home / "logs" / "iaccode.log"])
            response, updates, _ = await agent.run_prompt(session, "while-full")
            assert response["result"]["stopReason"] == "end_turn", response
            assert any(says_full(w) for w in warnings(updates)), updates
            assert not answered(history_check(home, session)[0]), "the disk was not full"
            disk.free(agent)
            await agent.close_stdin()
            assert await agent.wait_exit(10) == 0
        records, problems = history_check(home, session)
        assert user_texts(records) == ["before", "while-full"] and answered(records)
        assert problems == [], problems
    figures.add(CATEGORY, "faults_injected", 1)
    figures.add(CATEGORY, "cases", 1)


# -- 2. full at session/new --------------------------------------------------------------------


async def test_disk_full_at_session_new(tmp_path: Path, workspace: Path, figures: Figures) -> None:
    with small_disk(tmp_path / "data") as disk:
        home = disk.path / "home"
        async with agent_on(
            environment(tmp_path, "a", home, [reply("in the second")]), tmp_path / "a.stderr"
        ) as agent:
            await agent.initialize()
            first = await agent.new_session(workspace)
            disk.fill(agent)
            params = {"cwd": str(workspace), "mcpServers": []}
            for method, extra in (("session/new", {}), ("session/fork", {"sessionId": first})):
                answer = await agent.request(method, {**params, **extra})
                assert "error" in answer, (method, answer)
                message = answer["error"]["message"]
                assert "Session store error" in message and says_full(message), (method, answer)
            listed = await agent.call("session/list", {})
            assert [s["sessionId"] for s in listed["sessions"]] == [first]
            leftovers = [p.name for p in (home / "sessions").iterdir() if p.name.startswith(".")]
            assert leftovers == [], f"half-created sessions left behind: {leftovers}"

            disk.free(agent)
            second = await agent.new_session(workspace)
            response, _, _ = await agent.run_prompt(second, "works", allow)
            assert response["result"]["stopReason"] == "end_turn", response
            listed = await agent.call("session/list", {})
            assert {s["sessionId"] for s in listed["sessions"]} == {first, second}
        metas, _ = SessionStore(home / "sessions").list(cwd=None, cursor=None)
        assert {m.session_id for m in metas} == {first, second}
        assert "Traceback" not in (tmp_path / "a.stderr").read_text()
    figures.add(CATEGORY, "faults_injected", 2)
    figures.add(CATEGORY, "cases", 1)


# -- 3. a read-only data dir -------------------------------------------------------------------


@pytest.fixture
def mounted_disk(tmp_path: Path) -> Iterator[Disk]:
    with small_disk(tmp_path / "data") as disk:
        if disk.how != "tmpfs":
            pytest.skip(
                f"a read-only data dir needs a read-only mount (chmod does not stop "
                f"root) and mounting is not allowed here: {disk.why_not_tmpfs}"
            )
        yield disk


async def test_read_only_data_dir(
    tmp_path: Path, workspace: Path, mounted_disk: Disk, figures: Figures
) -> None:
    """Also the regression test of a bug it found: a session in a read-only data dir could not
    be loaded at all ("cannot lock session"); it now loads read-only and its first prompt says
    that nothing will be saved, and why."""
    disk = mounted_disk
    home = disk.path / "home"
    script = [
        reply(tool_uses=[ToolUse("toolu_r1", "bash", {"command": "echo ran-once"})]),
        reply("saved answer"),
    ]
    async with agent_on(environment(tmp_path, "a", home, script), tmp_path / "a.stderr") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        await bypass(agent, session)
        response, _, _ = await agent.run_prompt(session, "saved-1", allow)
        assert response["result"]["stopReason"] == "end_turn", response
        await agent.close_stdin()
        assert await agent.wait_exit(10) == 0
    before = {p: digest(p) for p in disk.path.rglob("*") if p.is_file()}
    disk.read_only()

    script = [reply("read-only one"), reply("read-only two")]
    async with agent_on(environment(tmp_path, "b", home, script), tmp_path / "b.stderr") as agent:
        await agent.initialize()
        answer = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert "error" in answer and READ_ONLY in answer["error"]["message"], answer
        listed = await agent.call("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [session]
        answer = await agent.request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        assert "result" in answer, answer
        replayed = json.dumps(agent._unread)
        agent._unread.clear()
        assert "saved-1" in replayed and "ran-once" in replayed, replayed[:2000]

        response, updates, _ = await agent.run_prompt(session, "ro-1", allow)
        assert response["result"]["stopReason"] == "end_turn", response
        told = warnings(updates)
        assert len(told) == 1 and "read-only" in told[0] and READ_ONLY in told[0], told
        response, updates, _ = await agent.run_prompt(session, "ro-2", allow)
        assert response["result"]["stopReason"] == "end_turn", response
        assert warnings(updates) == [], "told once"
        assert await late_warnings(agent) == []
        answer = await agent.request(
            "session/fork", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        assert "error" in answer and READ_ONLY in answer["error"]["message"], answer
        await agent.close_stdin()
        assert await agent.wait_exit(10) == 0
    stderr = (tmp_path / "b.stderr").read_text()
    assert "cannot write the log file" in stderr and "Traceback" not in stderr, stderr
    assert {p: digest(p) for p in disk.path.rglob("*") if p.is_file()} == before
    assert history_check(home, session)[1] == []
    figures.add(CATEGORY, "faults_injected", 1)
    figures.add(CATEGORY, "histories_checked", 1)
    figures.add(CATEGORY, "cases", 1)


# -- 4. the project folder's disk is full ------------------------------------------------------


async def test_project_folder_full(tmp_path: Path, figures: Figures) -> None:
    with small_disk(tmp_path / "data") as disk:
        project = disk.path / "proj"
        project.mkdir()
        (project / "keep.txt").write_text("original line\n" * 200)
        (project / "edit.txt").write_text("alpha\n" * 100)
        kept = {name: digest(project / name) for name in ("keep.txt", "edit.txt")}
        home = tmp_path / "home"
        calls = [
            ToolUse(
                "toolu_w", "write_file", {"path": "keep.txt", "content": "new line\n" * 20_000}
            ),
            ToolUse(
                "toolu_e",
                "edit_file",
                {
                    "path": "edit.txt",
                    "old_string": "alpha",
                    "new_string": "beta " * 200,
                    "replace_all": True,
                },
            ),
            ToolUse("toolu_n", "write_file", {"path": "fresh.txt", "content": "x" * 9000}),
        ]
        script = [
            reply(tool_uses=calls),
            reply("could not write"),
            reply(
                tool_uses=[
                    ToolUse(
                        "toolu_w2", "write_file", {"path": "keep.txt", "content": "rewritten\n"}
                    )
                ]
            ),
            reply("rewritten"),
        ]
        async with agent_on(
            environment(tmp_path, "a", home, script), tmp_path / "a.stderr"
        ) as agent:
            await agent.initialize()
            session = await agent.new_session(project)
            await bypass(agent, session)
            disk.fill(agent)
            response, updates, _ = await agent.run_prompt(session, "write", allow)
            assert response["result"]["stopReason"] == "end_turn", response
            for call in calls:
                assert final_status(updates, call.id) == "failed", shown_text(updates, call.id)
                shown = shown_text(updates, call.id)
                assert says_full(shown) and call.input["path"] in shown, shown
            assert {name: digest(project / name) for name in kept} == kept
            assert not (project / "fresh.txt").exists()
            assert temp_files(project) == [], "temporary files left behind"

            disk.free(agent)
            response, updates, _ = await agent.run_prompt(session, "again", allow)
            assert response["result"]["stopReason"] == "end_turn", response
            assert final_status(updates, "toolu_w2") == "completed"
            assert (project / "keep.txt").read_text() == "rewritten\n"
            assert temp_files(project) == []
        assert history_check(home, session)[1] == []
        assert "Traceback" not in (tmp_path / "a.stderr").read_text()
    figures.add(CATEGORY, "faults_injected", len(calls))
    figures.add(CATEGORY, "histories_checked", 1)
    figures.add(CATEGORY, "cases", 1)


# -- regressions (cheap: no mount, no agent or one) --------------------------------------------


class FillingFile:
    """A SessionFile on a disk with ``room`` bytes left: a write that does not fit fails whole
    (as the store's does: cut back), a smaller one fits."""

    def __init__(self, file: Any, room: int) -> None:
        self.file = file
        self.room = room

    def append(self, record: dict[str, Any]) -> None:
        self.append_encoded(encode_record(record))

    def append_encoded(self, data: bytes) -> None:
        if len(data) > self.room:
            raise StoreError("cannot save to session: No space left on device")
        self.room -= len(data)
        self.file.append_many([json.loads(line) for line in data.splitlines()])

    def save_image(self, data: bytes, extension: str) -> str:
        if len(data) > self.room:
            raise StoreError("cannot save to session: No space left on device")
        self.room -= len(data)
        return str(self.file.save_image(data, extension))


def test_regression_a_failed_save_leaves_no_gap_in_the_history(
    tmp_path: Path, figures: Figures
) -> None:
    """A record that did not fit was dropped while smaller ones after it were written: a
    ``tool_result`` saved without the ``tool_use`` it answers, a history the API refuses after
    a load. Now what does not fit waits in memory, in order, with everything after it, and is
    written once there is room (``Transcript``)."""
    from iaccode.store.meta import SessionMeta, new_session_id, utc_now

    store = SessionStore(tmp_path / "sessions")
    stamp = utc_now()
    meta = SessionMeta(
        session_id=new_session_id(),
        cwd=str(tmp_path),
        created_at=stamp,
        updated_at=stamp,
        model="m",
        mode="default",
    )
    told: list[str] = []
    with store.create(meta) as file:
        disk = FillingFile(file, room=10_000)
        transcript = Transcript(disk, told.append)  # type: ignore[arg-type]
        transcript.append({"role": "user", "content": [{"type": "text", "text": "go"}]})
        transcript.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "write_file",
                        "input": {"path": "a", "content": "x" * 20_000},
                    }
                ],
            }
        )  # does not fit
        transcript.tool_call({"toolCallId": "toolu_1"}, {"status": "completed"})
        transcript.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
            }
        )  # would fit
        transcript.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
        assert len(told) == 1 and "No space left on device" in told[0], told
        _, problems = history_check(tmp_path, meta.session_id)
        assert problems == [], problems
        assert transcript.unsaved_bytes > 0
        disk.room = 1 << 30
        transcript.append({"role": "user", "content": [{"type": "text", "text": "later"}]})
        assert transcript.unsaved_bytes == 0
    records, problems = history_check(tmp_path, meta.session_id)
    assert problems == []
    assert [r["message"] for r in records if r["type"] == "message"] == transcript.messages
    figures.add(CATEGORY, "histories_checked", 2)
    figures.add(CATEGORY, "cases", 1)


async def test_regression_store_warnings_come_before_the_answer_and_once(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """Each record that could not be saved sent its own warning, from a task started on the
    side: half of them came after the prompt's answer (a warning that belongs to no turn), and
    a full disk warned three times a turn. Now they are sent before the answer, once per run
    of failures. (RLIMIT_FSIZE 0 on the agent: no mount needed.)"""
    prompts = 6
    home = tmp_path / "home"
    script = [reply(f"answer {i}") for i in range(prompts + 1)]
    async with agent_on(environment(tmp_path, "a", home, script), tmp_path / "a.stderr") as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        limits = resource.prlimit(agent.process.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(agent.process.pid, resource.RLIMIT_FSIZE, (0, limits[1]))
        told: list[str] = []
        for i in range(prompts):
            response, updates, _ = await agent.run_prompt(session, f"p{i}", allow)
            assert response["result"]["stopReason"] == "end_turn", response
            told += warnings(updates)
            assert await late_warnings(agent) == [], f"prompt {i}: a warning after the answer"
        assert len(told) == 2 and all("File too large" in w for w in told), told
        resource.prlimit(agent.process.pid, resource.RLIMIT_FSIZE, limits)
        response, updates, _ = await agent.run_prompt(session, "room", allow)
        assert warnings(updates) == []
    records, problems = history_check(home, session)
    assert problems == []
    assert user_texts(records) == [f"p{i}" for i in range(prompts)] + ["room"]
    figures.add(CATEGORY, "faults_injected", 1)
    figures.add(CATEGORY, "prompts_on_a_full_disk", prompts)
    figures.add(CATEGORY, "histories_checked", 1)
    figures.add(CATEGORY, "cases", 1)


async def test_regression_store_error_answers_say_why(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A store failure was answered "Session store error" with the reason only in
    ``data.detail``, which editors do not show: the user could not tell a full disk from a
    bug. The message now carries the reason."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "sessions").write_text("not a folder")
    async with agent_on(environment(tmp_path, "a", home, []), tmp_path / "a.stderr") as agent:
        await agent.initialize()
        answer = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert "error" in answer, answer
        message = answer["error"]["message"]
        assert message.startswith("Session store error: ") and "File exists" in message, answer
    figures.add(CATEGORY, "cases", 1)


async def test_regression_a_log_file_that_cannot_be_written_is_reported_once(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A log file on a full disk printed a "--- Logging error ---" traceback on stderr for
    every log line. Now it is reported once; the lines still go to stderr. (The log file is
    /dev/full here: every write fails with ENOSPC.)"""
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "logs" / "iaccode.log").symlink_to("/dev/full")
    async with agent_on(
        environment(tmp_path, "a", home, [reply("a"), reply("b")]), tmp_path / "a.stderr"
    ) as agent:
        await agent.initialize()
        for _ in range(2):
            session = await agent.new_session(workspace)
            response, _, _ = await agent.run_prompt(session, "hello", allow)
            assert response["result"]["stopReason"] == "end_turn", response
        await agent.close_stdin()
        assert await agent.wait_exit(10) == 0
    stderr = (tmp_path / "a.stderr").read_text()
    assert stderr.count("cannot write the log file") == 1, stderr
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr
    assert stderr.count("opened in") == 2, "the log lines still reach stderr"
    figures.add(CATEGORY, "faults_injected", 1)
    figures.add(CATEGORY, "cases", 1)


async def test_regression_a_session_that_cannot_be_written_loads_read_only(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A session the store could read but not open for writing (a read-only data dir; here
    its lock cannot be opened) could not be loaded at all. Now it loads read-only, replays,
    answers, and its first prompt says that nothing will be saved, and why. (Without a mount;
    ``test_read_only_data_dir`` does it on a read-only tmpfs.)"""
    home = tmp_path / "home"
    async with agent_on(
        environment(tmp_path, "a", home, [reply("first answer")]), tmp_path / "a.stderr"
    ) as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        await agent.run_prompt(session, "first", allow)
        await agent.close_stdin()
        assert await agent.wait_exit(10) == 0
    lock = home / "sessions" / session / "lock"
    lock.unlink()
    lock.mkdir()  # O_RDWR on it fails (EISDIR), as on a read-only file system
    history = (home / "sessions" / session / "history.jsonl").read_bytes()
    async with agent_on(
        environment(tmp_path, "b", home, [reply("second answer")]), tmp_path / "b.stderr"
    ) as agent:
        await agent.initialize()
        answer = await agent.request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        assert "result" in answer, answer
        assert "first answer" in json.dumps(agent._unread)
        agent._unread.clear()
        response, updates, _ = await agent.run_prompt(session, "second", allow)
        assert response["result"]["stopReason"] == "end_turn", response
        told = warnings(updates)
        assert len(told) == 1 and "read-only" in told[0] and "Is a directory" in told[0], told
    assert (home / "sessions" / session / "history.jsonl").read_bytes() == history
    figures.add(CATEGORY, "cases", 1)
