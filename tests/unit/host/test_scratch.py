"""The agent's folders under the temporary folder, and the sweep of a killed agent's
(``iaccode/host/scratch.py``); the whole path, an agent killed and the next one sweeping, is in
``tests/e2e/test_cancel_and_lifecycle.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from iaccode.host.scratch import process_folder, remove_folder, sweep_abandoned


@pytest.fixture(scope="module")
def gone_pid() -> int:
    """The id of a process that has ended."""
    ran = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(ran.stdout)


def read_only_tree(root: Path) -> Path:
    """A folder as the gates leave it: read-only folders, read-only files, a socket-like file."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "terraform").write_text("#!/bin/sh\n")
    (root / "bin" / "terraform").chmod(0o500)
    (root / "bin").chmod(0o500)
    root.chmod(0o500)
    return root


def test_a_new_folder_is_private_and_named_after_the_process(tmp_path: Path) -> None:
    made = process_folder("gates", str(tmp_path))
    assert made.parent == tmp_path
    assert made.name.startswith(f"iaccode-gates-{os.getpid()}-")
    assert made.stat().st_mode & 0o777 == 0o700


def test_the_folders_of_gone_processes_are_swept_when_one_is_made(
    tmp_path: Path, gone_pid: int
) -> None:
    abandoned = read_only_tree(tmp_path / f"iaccode-gates-{gone_pid}-k9")
    made = process_folder("gates", str(tmp_path))
    assert not abandoned.exists()
    assert set(tmp_path.iterdir()) == {made}


def test_what_is_not_a_gone_agents_folder_of_that_kind_stays(tmp_path: Path, gone_pid: int) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept").write_text("")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    stays = [
        scratch / f"iaccode-plans-{gone_pid}-x",  # another kind
        scratch / f"iaccode-gates-{os.getpid()}-x",  # this process's own
        scratch / f"iaccode-gates-{os.getppid()}-x",  # a live process's
        scratch / f"iaccode-gates-{gone_pid}",  # not the name's shape
        scratch / f"iaccode-gates-{gone_pid}-x-",  # a file
        scratch / f"iaccode-gates-{gone_pid}-link",  # a link to a folder
        scratch / f"xiaccode-gates-{gone_pid}-x",
        scratch / f"iaccode-gates--{gone_pid}-x",
    ]
    for path in stays:
        if path.name.endswith("-"):
            path.write_text("")
        elif path.name.endswith("link"):
            path.symlink_to(elsewhere, target_is_directory=True)
        else:
            path.mkdir()
    assert sweep_abandoned("gates", str(scratch)) == []
    assert sorted(scratch.iterdir()) == sorted(stays)
    assert [p.name for p in elsewhere.iterdir()] == ["kept"]


@pytest.mark.skipif(os.getuid() != 0, reason="making another user's folder needs root")
def test_another_users_folder_stays(tmp_path: Path, gone_pid: int) -> None:
    theirs = tmp_path / f"iaccode-gates-{gone_pid}-theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    assert sweep_abandoned("gates", str(tmp_path)) == []
    assert theirs.is_dir()


def test_a_process_id_no_process_can_have_is_gone(tmp_path: Path) -> None:
    huge = tmp_path / f"iaccode-gates-{2**70}-x"
    huge.mkdir()
    assert sweep_abandoned("gates", str(tmp_path)) == [huge]


def test_a_parent_that_cannot_be_listed_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep_abandoned("gates", str(tmp_path / "missing")) == []


def test_removing_takes_read_only_folders_and_leaves_link_targets(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    (target / "kept").write_text("")
    mode = target.stat().st_mode
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    (root / "run" / "link").symlink_to(target, target_is_directory=True)
    read_only_tree(root)
    remove_folder(root)
    assert not root.exists()
    assert (target / "kept").exists()
    assert target.stat().st_mode == mode
    remove_folder(root)  # gone already: nothing to do
