"""The checks after a write run the real Terraform (tests/support/terraform.py): its ``fmt
-check -diff`` and, in an initialised module, its ``validate -json``, end to end through a real
``iaccode acp``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_tools import choose, result_for, start
from tests.support.agent_process import AgentConnection
from tests.support.stand_ins import env_with_stand_ins
from tests.support.terraform import install_terraform

WRITTEN = 'resource "terraform_data" "web" {\ninput   =   var.size\n}\n'
"""Badly indented, and a reference to a variable nobody declared."""


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer, workspace: Path) -> dict[str, str]:
    env = env_with_stand_ins(tmp_path, model_server, {})
    env.pop("TF_CLI_CONFIG_FILE", None)  # the launcher's own: no warning about ~/.terraformrc
    terraform = str(install_terraform(tmp_path / "bin"))
    # A local child module, so that init makes .terraform/ (built-in providers need none).
    (workspace / "child").mkdir()
    (workspace / "child" / "main.tf").write_text('resource "terraform_data" "c" {}\n')
    (workspace / "modules.tf").write_text('module "child" {\n  source = "./child"\n}\n')
    done = subprocess.run(
        [terraform, "init", "-input=false"],
        cwd=workspace,
        timeout=120,
        capture_output=True,
        check=False,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return env


async def test_fmt_and_validate_of_the_real_terraform(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_write", "write_file", {"path": "main.tf", "content": WRITTEN})
            ]
        ),
        reply(
            tool_uses=[
                ToolUse(
                    "toolu_fix",
                    "write_file",
                    {
                        "path": "main.tf",
                        "content": 'variable "size" {\n  default = "small"\n}\n\n'
                        'resource "terraform_data" "web" {\n  input = var.size\n}\n',
                    },
                )
            ]
        ),
        reply("Fixed."),
    )
    session = await start(agent, workspace)
    await agent.run_prompt(session, "add a server", choose("allow_once"), timeout=120)

    seen = result_for(model_server, 1, "toolu_write")["content"]
    report = seen[seen.index("IaC check of main.tf") :]
    assert report.startswith("IaC check of main.tf (Terraform) found 2 problems:"), report
    assert "not formatted as `terraform fmt` writes it" in report
    assert "-input   =   var.size" in report and "+  input = var.size" in report, (
        "the diff is the real fmt's"
    )
    assert (
        "main.tf:2: error: Reference to undeclared input variable: An input variable "
        'with the name "size" has not been declared.'
    ) in report, "the real validate's"
    fixed = result_for(model_server, 2, "toolu_fix")["content"]
    assert fixed.endswith("IaC check of main.tf (Terraform): no problems.")
