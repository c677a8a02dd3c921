"""Files and commands under a hostile model: it asks the real agent for tools through the fake
Messages API (real SDK), and the test plays the editor.

Path escapes: every file tool, every way out of the project (``..``, absolute paths, symlinks
and dangling symlinks that resolve outside, ``~``, the sibling ``/x/proj-evil`` next to
``/x/proj``): each call asks permission (or is refused), and nothing outside is read or
written. Special files: bounded time and memory, a clear error. Commands: timeouts and output
caps hold, nothing the command started outlives the call, and no secret reaches its environment.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.processes import pid_alive
from acp_conformance.script import ToolUse, reply

from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    allow,
    asked_ids,
    final_status,
    http_agent,
    kill_quietly,
    reject,
    request_tool_results,
    rss_kib,
    shown_text,
    start,
    survivors,
    tree_snapshot,
)

CATEGORY = "files_and_commands"
SECRET = "TOP-SECRET-OUTSIDE"


def uses(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return reply(tool_uses=[ToolUse(call_id, name, args) for call_id, name, args in calls])


@pytest.fixture
def model_server():  # type: ignore[no-untyped-def]
    with FakeModelServer() as server:
        yield server


def layout(workspace: Path) -> Path:
    """``x/proj`` (the project) and, around it, what must stay out of reach."""
    x = workspace.parent
    (x / "outside-secret.txt").write_text(f"{SECRET} 1\n")
    (x / "proj-evil").mkdir()
    (x / "proj-evil" / "evil-secret.txt").write_text(f"{SECRET} 2\n")
    (workspace / "inside.txt").write_text("inside TOP text\n")
    (workspace / "sub").mkdir()
    (workspace / "link_file").symlink_to(x / "outside-secret.txt")
    (workspace / "link_dir").symlink_to(x)
    (workspace / "dangling").symlink_to(x / "created-through-dangling.txt")
    (workspace / "dangling_dir").symlink_to(x / "created-dir")
    return x


def escapes(workspace: Path) -> tuple[list[str], list[str]]:
    x = workspace.parent
    files = [
        "../outside-secret.txt",
        str(x / "outside-secret.txt"),
        "link_file",
        "link_dir/outside-secret.txt",
        "sub/../../outside-secret.txt",
        "../proj-evil/evil-secret.txt",
        str(x / "proj-evil" / "evil-secret.txt"),
        "dangling",
        "dangling_dir/new.txt",
        "~/iaccode-adversarial-never.txt",
        "./../outside-secret.txt",
        "sub/../link_file",
    ]
    dirs = [
        "..",
        str(x),
        "link_dir",
        "../proj-evil",
        str(x / "proj-evil"),
        "/",
        "sub/../..",
        "dangling_dir",
    ]
    return files, dirs


def escape_calls(
    workspace: Path, tag: str, with_reads: bool = True
) -> list[tuple[str, str, dict[str, Any]]]:
    files, dirs = escapes(workspace)
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for n, path in enumerate(files):
        if with_reads:
            calls.append((f"toolu_{tag}_read{n}", "read_file", {"path": path}))
            calls.append(
                (
                    f"toolu_{tag}_grepf{n}",
                    "grep",
                    {"pattern": "SECRET", "path": path, "output_mode": "content"},
                )
            )
        calls.append((f"toolu_{tag}_write{n}", "write_file", {"path": path, "content": "PWNED"}))
        calls.append(
            (
                f"toolu_{tag}_edit{n}",
                "edit_file",
                {"path": path, "old_string": "TOP", "new_string": "PWNED"},
            )
        )
    if with_reads:
        for n, path in enumerate(dirs):
            calls.append((f"toolu_{tag}_list{n}", "list_files", {"path": path}))
            calls.append((f"toolu_{tag}_glob{n}", "glob", {"pattern": "**/*secret*", "path": path}))
            calls.append(
                (
                    f"toolu_{tag}_grepd{n}",
                    "grep",
                    {"pattern": "SECRET", "path": path, "output_mode": "content"},
                )
            )
    return calls


async def test_path_escapes_ask_and_nothing_outside_is_touched(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    x = layout(workspace)
    before = tree_snapshot(x, skip=workspace)
    home = Path.home()
    default_calls = escape_calls(workspace, "d")
    edit_calls = escape_calls(workspace, "a", with_reads=False)
    # Patterns that stay inside the project by construction: no question, no outside names.
    sub_calls = [
        (f"toolu_c{n}", name, args)
        for n, (_, name, args) in enumerate(
            c for c in default_calls if c[1] in ("read_file", "list_files", "glob", "grep")
        )
    ][::5]
    pattern_calls = [
        ("toolu_p_glob1", "glob", {"pattern": "../*"}),
        ("toolu_p_glob2", "glob", {"pattern": str(x) + "/*"}),
        ("toolu_p_glob3", "glob", {"pattern": "**/*secret*"}),
        ("toolu_p_grep1", "grep", {"pattern": "SECRET", "glob": "../*", "output_mode": "content"}),
        ("toolu_p_grep2", "grep", {"pattern": "SECRET", "output_mode": "content"}),
        ("toolu_p_list", "list_files", {"path": "."}),
    ]
    model_server.enqueue(
        uses(*default_calls),
        reply("done"),
        uses(*edit_calls),
        reply("done"),
        uses(*pattern_calls),
        reply("done"),
        uses(("toolu_inside", "write_file", {"path": "inside-new.txt", "content": "fine"})),
        reply("ok"),
        # A sub-agent (read-only tools) reaching out asks too.
        uses(("toolu_sub", "agent", {"prompt": "look around"})),
        uses(*sub_calls),
        reply("the child is done"),
        reply("ok"),
    )
    async with http_agent(tmp_path, model_server.base_url) as agent:
        session = await start(agent, workspace)
        _, updates, requests = await agent.run_prompt(session, "escape", reject, timeout=120)
        assert asked_ids(requests) == {c[0] for c in default_calls}
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "accept_edits"})
        _, updates2, requests2 = await agent.run_prompt(
            session, "escape again", reject, timeout=120
        )
        assert asked_ids(requests2) == {c[0] for c in edit_calls}, (
            "accept_edits ran an edit outside the project without asking"
        )
        _, updates3, requests3 = await agent.run_prompt(session, "patterns", reject)
        assert requests3 == []
        _, _, requests4 = await agent.run_prompt(session, "inside", reject)
        assert requests4 == [] and (workspace / "inside-new.txt").read_text() == "fine"
        _, updates5, requests5 = await agent.run_prompt(
            session,
            "delegate",
            lambda m: (
                allow(m) if m["params"]["toolCall"]["toolCallId"] == "toolu_sub" else reject(m)
            ),
        )
        assert asked_ids(requests5) == {"toolu_sub"} | {c[0] for c in sub_calls}, (
            "a sub-agent read outside the project without asking"
        )

    for call_id, *_ in default_calls + edit_calls:
        result = request_tool_results(model_server.requests[1 if "_d_" in call_id else 3].body)
        assert result[call_id]["content"] == "Permission denied.", (call_id, result[call_id])
    every = json.dumps([m for m in agent.received], ensure_ascii=False)
    assert SECRET not in every
    assert SECRET not in json.dumps([r.body for r in model_server.requests])
    for call_id, *_ in pattern_calls:
        text = shown_text(updates3, call_id)
        assert "outside-secret" not in text and "evil-secret" not in text, text
        assert final_status(updates3, call_id) in ("completed", "failed")
    assert tree_snapshot(x, skip=workspace) == before, "something outside the project changed"
    assert not (home / "iaccode-adversarial-never.txt").exists()
    assert SECRET not in shown_text(updates5, "toolu_sub")
    figures.add(
        CATEGORY, "path_escape_calls", len(default_calls) + len(edit_calls) + len(sub_calls)
    )
    figures.add(CATEGORY, "cases", len(default_calls) + len(edit_calls) + len(pattern_calls))


def make_special_files(folder: Path) -> None:
    os.mkfifo(folder / "fifo")
    with open(folder / "sparse.bin", "wb") as sparse:
        sparse.truncate(2 << 30)  # 2 GiB, no blocks
    (folder / "binary.dat").write_bytes(b"\x7fELF\x00\x01\x02" * 1000)
    (folder / "latin1.txt").write_bytes("caf\u00e9 cr\u00e8me\n".encode("latin-1"))
    (folder / "adir").mkdir()


async def test_special_files_are_refused_quickly(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    make_special_files(workspace)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(workspace / "sock"))
    listener.listen()
    targets = {
        "fifo": "named pipe",
        "sparse.bin": "byte limit",
        "binary.dat": "binary",
        "latin1.txt": "not UTF-8",
        "adir": "directory",
        "sock": "socket",
        "/dev/zero": "device",
        "/dev/stdin": "",
        "/dev/urandom": "device",
        "/dev/null": "device",
        "/proc/self/mem": "",
    }
    regular = {"sparse.bin", "binary.dat", "latin1.txt"}  # a write would simply replace them
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for n, path in enumerate(targets):
        calls += [
            (f"toolu_read{n}", "read_file", {"path": path}),
            (f"toolu_edit{n}", "edit_file", {"path": path, "old_string": "a", "new_string": "b"}),
            (f"toolu_grep{n}", "grep", {"pattern": "zzz", "path": path}),
        ]
        if path not in regular:
            calls.append((f"toolu_write{n}", "write_file", {"path": path, "content": "x"}))
    calls += [
        ("toolu_list", "list_files", {"path": "."}),
        ("toolu_glob", "glob", {"pattern": "**/*"}),
        ("toolu_grepall", "grep", {"pattern": "zzz", "output_mode": "count"}),
        ("toolu_catfifo", "bash", {"command": "cat fifo", "timeout": 1}),
    ]
    model_server.enqueue(uses(*calls), reply("done"))
    try:
        async with http_agent(tmp_path, model_server.base_url) as agent:
            session = await start(agent, workspace)
            rss_before = rss_kib(agent.process.pid)
            began = time.monotonic()
            _, updates, _ = await agent.run_prompt(session, "specials", allow, timeout=90)
            took = time.monotonic() - began
            grown = rss_kib(agent.process.pid) - rss_before
            # The session goes on.
            model_server.enqueue(reply("still here"))
            response, _, _ = await agent.run_prompt(session, "again", allow)
            assert response["result"]["stopReason"] == "end_turn"
    finally:
        listener.close()
    results = request_tool_results(model_server.requests[1].body)
    for n, (path, phrase) in enumerate(targets.items()):
        for kind in ("read", "edit") if path in regular else ("read", "edit", "write"):
            call_id = f"toolu_{kind}{n}"
            assert results[call_id]["is_error"] is True, (call_id, path, results[call_id])
            if phrase and kind != "write":
                assert phrase in results[call_id]["content"], (call_id, path, results[call_id])
    assert (workspace / "sparse.bin").stat().st_size == 2 << 30
    assert results["toolu_catfifo"]["is_error"] is True
    assert "timed out" in results["toolu_catfifo"]["content"]
    # A stall (a call blocked on the FIFO or the socket until the turn's end), not speed:
    # 30 s alone on a quiet 2-core machine, 48 s in CI beside two other workers (2026-12-02).
    assert took < 75, f"special files took {took:.1f} s"
    assert grown < 200 * 1024, f"the agent grew by {grown} KiB"
    figures.add(CATEGORY, "special_file_calls", len(calls))
    figures.add(CATEGORY, "cases", len(calls))
    figures.set(CATEGORY, "special_files_seconds", round(took, 1))


COMMANDS = {
    # name: (command, timeout, what the result must say)
    "yes": ("yes", 2, "timed out"),
    "no_newline": ("head -c 3000000 /dev/zero | tr '\\0' x", 20, "characters cut"),
    "urandom": ("head -c 2000000 /dev/urandom", 20, "characters cut"),
    "cat_urandom": ("cat /dev/urandom", 1.5, "timed out"),
    "term_ignored": (
        "trap '' TERM; (trap '' TERM; sleep 60) & echo $! >> pids; sleep 60",
        1,
        "timed out",
    ),
    "nohup": ("nohup sleep 60 >/dev/null 2>&1 & echo $! >> pids; echo started", 20, "started"),
    "background": (
        "sleep 60 & echo $! >> pids; (sleep 61 &); sleep 62 & echo $! >> pids; echo bg",
        20,
        "bg",
    ),
    "stdin": ('read line; echo "got:[$line]"; cat; echo eof', 20, "got:[]"),
    "pipe_holder": (
        "(exec sleep 63) & echo $! >> pids; exec >&-; exec 2>&-; sleep 64",
        1,
        "timed out",
    ),
    "job_control": ("set -m; sleep 65 & echo $! >> pids; echo jobs", 20, "jobs"),
    "stopped": ("sleep 66 & echo $! >> pids; kill -STOP $!; echo stopped", 20, "stopped"),
    "huge_line": ("python3 -c \"print('y' * 5_000_000, end='')\"", 20, "characters cut"),
}


async def test_commands_are_bounded_and_leave_nothing_running(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    calls = [
        (f"toolu_{name}", "bash", {"command": command, "timeout": timeout})
        for name, (command, timeout, _) in COMMANDS.items()
    ]
    model_server.enqueue(uses(*calls), reply("done"))
    try:
        async with http_agent(tmp_path, model_server.base_url) as agent:
            session = await start(agent, workspace)
            rss_before = rss_kib(agent.process.pid)
            began = time.monotonic()
            _, updates, _ = await agent.run_prompt(session, "commands", allow, timeout=120)
            took = time.monotonic() - began
            grown = rss_kib(agent.process.pid) - rss_before
            left = survivors(workspace)
            pids = [int(p) for p in (workspace / "pids").read_text().split()]
            alive = [pid for pid in pids if pid_alive(pid)]
    finally:
        kill_quietly(survivors(workspace))
    assert left == [] and alive == [], f"still running after the call: {left} {alive}"
    results = request_tool_results(model_server.requests[1].body)
    for name, (_, _, phrase) in COMMANDS.items():
        content = results[f"toolu_{name}"]["content"]
        assert phrase in content, (name, content[:500])
        assert len(content) <= 31_000, (name, len(content))
    assert grown < 100 * 1024, f"the agent grew by {grown} KiB"
    # yes 2 s; cat 1.5 s; the TERM-ignoring and pipe-holding ones 1 s + 2 s of grace each.
    assert took < 30, f"the commands took {took:.1f} s"
    figures.add(CATEGORY, "command_cases", len(calls))
    figures.add(CATEGORY, "cases", len(calls))
    figures.add(CATEGORY, "processes_checked_dead", len(pids))


ESCAPEES = {
    # name: a command that starts a process outside the shell's session, its pid in "escapee"
    "setsid": "setsid sleep 67 & echo $! >> escapee; sleep 0.2; echo spawned",
    "double_fork": ("( setsid sh -c 'sleep 68 & echo $! >> escapee' & ); sleep 0.2; echo spawned"),
    "nohup_setsid": "nohup setsid sleep 69 >/dev/null 2>&1 & echo $! >> escapee; echo spawned",
    "term_ignored": (
        "setsid sh -c 'trap \"\" TERM; echo $$ >> escapee; sleep 70' & sleep 0.2; echo spawned"
    ),
}


async def test_regression_setsid_escapee_is_killed(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    """A process that starts its own session (``setsid``, a double-forking daemon) left the
    process group that gets killed, and ran on after the call. The shell and the agent are now
    child subreapers, so the whole tree is found and killed (iaccode/host/process_tree.py)."""
    calls = [(f"toolu_{name}", "bash", {"command": command}) for name, command in ESCAPEES.items()]
    model_server.enqueue(uses(*calls), reply("ok"))
    try:
        async with http_agent(tmp_path, model_server.base_url) as agent:
            session = await start(agent, workspace)
            await agent.run_prompt(session, "escape", allow, timeout=60)
            left = survivors(workspace)
            pids = [int(p) for p in (workspace / "escapee").read_text().split()]
            alive = [pid for pid in pids if pid_alive(pid)]
    finally:
        kill_quietly(survivors(workspace))
    results = request_tool_results(model_server.requests[1].body)
    for name in ESCAPEES:
        assert "spawned" in results[f"toolu_{name}"]["content"], results[f"toolu_{name}"]
    assert len(pids) == len(ESCAPEES)
    assert left == [] and alive == [], f"escapees still running after the call: {left} {alive}"
    figures.add(CATEGORY, "escapees_killed", len(pids))
    figures.add(CATEGORY, "cases", len(calls))


SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-adv-KEY-1",
    "ANTHROPIC_AUTH_TOKEN": "adv-auth-token-2",
    "GITHUB_TOKEN": "ghp_adv_token_3",
    "NPM_TOKEN": "npm_adv_token_4",
    "MY_SECRET": "adv-my-secret-5",
    "AWS_SECRET_ACCESS_KEY": "adv-aws-secret-6",
    "DB_PASSWORD": "adv-db-password-7",
    "OPENAI_API_KEY": "adv-openai-key-8",
    "lower_case_token": "adv-lower-token-9",
    "SLACK_WEBHOOK_SECRET_URL": "adv-slack-secret-10",
}


async def test_no_secret_reaches_a_command(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    command = (
        "env; echo ---; tr '\\0' '\\n' < /proc/self/environ; echo ---; "
        'bash -c \'tr "\\0" "\\n" < /proc/self/environ\''
    )
    model_server.enqueue(uses(("toolu_env", "bash", {"command": command})), reply("ok"))
    extra = {**SECRETS, "IAC_ADV_VISIBLE": "visible-value"}
    async with http_agent(tmp_path, model_server.base_url, extra=extra) as agent:
        session = await start(agent, workspace)
        _, updates, _ = await agent.run_prompt(session, "env", allow)
    output = request_tool_results(model_server.requests[1].body)["toolu_env"]["content"]
    assert "visible-value" in output
    leaked = [name for name, value in SECRETS.items() if value in output]
    assert leaked == [], f"secrets reached the command: {leaked}"
    assert not any(value in json.dumps(agent.received) for value in SECRETS.values())
    figures.add(CATEGORY, "secret_variables_checked", len(SECRETS))
    figures.add(CATEGORY, "cases", 1)
    del updates


async def test_cancel_during_a_permission_question(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures
) -> None:
    model_server.enqueue(uses(("toolu_wait", "bash", {"command": "touch ran"})), reply("after"))
    async with http_agent(tmp_path, model_server.base_url) as agent:
        session = await start(agent, workspace)
        request_id = await agent.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "ask me"}]}
        )
        question = await agent.receive()
        while question.get("method") != "session/request_permission":
            question = await agent.receive()
        await agent.notify("session/cancel", {"sessionId": session})
        response, before = await agent.response(request_id, timeout=5)
        assert response["result"]["stopReason"] == "cancelled"
        # The agent withdrew its question; a late answer is dropped without harm.
        assert any(
            m.get("method") == "$/cancel_request" and m["params"]["requestId"] == question["id"]
            for m in before
        )
        await agent.reply(question["id"], allow(question))
        await trio.sleep(0.3)
        assert not (workspace / "ran").exists()
        response, _, _ = await agent.run_prompt(session, "go on", allow)
        assert response["result"]["stopReason"] == "end_turn"
    figures.add(CATEGORY, "cases", 1)
