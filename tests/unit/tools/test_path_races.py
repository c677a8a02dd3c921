"""A path swapped between the permission check and the open: deterministic races.

Each test hooks a function that runs after the decision (the permission check, the folder
walk, the pre-open check, the write) and swaps a symlink there, the way a hostile process
racing the agent would. The outside file is never read or written: the call works on the real
path that was judged, or fails with "changed while being opened".
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from iaccode.config import Config
from iaccode.host import local_files
from iaccode.host.local_files import LocalFiles
from iaccode.protocol.convert import tool_input
from iaccode.protocol.messages import ClientCapabilities
from iaccode.session.editor import Editor
from iaccode.tool_result import ToolFailure
from iaccode.tools.base import Tool, ToolContext, ToolLimits, resolve_path
from iaccode.tools.edit_file import EditFile
from iaccode.tools.list_files import ListFiles
from iaccode.tools.read_file import ReadFile
from iaccode.tools.write_file import WriteFile
from iaccode.turn.env import SessionState, ToolEnv
from iaccode.turn.tool_runner import ToolRunner
from iaccode.turn.transcript import Transcript

SECRET = "OUTSIDE-SECRET-RACE"
CHANGED = "changed while being opened"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    (path / "sub").mkdir(parents=True)
    (path / "inside.txt").write_text("INSIDE alpha\n")
    (path / "sub" / "f.txt").write_text("INSIDE sub alpha\n")
    return path


@pytest.fixture
def outside(cwd: Path) -> Path:
    """A folder outside the project with files named like the ones inside."""
    path = cwd.parent / "outside"
    path.mkdir()
    for name in ("secret.txt", "f.txt", "inside.txt"):
        (path / name).write_text(f"{SECRET} alpha\n")
    return path


def contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def point(link: Path, target: Path) -> None:
    """Make ``link`` a symlink to ``target`` atomically (whatever was there is replaced)."""
    temp = link.with_name(f".{link.name}.swap")
    os.symlink(target, temp)
    os.replace(temp, link)


def swap_dir(folder: Path, target: Path) -> Path:
    """Move ``folder`` aside and put a symlink to ``target`` in its place; returns where it went."""
    moved = folder.with_name(folder.name + "-moved")
    os.rename(folder, moved)
    os.symlink(target, folder)
    return moved


def hook(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, swap: Callable[[], object]
) -> list[int]:
    """Run ``swap`` on the first call of ``owner.name``, before the call itself."""
    real = getattr(owner, name)
    calls: list[int] = []

    def hooked(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            swap()
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, hooked)
    return calls


def judged_ctx(cwd: Path, *raws: str) -> ToolContext:
    """A context as the tool runner builds it: each path resolved (and judged) now."""

    async def no_report(_: Any) -> None:
        pass

    return ToolContext(
        cwd=cwd,
        limits=ToolLimits(),
        files=LocalFiles(10_000),
        tool_call_id="t1",
        report=no_report,
        resolved={raw: resolve_path(cwd, raw) for raw in raws},
    )


async def run(tool: Tool, ctx: ToolContext, **args: Any) -> str:
    with trio.fail_after(10):
        return (await tool.run(tool_input(args, tool.input_type), ctx)).text


async def fails(tool: Tool, ctx: ToolContext, **args: Any) -> str:
    with trio.fail_after(10), pytest.raises(ToolFailure) as info:
        await tool.run(tool_input(args, tool.input_type), ctx)
    return str(info.value)


# -- through the tool runner: the decision, then the swap, then the tool --------------------


def runner(
    cwd: Path, mode: str, answers: list[str], swap: Callable[[], None]
) -> tuple[ToolRunner, list[str]]:
    """A tool runner whose editor answers ``answers`` and runs ``swap`` when a call is told
    to be in progress: after the permission check (and the answer), before the tool runs."""
    asked: list[str] = []

    async def send_update(update: Any) -> None:
        if getattr(update, "status", None) == "in_progress":
            swap()  # the check is done: a racing process flips the link now

    async def request(method: str, params: Any) -> Any:
        asked.append(params["toolCall"]["toolCallId"])
        return {"outcome": {"outcome": "selected", "optionId": answers.pop(0)}}

    tools: dict[str, Tool] = {t.name: t for t in (ReadFile(), WriteFile(), EditFile(), ListFiles())}
    editor = Editor(request, send_update, "s", ClientCapabilities(), LocalFiles(10_000))
    env = ToolEnv(
        config=Config(home=cwd.parent / "agent-home"),
        tools=tools,
        editor=editor,
        session=SessionState(cwd=cwd, mode=lambda: mode, remembered={}, cancel_turn=lambda: None),
    )
    return ToolRunner(env, {}, Transcript()), asked


@pytest.mark.parametrize(
    ("mode", "name", "args", "done"),
    [
        ("default", "read_file", {"path": "link"}, "INSIDE alpha"),
        (
            "accept_edits",
            "write_file",
            {"path": "link", "content": "new text\n"},
            "Wrote inside.txt",
        ),
        (
            "accept_edits",
            "edit_file",
            {"path": "link", "old_string": "alpha", "new_string": "beta"},
            "Edited inside.txt",
        ),
        ("default", "list_files", {"path": "linkdir"}, "f.txt"),
    ],
)
async def test_regression_symlink_swapped_between_check_and_use(
    cwd: Path, outside: Path, mode: str, name: str, args: dict[str, Any], done: str
) -> None:
    """The link named an inside file when it was judged (so nothing asked), and an outside
    file when the tool ran: the tool used to resolve the path again and follow it out."""
    (outside / "f.txt").write_text(f"{SECRET}\n")
    point(cwd / "link", cwd / "inside.txt")
    point(cwd / "linkdir", cwd / "sub")
    before = contents(outside)

    def swap() -> None:
        point(cwd / "link", outside / "secret.txt")
        point(cwd / "linkdir", outside)

    run_all, asked = runner(cwd, mode, [], swap)
    with trio.fail_after(10):
        [result] = await run_all.run_all([{"id": "t1", "name": name, "input": args}])
    assert asked == [], "an inside path was judged: nothing to ask"
    assert result["is_error"] is False, result
    assert done in result["content"] and SECRET not in result["content"], result
    assert "secret.txt" not in result["content"], result  # an outside listing names it
    assert contents(outside) == before
    assert os.readlink(cwd / "link") == str(outside / "secret.txt")  # the swap did happen
    if name in ("write_file", "edit_file"):
        assert (cwd / "inside.txt").read_text() in ("new text\n", "INSIDE beta\n")


async def test_an_approved_outside_path_is_the_one_opened(cwd: Path, outside: Path) -> None:
    """The user allowed reading ``approved.txt`` (shown as its real path); the link is then
    flipped to the secret: the file read is still the approved one."""
    (outside / "approved.txt").write_text("approved text\n")
    point(cwd / "link", outside / "approved.txt")
    run_all, asked = runner(
        cwd, "default", ["allow_once"], lambda: point(cwd / "link", outside / "secret.txt")
    )
    with trio.fail_after(10):
        [result] = await run_all.run_all(
            [{"id": "t1", "name": "read_file", "input": {"path": "link"}}]
        )
    assert asked == ["t1"]
    assert "approved text" in result["content"] and SECRET not in result["content"]


# -- in the open: a component of the judged real path swapped for a link --------------------


async def test_read_refuses_a_folder_swapped_for_a_link(
    cwd: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = judged_ctx(cwd, "sub/f.txt")
    hook(monkeypatch, local_files, "open_parent", lambda: swap_dir(cwd / "sub", outside))
    message = await fails(ReadFile(), ctx, path="sub/f.txt")
    assert CHANGED in message and SECRET not in message


async def test_read_refuses_the_file_swapped_for_a_link_after_the_pre_check(
    cwd: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the ``lstat`` (a regular file) and the ``open``: O_NOFOLLOW refuses the link."""
    ctx = judged_ctx(cwd, "inside.txt")
    hook(
        monkeypatch, LocalFiles, "_check", lambda: point(cwd / "inside.txt", outside / "secret.txt")
    )
    message = await fails(ReadFile(), ctx, path="inside.txt")
    assert CHANGED in message and SECRET not in message


async def test_write_refuses_the_file_swapped_for_a_link(
    cwd: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = judged_ctx(cwd, "inside.txt")
    before = contents(outside)
    hook(
        monkeypatch,
        local_files,
        "open_parent",
        lambda: point(cwd / "inside.txt", outside / "secret.txt"),
    )
    # The old text is read first (for the diff): that open meets the link and refuses.
    message = await fails(WriteFile(), ctx, path="inside.txt", content="pwned\n")
    assert CHANGED in message and SECRET not in message
    assert contents(outside) == before


async def test_write_refuses_a_folder_swapped_for_a_link(
    cwd: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = judged_ctx(cwd, "sub/f.txt", "sub/new/deeper.txt")
    before = contents(outside)
    files = ctx.files
    assert isinstance(files, LocalFiles)
    hook(monkeypatch, local_files, "open_parent", lambda: swap_dir(cwd / "sub", outside))
    with trio.fail_after(10), pytest.raises(ToolFailure, match=CHANGED):
        await files.write_text(ctx.path("sub/f.txt"), "pwned\n")
    # A new folder to create under a swapped one: not made outside either.
    with trio.fail_after(10), pytest.raises(ToolFailure, match=CHANGED):
        await files.write_text(ctx.path("sub/new/deeper.txt"), "pwned\n")
    assert contents(outside) == before


async def test_a_folder_swapped_during_the_write_cannot_redirect_the_rename(
    cwd: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder was opened and checked; while the text is written it is moved and a link
    to outside put in its place: the temporary file and the rename stay in the folder that
    was opened (now moved), nothing lands outside."""
    ctx = judged_ctx(cwd, "sub/f.txt")
    before = contents(outside)
    moved: list[Path] = []
    hook(
        monkeypatch, local_files, "_write_all", lambda: moved.append(swap_dir(cwd / "sub", outside))
    )
    text = await run(WriteFile(), ctx, path="sub/f.txt", content="new\n")
    assert "Wrote sub/f.txt" in text
    assert contents(outside) == before
    assert contents(moved[0]) == {"f.txt": "new\n"}


async def test_edit_refuses_a_swap_between_its_read_and_its_write(
    cwd: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = judged_ctx(cwd, "sub/f.txt")
    before = contents(outside)
    real_write = LocalFiles.write_text

    async def swap_then_write(self: LocalFiles, path: Path, text: str) -> None:
        swap_dir(cwd / "sub", outside)
        await real_write(self, path, text)

    monkeypatch.setattr(LocalFiles, "write_text", swap_then_write)
    message = await fails(EditFile(), ctx, path="sub/f.txt", old_string="alpha", new_string="beta")
    assert CHANGED in message and SECRET not in message
    assert contents(outside) == before


async def test_list_refuses_a_folder_swapped_for_a_link(
    cwd: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = judged_ctx(cwd, "sub")
    hook(monkeypatch, local_files, "open_parent", lambda: swap_dir(cwd / "sub", outside))
    message = await fails(ListFiles(), ctx, path="sub")
    assert CHANGED in message and "secret.txt" not in message


# -- what must keep working ------------------------------------------------------------------


async def test_links_resolved_before_the_check_still_work(cwd: Path) -> None:
    """A link inside the project to a file inside is read and written through (the tools get
    its real path), and the link itself stays a link."""
    point(cwd / "link", cwd / "inside.txt")
    ctx = judged_ctx(cwd, "link")
    assert "INSIDE alpha" in await run(ReadFile(), ctx, path="link")
    assert "Wrote inside.txt" in await run(WriteFile(), ctx, path="link", content="via link\n")
    assert "Edited inside.txt" in await run(
        EditFile(), ctx, path="link", old_string="via", new_string="through"
    )
    assert (cwd / "link").is_symlink() and (cwd / "inside.txt").read_text() == "through link\n"
    # Without a judged path (a direct caller) the tool resolves it itself.
    assert "through link" in await run(ReadFile(), judged_ctx(cwd), path="link")


async def test_missing_folders_are_created_and_the_root_is_refused(cwd: Path) -> None:
    ctx = judged_ctx(cwd, "a/b/c.txt")
    assert "Created a/b/c.txt" in await run(WriteFile(), ctx, path="a/b/c.txt", content="x")
    assert (cwd / "a" / "b" / "c.txt").read_text() == "x"
    assert "directory" in await fails(ReadFile(), judged_ctx(cwd, "/"), path="/")
