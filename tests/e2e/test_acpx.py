"""The README's acpx example, run with acpx from npm (pinned: acpx 0.19.1, installed once into
``~/.cache/iaccode-tests/acpx-0.19.1``): its ``~/.acpx/config.json`` as written there, the
path of this checkout's ``iaccode`` put in; the model a script, given through the environment
acpx passes on (its config has no ``env``). Skipped where there is no node or npm."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.environment import agent_environment

ROOT = Path(__file__).resolve().parents[2]
ACPX_VERSION = "0.19.1"
PLACEHOLDER = "/path/to/.venv/bin/iaccode"


def readme_acpx_config() -> dict[str, object]:
    """The JSON block under the README's **acpx** paragraph."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("**acpx**") :]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None, "no JSON block after **acpx** in the README"
    config: dict[str, object] = json.loads(block.group(1))
    return config


def acpx() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("acpx needs node and npm")
    root = Path(os.environ.get("IACCODE_TEST_CACHE") or Path.home() / ".cache" / "iaccode-tests")
    prefix = root / f"acpx-{ACPX_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "acpx"
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                f"acpx@{ACPX_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return binary


def test_the_readme_acpx_config_runs_a_prompt(tmp_path: Path) -> None:
    binary = acpx()
    home, project = tmp_path / "user", tmp_path / "project"
    project.mkdir()
    (home / ".acpx").mkdir(parents=True)
    iaccode = Path(sys.executable).with_name("iaccode")
    text = json.dumps(readme_acpx_config())
    assert PLACEHOLDER in text
    (home / ".acpx" / "config.json").write_text(text.replace(PLACEHOLDER, str(iaccode)))
    env = agent_environment(
        tmp_path / "iac-home",
        {"HOME": str(home), "IAC_CODE_MODEL_SCRIPT": str(ROOT / "examples" / "hello-script.json")},
    )
    done = subprocess.run(
        [str(binary), "--approve-all", "--format", "text", "iac-code", "exec", "hello"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Hello! I'm iac-code, a coding agent for infrastructure as code." in done.stdout
    assert "end_turn" in done.stdout
