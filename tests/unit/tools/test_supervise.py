"""The terminal supervisor as a real process: exit status, TERM, and what the command left."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from acp_conformance.processes import pid_alive, pid_files_written, wait_until

from iaccode.host import process_tree
from iaccode.tools import supervise

pytestmark = pytest.mark.skipif(not process_tree.supported(), reason="needs Linux prctl")

LEAVES_TWO = (
    "sleep 300 & echo $! > bg.pid; setsid sleep 300 > /dev/null 2>&1 & echo $! > escaped.pid; "
)


def start(tmp_path: Path, command: str) -> subprocess.Popen[bytes]:
    program, args = supervise.command_line(["/bin/bash", "-c", command], grace=0.5)
    return subprocess.Popen([program, *args], cwd=tmp_path, stdout=subprocess.PIPE)


def pids(tmp_path: Path) -> list[int]:
    return [int((tmp_path / name).read_text()) for name in ("bg.pid", "escaped.pid")]


async def all_gone(found: list[int]) -> None:
    await wait_until(lambda: not any(pid_alive(pid) for pid in found))


async def test_passes_the_exit_status_and_output_and_ends_what_was_left(tmp_path: Path) -> None:
    proc = start(tmp_path, LEAVES_TWO + "echo out; exit 7")
    stdout, _ = proc.communicate(timeout=20)
    assert proc.returncode == 7
    assert stdout == b"out\n"  # nothing of the supervisor's own
    await all_gone(pids(tmp_path))


@pytest.mark.parametrize("sig", supervise.STOP_SIGNALS)
async def test_a_stop_signal_ends_the_whole_tree(tmp_path: Path, sig: signal.Signals) -> None:
    proc = start(tmp_path, LEAVES_TWO + "sleep 300")
    await wait_until(lambda: pid_files_written(tmp_path, "bg.pid", "escaped.pid"))
    proc.send_signal(sig)
    proc.communicate(timeout=20)
    assert proc.returncode == 128 + sig
    await all_gone(pids(tmp_path))


def test_refuses_to_run_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "iaccode.tools.supervise", "--"],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 2 and b"no command to run" in done.stderr


async def test_a_parent_death_signal_with_the_parent_alive_is_not_a_stop(tmp_path: Path) -> None:
    """The kernel sends the parent-death signal when the thread that started us exits (a
    client spawning from a pool thread); while the parent process lives, it is ignored."""
    proc = start(tmp_path, "echo $$ > shell.pid; sleep 1; exit 4")
    await wait_until(lambda: pid_files_written(tmp_path, "shell.pid"))
    proc.send_signal(supervise.PARENT_DEATH)
    proc.communicate(timeout=20)
    assert proc.returncode == 4


def test_starts_without_the_agents_libraries(tmp_path: Path) -> None:
    """It starts once per command in the editor's terminal: trio (0.15 s of CPU) stays out."""
    shown = tmp_path / "modules"
    program, args = supervise.command_line(["/bin/sh", "-c", "true"], grace=0.5)
    code = (
        "import runpy, sys; sys.argv = ['supervise', *sys.argv[1:]];"
        f" import atexit; atexit.register(lambda: open({str(shown)!r}, 'w').write("
        "' '.join(sorted(sys.modules))));"
        " runpy.run_module('iaccode.tools.supervise', run_name='__main__')"
    )
    done = subprocess.run([program, "-P", "-c", code, *args[3:]], cwd=tmp_path, check=False)
    assert done.returncode == 0
    loaded = shown.read_text().split()
    assert "iaccode.host.process_tree" in loaded and "trio" not in loaded
