"""The gate program against a channel that answers badly: it fails closed, saying why."""

from __future__ import annotations

import marshal
import os
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iaccode.gate.folder import GateFolder


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    folder = GateFolder.create(str(tmp_path))  # in /tmp when tmp_path is too long for sockets
    yield folder.bin / "terraform"
    folder.remove()


def frame(op: Any) -> bytes:
    """An op as the agent sends it: its marshal dump after its length."""
    data = marshal.dumps(op)
    return len(data).to_bytes(4, "big") + data


def serve_once(path: Path, answer: bytes) -> threading.Thread:
    """A channel that reads one request and answers ``answer`` (bytes), then closes."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)

    def run() -> None:
        connection, _ = listener.accept()
        with connection, listener:
            connection.recv(65536)
            connection.sendall(answer)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("answer", "status", "said"),
    [
        (b"\0\0\0\x05junk!", 126, "no answer from iac-code"),
        (frame([1, 2]), 126, "no answer from iac-code"),
        (b"\0\0\0\x40short", 126, "iac-code ended the call"),
        (frame({"op": "dance"}), 126, "an answer iac-code's gate does not know"),
        (frame({"op": "exec"}), 126, "a bad answer from iac-code"),
        (frame({"op": "exec", "program": "/nonexistent/terraform"}), 127, "/nonexistent/terraform"),
        (frame({"op": "refuse", "message": "no way", "status": 3}), 3, "no way"),
        (b"", 126, "iac-code ended the call"),
    ],
)
def test_the_gate_fails_closed(
    gate: Path, tmp_path: Path, answer: bytes, status: int, said: str
) -> None:
    path = tmp_path / "c.sock"
    thread = serve_once(path, answer)
    env = {**os.environ, "IAC_CODE_GATE_SOCKET": str(path), "IAC_CODE_GATE_TOKEN": "t"}
    done = subprocess.run(
        [str(gate), "apply"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    thread.join(5)
    assert done.returncode == status and said in done.stderr
    assert done.stdout == ""


def test_exec_replaces_the_gate_with_the_program(gate: Path, tmp_path: Path) -> None:
    path = tmp_path / "c.sock"
    serve_once(
        path,
        frame(
            {
                "op": "exec",
                "program": "/bin/echo",
                "argv": ["echo", "hi", "$X"],
                "env": {"X": "held"},
                "message": "a note",
            }
        ),
    )
    env = {**os.environ, "IAC_CODE_GATE_SOCKET": str(path), "IAC_CODE_GATE_TOKEN": "t"}
    done = subprocess.run(
        [str(gate), "apply"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "hi $X\n", "a note\n")


def test_the_gate_starts_isolated_and_without_site(gate: Path) -> None:
    first = gate.read_text().splitlines()[0]
    assert first.startswith("#!") and first.endswith(" -IS")
    assert "iac-code gate for terraform" in gate.read_text()[:300]


def test_a_copy_outliving_its_agent_refuses(gate: Path, tmp_path: Path) -> None:
    copy = tmp_path / "kept"
    copy.write_bytes(gate.read_bytes())
    copy.chmod(0o755)
    (gate.parent.parent / "shim.code").unlink()
    done = subprocess.run(
        [str(copy), "apply"], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 126 and "its agent is gone" in done.stderr


def test_what_the_gate_sends_is_json(tmp_path: Path) -> None:
    """Its small JSON writer (no json module at start) writes what json reads back."""
    import json

    from iaccode.gate import shim

    value = {
        "argv": ['a"b\\c', "\n\t\x01", "é", "😀", "\udcff", "x" * 5000],
        "pid": 7,
        "ok": True,
        "none": None,
    }
    assert json.loads(shim._dumps(value)) == value


def test_the_folder_puts_back_what_a_command_changed(tmp_path: Path) -> None:
    folder = GateFolder.create(str(tmp_path))
    gate = folder.bin / "terraform"
    text = gate.read_bytes()
    assert oct(folder.bin.stat().st_mode & 0o777) == "0o500"
    assert folder.restore() is False, "nothing to put back"
    folder.bin.chmod(0o700)
    gate.unlink()
    (folder.bin / "kubectl").write_text('#!/bin/sh\nexec /usr/bin/kubectl "$@"\n')
    (folder.root / "shim.code").chmod(0o600)
    (folder.root / "shim.code").write_bytes(b"x")
    assert folder.restore() is True
    assert gate.read_bytes() == text and (folder.bin / "kubectl").read_bytes().startswith(b"#!")
    assert oct(folder.bin.stat().st_mode & 0o777) == "0o500"
    folder.remove()
    assert not folder.root.exists()


def test_a_temporary_folder_too_long_for_sockets_gives_way_to_tmp(tmp_path: Path) -> None:
    """A ``$TMPDIR`` of 80 characters would leave the gates no room for their sockets' paths
    (107 bytes): every command would fail to start."""
    long = tmp_path / ("t" * (80 - len(str(tmp_path)) - 1))
    long.mkdir()
    folder = GateFolder.create(str(long))
    try:
        assert folder.root.parent == Path("/tmp")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(folder.run / "c999999.sock"))
    finally:
        folder.remove()
    short = Path(tempfile.mkdtemp(prefix="g"))  # room enough: where it was asked
    folder = GateFolder.create(str(short))
    folder.remove()
    short.rmdir()
    assert folder.root.parent == short
