"""The grep and glob tools on a generated tree of 50,000 files, against ``rg`` on the same tree.

The tree is a git work tree (``git init``, nothing committed) of 50,000 files in 1,000 folders:
source-like text of about a kilobyte each, a ``.gitignore`` that leaves out a ``build/`` folder
and ``*.log`` files (part of the 50,000). The tools are called directly (``Grep().run``,
``Glob().run`` with a ``ToolContext``, as the unit tests do), in this process; ``rg`` runs as a
subprocess, as a user would run it, with its defaults. Medians over the repeats, after one
warm-up run each (the page cache is warm for both).

- grep ``FIXME\\(bench\\)`` (in 100 files), ``files_with_matches`` and ``content``, against
  ``rg -l`` and ``rg -n`` with the same pattern;
- glob ``**/*.py`` (12,000 files, sorted newest first by the tool), against ``rg --files -g
  '*.py'``.

    python -m tests.bench.bench_search [--quick]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.common import Row, log, median, ms, scratch

FILES = 50_000
FOLDERS = 1_000
PATTERN = r"FIXME\(bench\)"
MARK_EVERY = 500
EXTENSIONS = [".py", ".ts", ".tf", ".md"]

BODY = (
    "\n".join(
        f"def function_{i}(value, other=None):\n    result = compute(value, other) + {i}\n"
        f"    return result  # keeps the {i}th value"
        for i in range(8)
    )
    + "\n"
)


def generate(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("build/\n*.log\n")
    per_folder = count // FOLDERS
    written = 0
    for folder_index in range(FOLDERS):
        top = "build" if folder_index % 50 == 49 else f"pkg{folder_index // 20:02d}"
        folder = root / top / f"mod{folder_index % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for file_index in range(per_folder):
            number = folder_index * per_folder + file_index
            extension = ".log" if number % 40 == 39 else EXTENSIONS[number % 4]
            text = f"# file {number}\n{BODY}"
            if number % MARK_EVERY == 0:
                text += "# FIXME(bench): remove this workaround\n"
            (folder / f"file_{number:05d}{extension}").write_text(text)
            written += 1
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(root)], check=True)


def _rg() -> str:
    from iaccode.host.search.rg import find_rg

    rg = find_rg()
    if rg is None:
        raise SystemExit("rg not found (the ripgrep package installs it beside python)")
    return rg


def _time_both(
    tool: Any, args: dict[str, Any], rg_args: list[str], cwd: Path, repeats: int
) -> tuple[float, Any, float, int]:
    """Median seconds of the tool and of rg, run alternately (one warm-up each), the tool's last
    result and the number of lines rg printed."""
    import trio

    from iaccode.host.local_files import LocalFiles
    from iaccode.protocol.convert import tool_input
    from iaccode.tools.base import ToolContext, ToolLimits

    async def no_report(_: Any) -> None:
        pass

    limits = ToolLimits()
    ctx = ToolContext(
        cwd=cwd,
        limits=limits,
        files=LocalFiles(limits.read_max_bytes),
        tool_call_id="bench",
        report=no_report,
    )
    times: list[float] = []
    rg_times: list[float] = []
    result: Any = None
    lines = 0

    async def main() -> None:
        nonlocal result, lines
        for index in range(repeats + 1):
            began = time.perf_counter()
            result = await tool.run(tool_input(args, tool.input_type), ctx)
            elapsed = time.perf_counter() - began
            began = time.perf_counter()
            # Blocking on purpose: nothing else runs.
            out = subprocess.run(  # noqa: ASYNC221
                [_rg(), *rg_args],
                cwd=cwd,
                capture_output=True,
                check=False,
            )
            rg_elapsed = time.perf_counter() - began
            assert out.returncode in (0, 1), out.stderr
            lines = out.stdout.count(b"\n")
            if index:
                times.append(elapsed)
                rg_times.append(rg_elapsed)

    trio.run(main)
    return median(times), result, median(rg_times), lines


def run(quick: bool = False) -> list[Row]:
    from iaccode.tools.glob import Glob
    from iaccode.tools.grep import Grep

    count = 10_000 if quick else FILES
    repeats = 3 if quick else 7
    rows = []
    with scratch("search") as root:
        tree = Path(os.path.realpath(root)) / "tree"
        log(f"generating {count:,} files")
        generate(tree, count)
        log("grep and glob")
        value, result, base, found = _time_both(
            Grep(), {"pattern": PATTERN}, ["-l", PATTERN], tree, repeats
        )
        assert result.raw_output["results"] == found > 0, (result.raw_output, found)
        rows.append(
            Row(
                "search",
                f"grep, files_with_matches ({count:,} files)",
                ms(value),
                "ms",
                ms(base),
                "rg -l",
                "≤ 1.5× rg",
                value <= 1.5 * base,
                note=f"{result.raw_output['results']} files (rg: {found})",
            )
        )
        value, result, base, found = _time_both(
            Grep(), {"pattern": PATTERN, "output_mode": "content"}, ["-n", PATTERN], tree, repeats
        )
        rows.append(
            Row(
                "search",
                f"grep, content ({count:,} files)",
                ms(value),
                "ms",
                ms(base),
                "rg -n",
                "≤ 1.5× rg",
                value <= 1.5 * base,
                note=f"{result.raw_output['results']} lines (rg: {found})",
            )
        )
        value, result, base, found = _time_both(
            Glob(), {"pattern": "**/*.py"}, ["--files", "-g", "*.py"], tree, repeats
        )
        rows.append(
            Row(
                "search",
                f"glob **/*.py ({count:,} files)",
                ms(value),
                "ms",
                ms(base),
                "rg --files -g '*.py'",
                "",
                None,
                note=f"{result.raw_output['matches']} files, sorted newest first "
                f"(rg lists {found}, unsorted)",
            )
        )
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import main

    main(["--only", "search", *sys.argv[1:]])
