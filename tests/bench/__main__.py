"""Run the benchmarks, print the table, write ``.bench/results.json``.

    python -m tests.bench [--only startup,streaming,...] [--quick] [--docs]

(``nox -s bench`` runs this.) Every figure is shown with its baseline, measured in the same run
on the same machine, and the ratio of the two; see each ``bench_*.py`` for what it measures.
``--docs`` also replaces the table in ``docs/performance.md`` (with ``--only``,
just the rows of the benchmarks run, with a note saying where they come from).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.common import REPO, Row

BENCHES = [
    "startup",
    "streaming",
    "cancel",
    "sessions",
    "memory",
    "search",
    "caching",
    "store_listing",
    "gate",
    "plan_step",
]
RESULTS = REPO / ".bench" / "results.json"
PERFORMANCE_DOC = REPO / "docs" / "performance.md"
TABLE_BEGIN = "<!-- bench-table-begin -->"
TABLE_END = "<!-- bench-table-end -->"


def _format(value: float | None, unit: str = "") -> str:
    if value is None:
        return "—"
    if unit in ("ms",):
        text = f"{value:.2f}" if value < 1 else f"{value:.1f}" if value < 100 else f"{value:.0f}"
    elif abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}".strip()


def table(rows: list[Row]) -> str:
    lines = [
        "| figure | value | baseline (same run) | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = row.ratio
        met = {True: "yes", False: "**no**", None: "—"}[row.met]
        baseline = (
            f"{_format(row.baseline, row.unit)} ({row.baseline_label})"
            if row.baseline is not None
            else "—"
        )
        figure = f"{row.group}: {row.figure}"
        if row.note:
            figure += f" <br><sub>{row.note}</sub>"
        lines.append(
            f"| {figure} | {_format(row.value, row.unit)} | {baseline} | "
            f"{'—' if ratio is None else f'{ratio:.2f}×'} | {row.target or '—'} "
            f"| {met} |"
        )
    return "\n".join(lines)


def _machine() -> dict[str, Any]:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--", "iaccode"],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
        )
    except OSError:
        rev, dirty = "", False
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpus": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git": rev + ("+dirty" if dirty else ""),
    }


def update_docs(
    text: str, command: str, machine: dict[str, Any], partial: list[Row] | None = None
) -> None:
    """Write the table between the markers. A run of some benchmarks (``partial``: its rows)
    replaces only the rows of its groups and says below the table where they come from; the
    other rows, from earlier runs, stay as they are."""
    content = PERFORMANCE_DOC.read_text()
    if TABLE_BEGIN not in content or TABLE_END not in content:
        print(f"{PERFORMANCE_DOC} has no bench table markers; not updated", file=sys.stderr)
        return
    head, rest = content.split(TABLE_BEGIN, 1)
    old, tail = rest.split(TABLE_END, 1)
    when = (
        f"on {machine['date']} ({machine['cpus']} cores, load average "
        f"{machine['load_average']} at the start, Python {machine['python']}, "
        f"{machine['git']})"
    )
    if partial is None or "| figure |" not in old:
        body = f"`{command}` {when}:\n\n{text}\n"
    else:
        body = _merged_table(
            old, partial, f"The {_groups_named(partial)} rows are from `{command}` {when}."
        )
    PERFORMANCE_DOC.write_text(head + TABLE_BEGIN + "\n" + body + TABLE_END + tail)


def _groups_named(rows: list[Row]) -> str:
    groups = list(dict.fromkeys(row.group for row in rows))
    return " and ".join([", ".join(groups[:-1]), groups[-1]] if len(groups) > 1 else groups)


def _merged_table(old: str, rows: list[Row], note: str) -> str:
    """``old`` (the text between the markers) with the rows of ``rows``' groups replaced by
    them and ``note`` after the table (replacing an earlier note about the same groups)."""
    groups = {row.group for row in rows}
    new_lines = table(rows).splitlines()[2:]
    lines = old.strip("\n").splitlines()
    merged: list[str] = []
    placed: set[str] = set()
    for line in lines:
        group = line[2:].split(":", 1)[0] if line.startswith("| ") and ":" in line else None
        if group in groups:
            if group not in placed:
                placed.add(group)
                merged += [
                    new for new, row in zip(new_lines, rows, strict=True) if row.group == group
                ]
            continue
        if line.startswith(f"The {_groups_named(rows)} rows are from `"):
            continue  # the note of the run these rows replace
        merged.append(line)
    last_row = max(i for i, line in enumerate(merged) if line.startswith("|"))
    missing = [new for new, row in zip(new_lines, rows, strict=True) if row.group not in placed]
    merged[last_row + 1 : last_row + 1] = missing
    return "\n".join(merged).rstrip("\n") + f"\n\n{note}\n"


def compile_package() -> None:
    """Byte-compile iaccode first, as an install does: with PYTHONDONTWRITEBYTECODE set (as on
    our machines) every agent would otherwise compile its modules from source at each start."""
    import compileall

    import iaccode

    compileall.compile_dir(Path(iaccode.__file__).parent, quiet=1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated, from {', '.join(BENCHES)}")
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument(
        "--docs", action="store_true", help="update the table in docs/performance.md"
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else BENCHES
    unknown = set(names) - set(BENCHES)
    if unknown:
        parser.error(f"unknown benchmarks: {', '.join(sorted(unknown))}")

    compile_package()
    machine = _machine()
    rows: list[Row] = []
    durations: dict[str, float] = {}
    began = time.perf_counter()
    for name in names:
        module = importlib.import_module(f"tests.bench.bench_{name}")
        start = time.perf_counter()
        print(f"== {name}", file=sys.stderr, flush=True)
        rows += module.run(quick=args.quick)
        durations[name] = round(time.perf_counter() - start, 1)
        print(f"   {name}: {durations[name]:.0f} s", file=sys.stderr, flush=True)
    total = time.perf_counter() - began

    text = table(rows)
    print()
    print(text)
    print()
    missed = [row for row in rows if row.met is False]
    print(
        f"load average {machine['load_average']} at the start, "
        f"{round(os.getloadavg()[0], 2)} at the end"
    )
    print(
        f"{len(rows)} figures, {sum(r.met is True for r in rows)} targets met, "
        f"{len(missed)} missed; {total:.0f} s in all ({durations})"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    shown = [arg for arg in (sys.argv[1:] if argv is None else argv) if arg != "--docs"]
    if os.environ.get("NOX_CURRENT_SESSION"):
        command = "nox -s bench" + (" -- " + " ".join(shown) if shown else "")
    else:
        command = " ".join(["python -m tests.bench", *shown])
    args.output.write_text(
        json.dumps(
            {
                "command": command,
                "machine": machine,
                "seconds": round(total, 1),
                "durations": durations,
                "quick": args.quick,
                "rows": [row.to_json() for row in rows],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.output}")
    if args.docs:
        update_docs(text, command, machine, partial=rows if args.only else None)
        print(f"updated {PERFORMANCE_DOC.relative_to(REPO)}")


if __name__ == "__main__":
    main()
