"""Stand-in programs (a fake ``terraform``, say) first on the agent's PATH, so tests never
depend on, or run, the real ones a machine may have."""

from __future__ import annotations

import os
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
