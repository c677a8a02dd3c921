"""Files and folders only their owner may read (iaccode/private_files.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from iaccode.private_files import open_private, private_dir, private_home


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_missing_folders_are_made_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        private_dir(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(old)
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3


def test_a_file_in_the_way_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "sessions").write_text("not a folder")
    with pytest.raises(FileExistsError):
        private_dir(tmp_path / "sessions")


def test_a_readable_file_of_ours_becomes_private_and_a_fifo_is_left_alone(tmp_path: Path) -> None:
    loose = tmp_path / "old.log"
    loose.write_text("x")
    loose.chmod(0o644)
    os.close(open_private(loose, os.O_WRONLY | os.O_APPEND))
    assert mode(loose) == 0o600
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o644)
    fifo.chmod(0o644)
    os.close(open_private(fifo, os.O_RDWR))  # a device or FIFO the user pointed us at
    assert mode(fifo) == 0o644


def test_the_home_is_made_private_unless_it_is_a_shared_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    private_home(home)
    assert mode(home) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    private_home(shared)
    assert mode(shared) == 0o1777
