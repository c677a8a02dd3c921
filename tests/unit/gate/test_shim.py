"""The gate program against a channel that answers badly: it fails closed, saying why."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from iaccode.gate.folder import GateFolder


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    return GateFolder.create(str(tmp_path)).bin / "terraform"


def serve_once(path: Path, answer: bytes) -> threading.Thread:
    """A channel that reads one request and answers ``answer``, then closes."""
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


@pytest.mark.parametrize(("answer", "status", "said"), [
    (b"not json\n", 126, "no answer from iac-code"),
    (b"[1, 2]\n", 126, "no answer from iac-code"),
    (b'{"op": "dance"}\n', 126, "an answer iac-code's gate does not know"),
    (b'{"op": "exec"}\n', 126, "a bad answer from iac-code"),
    (b'{"op": "exec", "program": "/nonexistent/terraform"}\n', 127, "/nonexistent/terraform"),
    (b'{"op": "refuse", "message": "no way", "status": 3}\n', 3, "no way"),
    (b"", 126, "iac-code ended the call"),
])
def test_the_gate_fails_closed(gate: Path, tmp_path: Path, answer: bytes, status: int,
                               said: str) -> None:
    path = tmp_path / "c.sock"
    thread = serve_once(path, answer)
    env = {**os.environ, "IAC_CODE_GATE_SOCKET": str(path), "IAC_CODE_GATE_TOKEN": "t"}
    done = subprocess.run([str(gate), "apply"], env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    thread.join(5)
    assert done.returncode == status and said in done.stderr
    assert done.stdout == ""


def test_exec_replaces_the_gate_with_the_program(gate: Path, tmp_path: Path) -> None:
    path = tmp_path / "c.sock"
    serve_once(path, b'{"op": "exec", "program": "/bin/echo", "argv": ["echo", "hi", "$X"],'
                     b' "env": {"X": "held"}, "message": "a note"}\n')
    env = {**os.environ, "IAC_CODE_GATE_SOCKET": str(path), "IAC_CODE_GATE_TOKEN": "t"}
    done = subprocess.run([str(gate), "apply"], env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "hi $X\n", "a note\n")


def test_the_gate_starts_isolated_and_without_site(gate: Path) -> None:
    first = gate.read_text().splitlines()[0]
    assert first.startswith("#!") and first.endswith(" -IS")
    assert "iac-code gate for terraform" in gate.read_text()[:300]
