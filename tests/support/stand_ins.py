"""Stand-in programs (a fake ``terraform``, say) first on the agent's PATH, so tests never
depend on, or run, the real ones a machine may have."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from acp_conformance.environment import agent_environment
from acp_conformance.fakes.messages import FakeModelServer


def env_with_stand_ins(tmp_path: Path, model_server: FakeModelServer,
                       programs: dict[str, str]) -> dict[str, str]:
    """The usual test agent's environment, with ``programs`` (name -> script text) written
    to ``tmp_path/bin`` and that folder first on PATH."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, text in programs.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return agent_environment(tmp_path / "home", {
        "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": model_server.base_url,
        "IAC_CODE_MAX_RETRIES": "2", "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"})


LOGGING_CLI = """#!/bin/sh
# A stand-in infrastructure CLI: it changes nothing, it logs that it ran and with what.
printf '%s %s\\n' {name} "$*" >> {log}
echo "stand-in {name} ran: $*"
if [ -n "$AWS_SECRET_ACCESS_KEY" ]; then echo "{name} got AWS_SECRET_ACCESS_KEY"; fi
"""


def logging_clis(names: Iterable[str], log: Path) -> dict[str, str]:
    """Stand-ins for ``names`` (``terraform``, ``kubectl``...) that log each run to ``log``,
    one line each: the name, then the arguments."""
    return {name: LOGGING_CLI.format(name=shlex.quote(name), log=shlex.quote(str(log)))
            for name in names}


def runs(log: Path) -> list[str]:
    """What the stand-ins of :func:`logging_clis` ran, in order."""
    return log.read_text().splitlines() if log.exists() else []
