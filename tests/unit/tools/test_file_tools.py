"""The file tools called directly: local disk access, read_file, list_files, glob, grep,
write_file and edit_file, with every failure they report. glob and grep run twice, once through
ripgrep and once through the pure-Python fallback, and must agree."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
import trio

from iaccode.host import local_files
from iaccode.host.local_files import LocalFiles
from iaccode.host.search import rg as rg_module
from iaccode.host.search.ignore import expand_braces
from iaccode.host.search.rg import run_rg
from iaccode.protocol.convert import ParamsError, tool_input
from iaccode.protocol.tool_calls import DiffContent
from iaccode.secret_files import is_secret_file
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools import glob as glob_module
from iaccode.tools import grep as grep_module
from iaccode.tools.base import Tool, ToolContext, ToolLimits
from iaccode.tools.edit_file import EditFile
from iaccode.tools.glob import Glob
from iaccode.tools.grep import Grep, GrepInput
from iaccode.tools.list_files import ListFiles
from iaccode.tools.read_file import ReadFile
from iaccode.tools.write_file import WriteFile

ALL_TOOLS: list[Tool] = [ReadFile(), ListFiles(), Glob(), Grep(), WriteFile(), EditFile()]


async def _no_report(_: Any) -> None:
    pass


class EditorFiles:
    """A FileAccess like the editor's: buffers in memory, nothing on disk."""

    def __init__(self, buffers: dict[Path, str]) -> None:
        self.buffers = buffers

    async def read_text(self, path: Path) -> str:
        if path not in self.buffers:
            raise ToolFailure(f"File not found: {path}")
        return self.buffers[path]

    async def write_text(self, path: Path, text: str) -> None:
        self.buffers[path] = text


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    path.mkdir()
    return path


def make_ctx(cwd: Path, files: Any = None, **limits: Any) -> ToolContext:
    bounds = ToolLimits(**limits)
    return ToolContext(
        cwd=cwd,
        limits=bounds,
        files=files or LocalFiles(bounds.read_max_bytes),
        tool_call_id="t1",
        report=_no_report,
    )


@pytest.fixture
def ctx(cwd: Path) -> ToolContext:
    return make_ctx(cwd)


async def run(tool: Tool, ctx: ToolContext, **args: Any) -> ToolResult:
    with trio.fail_after(10):
        return await tool.run(tool_input(args, tool.input_type), ctx)


async def fails(tool: Tool, ctx: ToolContext, **args: Any) -> str:
    with pytest.raises(ToolFailure) as info:
        await run(tool, ctx, **args)
    return str(info.value)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(params=["rg", "python"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run glob/grep through ripgrep, or through the fallback; each must really be used."""

    def unexpected(*_: Any, **__: Any) -> Any:
        raise AssertionError("the other search backend ran")

    if request.param == "rg":
        if rg_module.find_rg() is None:
            pytest.skip("rg is not installed")
        monkeypatch.setattr(glob_module, "walk_files", unexpected)
        monkeypatch.setattr(grep_module, "_python_search", unexpected)
    else:
        monkeypatch.setattr(rg_module, "USE_RG", False)
        monkeypatch.setattr(glob_module, "run_rg", unexpected)
        monkeypatch.setattr(grep_module, "run_rg", unexpected)
    return str(request.param)


# -- definitions -----------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda tool: tool.name)
def test_definitions_describe_every_input_field(tool: Tool) -> None:
    schema = tool.input_schema
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    fields = {a.name for a in attrs.fields(tool.input_type)}
    assert set(schema["properties"]) == fields
    assert set(schema["required"]) <= fields
    assert all(prop.get("description") for prop in schema["properties"].values())
    assert len(tool.description) > 100
    assert tool.definition()["name"] == tool.name


@pytest.mark.parametrize(
    ("tool", "args", "title", "kind", "read_only"),
    [
        (ReadFile(), {"path": "a.py"}, "Read a.py", "read", True),
        (
            ReadFile(),
            {"path": "a.py", "offset": 5, "limit": 10},
            "Read a.py (lines 5-14)",
            "read",
            True,
        ),
        (ReadFile(), {"path": "a.py", "offset": 5}, "Read a.py (from line 5)", "read", True),
        (ListFiles(), {}, "List .", "read", True),
        (Glob(), {"pattern": "*.py", "path": "src"}, "Glob *.py in src", "search", True),
        (Grep(), {"pattern": "x", "glob": "*.tf"}, "Grep 'x' (*.tf)", "search", True),
        (WriteFile(), {"path": "a", "content": ""}, "Write a", "edit", False),
        (EditFile(), {"path": "a", "old_string": "x", "new_string": "y"}, "Edit a", "edit", False),
    ],
)
def test_titles_kinds_and_paths(
    tool: Tool, args: dict[str, Any], title: str, kind: str, read_only: bool
) -> None:
    parsed: Any = tool_input(args, tool.input_type)
    assert tool.title(parsed) == title
    assert (tool.kind, tool.read_only) == (kind, read_only)
    assert tool.paths(parsed) == [args.get("path", ".")]


def test_inputs_are_strict() -> None:
    with pytest.raises(ParamsError) as info:
        tool_input({"path": 5}, ReadFile.input_type)
    assert "input.path" in info.value.problems
    with pytest.raises(ParamsError) as info:
        tool_input({"pattern": "x", "output_mode": "lines"}, Grep.input_type)
    assert "input.output_mode" in info.value.problems
    with pytest.raises(ParamsError) as info:
        tool_input({"path": "a", "old_string": "x"}, EditFile.input_type)
    assert info.value.problems == {"input.new_string": "is required"}


# -- LocalFiles ------------------------------------------------------------------------------


async def test_local_read_keeps_the_text_as_it_is(cwd: Path) -> None:
    (cwd / "a.txt").write_bytes("naïve\r\nline\n".encode())
    with trio.fail_after(10):
        assert await LocalFiles(1000).read_text(cwd / "a.txt") == "naïve\r\nline\n"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "File not found"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: os.mkfifo(p), "named pipe"),
        (lambda p: p.write_bytes(b"PK\x03\x04\x00\x00data"), "binary file"),
        (lambda p: p.write_bytes(b"caf\xe9\n"), "not UTF-8"),
        (lambda p: p.write_bytes(b"x" * 101), "over the 100 byte limit"),
    ],
)
async def test_local_read_refuses(cwd: Path, make: Callable[[Path], None], message: str) -> None:
    path = cwd / "target"
    make(path)
    with trio.fail_after(10), pytest.raises(ToolFailure, match=message):
        await LocalFiles(100).read_text(path)


async def test_local_read_refuses_devices_and_huge_sparse_files(cwd: Path) -> None:
    with trio.fail_after(10):
        with pytest.raises(ToolFailure, match="is a device"):
            await LocalFiles(1000).read_text(Path("/dev/zero"))
        huge = cwd / "huge.bin"
        huge.touch()
        os.truncate(huge, 2 * 1024**3)
        with pytest.raises(ToolFailure, match="2,147,483,648 bytes, over the"):
            await LocalFiles(10 * 1024 * 1024).read_text(huge)


async def test_local_read_checks_the_opened_file_too(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO swapped in after the stat is caught on the descriptor, and never blocks."""
    fifo, regular = cwd / "fifo", cwd / "regular"
    os.mkfifo(fifo)
    regular.write_text("x")
    real_stat = os.stat

    def stale_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return real_stat(regular if Path(path) == fifo else path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stale_stat)
    with trio.fail_after(10), pytest.raises(ToolFailure, match="named pipe"):
        await LocalFiles(100).read_text(fifo)


async def test_local_write_creates_parents_and_keeps_modes(cwd: Path) -> None:
    files = LocalFiles(1000)
    with trio.fail_after(10):
        await files.write_text(cwd / "a" / "b" / "new.txt", "new\n")
        assert (cwd / "a" / "b" / "new.txt").read_text() == "new\n"
        umask = os.umask(0)
        os.umask(umask)
        assert stat.S_IMODE((cwd / "a" / "b" / "new.txt").stat().st_mode) == 0o666 & ~umask
        script = cwd / "run.sh"
        script.write_text("old")
        script.chmod(0o750)
        await files.write_text(script, "new")
        assert script.read_text() == "new"
        assert stat.S_IMODE(script.stat().st_mode) == 0o750
        (cwd / "link.txt").symlink_to(script)  # given real paths: a link means a swap
        with pytest.raises(ToolFailure, match="changed while being opened"):
            await files.write_text(cwd / "link.txt", "via link")
        assert (cwd / "link.txt").is_symlink() and script.read_text() == "new"
    assert names(cwd) == ["a", "link.txt", "run.sh"]


async def test_local_write_refuses(cwd: Path) -> None:
    (cwd / "file").write_text("x")
    (cwd / "folder").mkdir()
    files = LocalFiles(1000)
    with trio.fail_after(10):
        with pytest.raises(ToolFailure, match="a parent of it is a file"):
            await files.write_text(cwd / "file" / "sub.txt", "x")
        with pytest.raises(ToolFailure, match="is a directory"):
            await files.write_text(cwd / "folder", "x")


async def test_cancelled_write_leaves_the_old_file_and_no_temp_file(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = cwd / "f.txt"
    target.write_text("old content")
    monkeypatch.setattr(local_files, "WRITE_CHUNK_BYTES", 4)
    real_write_all = local_files._write_all
    chunks: list[bytes] = []

    with trio.fail_after(10), trio.CancelScope() as scope:

        def write_and_cancel(fd: int, data: memoryview) -> None:
            real_write_all(fd, data)
            chunks.append(bytes(data))
            trio.from_thread.run_sync(scope.cancel)  # cancelled mid-write, after one chunk

        monkeypatch.setattr(local_files, "_write_all", write_and_cancel)
        await LocalFiles(1000).write_text(target, "a much longer new content")
    assert scope.cancelled_caught and chunks == [b"a mu"]
    assert target.read_text() == "old content"
    assert names(cwd) == ["f.txt"]


async def test_failed_replace_leaves_the_old_file_and_no_temp_file(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = cwd / "f.txt"
    target.write_text("old")

    def broken_replace(*_: Any, **__: Any) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", broken_replace)
    with trio.fail_after(10), pytest.raises(ToolFailure, match="Input/output error"):
        await LocalFiles(1000).write_text(target, "new")
    assert target.read_text() == "old"
    assert names(cwd) == ["f.txt"]


# -- read_file -------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"a.py": "import os\r\n\n    x = 1\n"})
    result = await run(ReadFile(), ctx, path="a.py")
    assert result.text == "     1\timport os\n     2\t\n     3\t    x = 1"
    assert result.raw_output["lines"] == 3 and not result.is_error


async def test_read_offset_limit_and_more_lines_note(cwd: Path) -> None:
    write(cwd, {"big.txt": "".join(f"line {n}\n" for n in range(1, 11))})
    ctx = make_ctx(cwd, read_default_lines=4)
    first = await run(ReadFile(), ctx, path="big.txt")
    assert first.text.splitlines()[:4] == [f"{n:>6}\tline {n}" for n in range(1, 5)]
    assert first.text.endswith("... 6 more lines; use offset to read on (offset=5).")
    window = await run(ReadFile(), ctx, path="big.txt", offset=5, limit=2)
    assert window.text.splitlines() == [
        "     5\tline 5",
        "     6\tline 6",
        "... 4 more lines; use offset to read on (offset=7).",
    ]
    tail = await run(ReadFile(), ctx, path=str(cwd / "big.txt"), offset=9)
    assert tail.text == "     9\tline 9\n    10\tline 10"


async def test_read_failures(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"a.txt": "one\ntwo\n", "empty.txt": "", "bin": b"\x00\x01"})
    assert "past the end: a.txt has 2 lines" in await fails(ReadFile(), ctx, path="a.txt", offset=3)
    assert "starting at 1" in await fails(ReadFile(), ctx, path="a.txt", offset=0)
    assert "at least 1" in await fails(ReadFile(), ctx, path="a.txt", limit=0)
    assert "File not found" in await fails(ReadFile(), ctx, path="nope.txt")
    assert "binary" in await fails(ReadFile(), ctx, path="bin")
    assert "directory" in await fails(ReadFile(), ctx, path=".")
    assert (await run(ReadFile(), ctx, path="empty.txt")).text == "(empty.txt is empty)"


async def test_read_cuts_very_long_lines(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"min.js": "x" * 5000})
    result = await run(ReadFile(), ctx, path="min.js")
    assert result.text == f"     1\t{'x' * 2000} [... line cut: 3000 more characters]"


async def test_read_goes_through_ctx_files(cwd: Path) -> None:
    ctx = make_ctx(cwd, files=EditorFiles({cwd / "buf.tf": "unsaved\n"}))
    assert (await run(ReadFile(), ctx, path="buf.tf")).text == "     1\tunsaved"


# -- list_files ------------------------------------------------------------------------------


async def test_list_is_sorted_marks_dirs_and_skips_ignored(ctx: ToolContext, cwd: Path) -> None:
    write(
        cwd,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n",
            "b.py": "",
            "a.py": "",
            "x.log": "",
            "keep.log": "",
            "build/out": "",
            "src/c.py": "",
            ".env": "",
            ".git/HEAD": "",
        },
    )
    result = await run(ListFiles(), ctx)
    assert result.text.splitlines() == [
        ".env",
        ".gitignore",
        "a.py",
        "b.py",
        "keep.log",
        "src/",
        "[2 entries left out by .gitignore]",
    ]


async def test_list_nested_gitignore_and_explicitly_named_ignored_dir(
    ctx: ToolContext, cwd: Path
) -> None:
    write(
        cwd,
        {
            ".gitignore": "node_modules/\n",
            "src/.gitignore": "gen/\n",
            "src/gen/x.py": "",
            "src/main.py": "",
            "node_modules/pkg/index.js": "",
        },
    )
    assert (await run(ListFiles(), ctx, path="src")).text.splitlines() == [
        ".gitignore",
        "main.py",
        "[1 entries left out by .gitignore]",
    ]
    assert (await run(ListFiles(), ctx, path="node_modules")).text == "pkg/"
    assert (await run(ListFiles(), ctx, path="src/gen")).text == "x.py"


async def test_list_cap_and_failures(cwd: Path) -> None:
    write(cwd, {f"f{n}.txt": "" for n in range(5)})
    (cwd / "empty").mkdir()
    ctx = make_ctx(cwd, search_max_results=2)
    result = await run(ListFiles(), ctx)
    assert result.text.splitlines()[:2] == ["empty/", "f0.txt"]
    assert "4 more entries not shown (the limit is 2)" in result.text
    assert (await run(ListFiles(), ctx, path="empty")).text == "(empty directory)"
    assert "Directory not found" in await fails(ListFiles(), ctx, path="missing")
    assert "not a directory" in await fails(ListFiles(), ctx, path="f0.txt")


# -- glob ------------------------------------------------------------------------------------


def test_expand_braces() -> None:
    assert sorted(expand_braces("src/*.{ts,tsx}")) == ["src/*.ts", "src/*.tsx"]
    assert sorted(expand_braces("{a,b}/{c,d}")) == ["a/c", "a/d", "b/c", "b/d"]
    assert expand_braces("plain") == ["plain"]


TREE: dict[str, str | bytes] = {
    ".gitignore": "*.log\nbuild/\nnode_modules/\n",
    "a.py": "print('hello')\n",
    "src/b.py": "def hello():\n    return 'Hello'\n",
    "src/sub/c.py": "x = 1\n",
    "src/.gitignore": "generated.py\n",
    "src/generated.py": "hello = 1\n",
    "src/types.ts": "hello: string\n",
    "src/view.tsx": "<Hello/>\n",
    "debug.log": "hello from the log\n",
    "src/app.log": "hello again\n",
    "build/out.py": "hello = 'built'\n",
    "node_modules/pkg/index.js": "hello()\n",
    ".git/config": "hello\n",
    ".github/ci.yml": "hello: yes\n",
    "image.png": b"\x89PNG\x00\x00hello\x00",
}


@pytest.fixture
def tree(cwd: Path) -> Path:
    write(cwd, TREE)
    for age, name in enumerate(["src/sub/c.py", "a.py", "src/b.py"]):  # newest last
        os.utime(cwd / name, (1_000_000 + age, 1_000_000 + age))
    return cwd


async def test_glob_respects_gitignore_and_sorts_newest_first(
    backend: str, ctx: ToolContext, tree: Path
) -> None:
    result = await run(Glob(), ctx, pattern="**/*.py")
    assert result.text.splitlines() == ["src/b.py", "a.py", "src/sub/c.py"]
    assert result.raw_output["matches"] == 3


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", None, {"a.py", "src/b.py", "src/sub/c.py"}),
        ("src/*.py", None, {"src/b.py"}),
        ("*.{ts,tsx}", None, {"src/types.ts", "src/view.tsx"}),
        ("*", "src/sub", {"src/sub/c.py"}),
        ("*.py", "src", {"src/b.py", "src/sub/c.py"}),
        ("*.log", None, set()),  # ignored files stay ignored even when asked for by name
        ("*", "node_modules", {"node_modules/pkg/index.js"}),  # an ignored folder named on purpose
        ("*.yml", None, {".github/ci.yml"}),
    ],
)
async def test_glob_patterns(
    backend: str, ctx: ToolContext, tree: Path, pattern: str, path: str | None, expected: set[str]
) -> None:
    args = {"pattern": pattern} | ({"path": path} if path else {})
    result = await run(Glob(), ctx, **args)
    if expected:
        assert set(result.text.splitlines()) == expected
    else:
        assert result.text == f"No files match {pattern!r} in the project directory."


async def test_glob_everything_never_lists_ignored_or_git(
    backend: str, ctx: ToolContext, tree: Path
) -> None:
    listed = set((await run(Glob(), ctx, pattern="*")).text.splitlines())
    assert listed == {
        ".gitignore",
        "a.py",
        "src/b.py",
        "src/sub/c.py",
        "src/.gitignore",
        "src/types.ts",
        "src/view.tsx",
        ".github/ci.yml",
        "image.png",
    }


async def test_glob_cap_and_failures(backend: str, cwd: Path, tree: Path) -> None:
    ctx = make_ctx(cwd, search_max_results=2)
    result = await run(Glob(), ctx, pattern="*.py", path=str(cwd))
    assert result.text.splitlines() == [
        "src/b.py",
        "a.py",
        "[showing the 2 newest of 3 matching files; narrow the pattern or the path to see the "
        "rest]",
    ]
    assert result.raw_output["truncated"] is True
    assert "Directory not found" in await fails(Glob(), ctx, pattern="*", path="missing")
    assert "not a directory" in await fails(Glob(), ctx, pattern="*", path="a.py")
    assert "empty" in await fails(Glob(), ctx, pattern="  ")


async def test_glob_outside_the_project_shows_absolute_paths(
    backend: str, cwd: Path, ctx: ToolContext
) -> None:
    other = cwd.parent / "other"
    write(other, {"x.tf": ""})
    assert (await run(Glob(), ctx, pattern="*.tf", path=str(other))).text == str(other / "x.tf")


async def test_symlinks_in_the_tree_are_not_followed(
    backend: str, ctx: ToolContext, cwd: Path
) -> None:
    """A link may lead out of the project: glob and grep skip links, as rg does."""
    outside = cwd.parent / "outside"
    write(outside, {"secret.txt": "secret\n"})
    write(cwd, {"real.txt": "secret\n"})
    (cwd / "link.txt").symlink_to(outside / "secret.txt")
    (cwd / "linkdir").symlink_to(outside)
    assert (await run(Glob(), ctx, pattern="**/*.txt")).text == "real.txt"
    assert (await run(Grep(), ctx, pattern="secret")).text == "real.txt"


async def test_gitignore_rules_come_from_the_work_tree_not_stray_parents(
    backend: str, cwd: Path
) -> None:
    base = cwd.parent
    write(
        base / "repo",
        {".git/HEAD": "", ".gitignore": "*.gen\n", "app/x.gen": "hit\n", "app/y.txt": "hit\n"},
    )
    write(base / "stray", {".gitignore": "*\n", "app/y.txt": "hit\n"})
    in_repo = make_ctx(base / "repo" / "app")
    assert (await run(Glob(), in_repo, pattern="*")).text == "y.txt"
    assert (await run(Grep(), in_repo, pattern="hit")).text == "y.txt"
    assert (await run(ListFiles(), in_repo)).text.splitlines()[0] == "y.txt"
    under_stray = make_ctx(base / "stray" / "app")
    assert (await run(Glob(), under_stray, pattern="*")).text == "y.txt"
    assert (await run(Grep(), under_stray, pattern="hit")).text == "y.txt"


async def test_glob_falls_back_when_rg_cannot_start(
    ctx: ToolContext, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rg_module, "_locate_rg", lambda: str(tree / "no-such-rg"))
    result = await run(Glob(), ctx, pattern="*.py")
    assert result.text.splitlines() == ["src/b.py", "a.py", "src/sub/c.py"]


# -- grep ------------------------------------------------------------------------------------


async def test_grep_files_with_matches(backend: str, ctx: ToolContext, tree: Path) -> None:
    result = await run(Grep(), ctx, pattern="hello")
    # Not the ignored log, build and node_modules files, nor .git, nor the binary image.
    assert result.text.splitlines() == [".github/ci.yml", "a.py", "src/b.py", "src/types.ts"]


async def test_grep_content_and_count(backend: str, ctx: ToolContext, tree: Path) -> None:
    content = await run(
        Grep(), ctx, pattern="hello", output_mode="content", case_insensitive=True, path="src"
    )
    assert content.text.splitlines() == [
        "src/b.py:1:def hello():",
        "src/b.py:2:    return 'Hello'",
        "src/types.ts:1:hello: string",
        "src/view.tsx:1:<Hello/>",
    ]
    count = await run(Grep(), ctx, pattern="(?i)hello", output_mode="count", path="src")
    assert count.text.splitlines() == ["src/b.py:2", "src/types.ts:1", "src/view.tsx:1"]


async def test_grep_glob_filter_keeps_ignored_files_out(
    backend: str, ctx: ToolContext, tree: Path
) -> None:
    assert (
        await run(Grep(), ctx, pattern="hello", glob="*.{ts,tsx}", case_insensitive=True)
    ).text.splitlines() == ["src/types.ts", "src/view.tsx"]
    result = await run(Grep(), ctx, pattern="hello", glob="*.log")
    assert result.text == "No matches for 'hello' in the project directory (files matching *.log)."
    assert (await run(Grep(), ctx, pattern="hello", glob="*")).text.splitlines() == [
        ".github/ci.yml",
        "a.py",
        "src/b.py",
        "src/types.ts",
    ]


async def test_grep_one_file_and_long_lines(backend: str, ctx: ToolContext, tree: Path) -> None:
    write(tree, {"debug.log": "x" * 600 + " hello\n"})
    result = await run(Grep(), ctx, pattern="hello", path="debug.log", output_mode="content")
    assert result.text == f"debug.log:1:{'x' * 500} [... omitted end of long line]"
    assert (
        await run(Grep(), ctx, pattern="hello", path="image.png", output_mode="content")
    ).text == "image.png: binary file matches"


async def test_grep_names_a_secrets_file_it_searched(
    backend: str, ctx: ToolContext, tree: Path
) -> None:
    """Its answer tells of every file it searched, "No matches" too: the exposure check asks
    which of them hold secrets. Not one the search left out (.gitignore, glob, path)."""
    write(tree, {"build/.env": "KEY=ignored\n", "src/sub/prod.tfvars": "key = 1\n"})

    async def searched(**args: Any) -> str | None:
        with trio.fail_after(10):
            return await Grep().searched(tool_input(args, GrepInput), ctx, is_secret_file)

    assert await searched(pattern="nothing") == "src/sub/prod.tfvars"
    assert await searched(pattern="x", path="src/sub") == "src/sub/prod.tfvars"
    assert await searched(pattern="x", glob="*.py") is None
    assert await searched(pattern="x", path="src/sub/prod.tfvars") is None  # its input names it
    assert await searched(pattern="x", path="no/such") is None
    assert await searched(pattern="x", path="build") == "build/.env"  # named on purpose
    (tree / "src/sub/prod.tfvars").unlink()
    assert await searched(pattern="x") is None  # build/ is ignored: not searched
    (tree / ".env").write_text("KEY=value\n")
    assert await searched(pattern="x", glob="{.env,*.py}") == ".env"


async def test_grep_max_results(backend: str, ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"many.txt": "match\n" * 50})
    result = await run(Grep(), ctx, pattern="match", output_mode="content", max_results=3)
    assert result.text.splitlines() == [
        "many.txt:1:match",
        "many.txt:2:match",
        "many.txt:3:match",
        "[stopped at 3 results; there are more: narrow the pattern, path or glob, or raise "
        "max_results]",
    ]
    assert result.raw_output == {"mode": "content", "results": 3, "truncated": True}


async def test_grep_failures(backend: str, ctx: ToolContext, tree: Path) -> None:
    message = await fails(Grep(), ctx, pattern="(unclosed")
    assert message.startswith("Invalid regex '(unclosed': missing ), unterminated subpattern")
    assert "Path not found" in await fails(Grep(), ctx, pattern="x", path="missing")
    assert "at least 1" in await fails(Grep(), ctx, pattern="x", max_results=0)
    os.mkfifo(tree / "pipe")
    assert "not a regular file" in await fails(Grep(), ctx, pattern="x", path="pipe")
    # A FIFO inside the tree is skipped, never opened for reading.
    assert (await run(Grep(), ctx, pattern="x = 1")).text == "src/sub/c.py"


async def test_grep_takes_python_only_regex_syntax(ctx: ToolContext, tree: Path) -> None:
    """rg's engine refuses look-around and backreferences; the Python fallback takes them."""
    result = await run(Grep(), ctx, pattern=r"hel(?=lo')", output_mode="content")
    assert result.text == "a.py:1:print('hello')"
    assert (await run(Grep(), ctx, pattern=r"(l)\1o", path="a.py")).text == "a.py"


async def test_grep_no_match(backend: str, ctx: ToolContext, tree: Path) -> None:
    result = await run(Grep(), ctx, pattern="zebra", path="src")
    assert result.text == "No matches for 'zebra' in src." and not result.is_error


async def test_run_rg_stops_early_and_kills_on_cancel(cwd: Path) -> None:
    """run_rg bounds what it keeps, and a cancel kills the process (a stand-in for rg here)."""
    with trio.fail_after(10):
        run_ = await run_rg(sys.executable, ["-c", "while True: print('x', flush=True)"], cwd, 5)
        assert run_.stopped and run_.lines == ["x"] * 6
        bare = False
        with trio.move_on_after(0.3) as scope:
            try:
                await run_rg(sys.executable, ["-c", "import time; time.sleep(60)"], cwd, 5)
            except trio.Cancelled:
                bare = True
                raise
        assert scope.cancelled_caught and bare


# -- write_file ------------------------------------------------------------------------------


async def test_write_creates_a_file_with_parents(ctx: ToolContext, cwd: Path) -> None:
    result = await run(WriteFile(), ctx, path="out/deep/new.tf", content="naïve = 1\n")
    path = cwd / "out" / "deep" / "new.tf"
    assert path.read_text() == "naïve = 1\n"
    assert result.content == [DiffContent(path=str(path), old_text=None, new_text="naïve = 1\n")]
    assert result.raw_output == {"path": str(path), "created": True, "bytes": 11}
    assert result.text == "Created out/deep/new.tf (1 line, 11 bytes)."


async def test_write_replaces_and_diffs_against_the_old_text(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"a.tf": "old\n"})
    result = await run(WriteFile(), ctx, path=str(cwd / "a.tf"), content="new\nlines\n")
    assert (cwd / "a.tf").read_text() == "new\nlines\n"
    assert result.content == [
        DiffContent(path=str(cwd / "a.tf"), old_text="old\n", new_text="new\nlines\n")
    ]
    assert result.raw_output["created"] is False
    assert result.text == "Wrote a.tf (2 lines, 10 bytes; it had 1 line)."


async def test_write_refuses_to_clobber_what_it_cannot_read(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"blob.bin": b"\x00\x01\x02"})
    (cwd / "folder").mkdir()
    assert "could not be read as text" in await fails(
        WriteFile(), ctx, path="blob.bin", content="text"
    )
    assert (cwd / "blob.bin").read_bytes() == b"\x00\x01\x02"
    assert "is a directory" in await fails(WriteFile(), ctx, path="folder", content="x")


async def test_write_goes_through_ctx_files(cwd: Path) -> None:
    editor = EditorFiles({cwd / "buf.tf": "buffer\n"})
    ctx = make_ctx(cwd, files=editor)
    result = await run(WriteFile(), ctx, path="buf.tf", content="edited\n")
    assert editor.buffers[cwd / "buf.tf"] == "edited\n" and not (cwd / "buf.tf").exists()
    assert result.content == [
        DiffContent(path=str(cwd / "buf.tf"), old_text="buffer\n", new_text="edited\n")
    ]


# -- edit_file -------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_string(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"main.tf": 'resource "x" "y" {}\nname = "y"\n'})
    result = await run(EditFile(), ctx, path="main.tf", old_string='"y" {}', new_string='"z" {}')
    new = 'resource "x" "z" {}\nname = "y"\n'
    assert (cwd / "main.tf").read_text() == new
    assert result.content == [
        DiffContent(
            path=str(cwd / "main.tf"), old_text='resource "x" "y" {}\nname = "y"\n', new_text=new
        )
    ]
    assert result.text == "Edited main.tf: replaced 1 occurrence, at line 1."


async def test_edit_ambiguous_and_replace_all(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"a.py": "x = 1\ny = x\nprint(x)\n"})
    message = await fails(EditFile(), ctx, path="a.py", old_string="x", new_string="v")
    assert "occurs 3 times" in message and "replace_all" in message
    assert (cwd / "a.py").read_text() == "x = 1\ny = x\nprint(x)\n"
    result = await run(
        EditFile(), ctx, path="a.py", old_string="x", new_string="v", replace_all=True
    )
    assert (cwd / "a.py").read_text() == "v = 1\ny = v\nprint(v)\n"
    assert result.raw_output["replacements"] == 3
    assert result.text == "Edited a.py: replaced 3 occurrences."


async def test_edit_not_found_explains_why(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"a.py": "def f():\n    return 1\n"})
    plain = await fails(EditFile(), ctx, path="a.py", old_string="nothing", new_string="x")
    assert "old_string was not found in a.py" in plain and "whitespace" in plain
    spaced = await fails(
        EditFile(), ctx, path="a.py", old_string="def f():\n  return 1", new_string="x"
    )
    assert "matches if whitespace is ignored" in spaced
    numbered = await fails(
        EditFile(),
        ctx,
        path="a.py",
        old_string="     1\tdef f():\n     2\t    return 1",
        new_string="x",
    )
    assert "line-number prefixes" in numbered
    assert (cwd / "a.py").read_text() == "def f():\n    return 1\n"


async def test_edit_other_failures(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"a.py": "x\n"})
    assert "the same" in await fails(EditFile(), ctx, path="a.py", old_string="x", new_string="x")
    assert "empty" in await fails(EditFile(), ctx, path="a.py", old_string="", new_string="y")
    missing = await fails(EditFile(), ctx, path="new.py", old_string="x", new_string="y")
    assert "File not found: new.py" in missing and "write_file" in missing


async def test_edit_matches_plain_newlines_in_a_crlf_file(ctx: ToolContext, cwd: Path) -> None:
    write(cwd, {"win.txt": b"one\r\ntwo\r\nthree\r\n"})
    await run(EditFile(), ctx, path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert (cwd / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
