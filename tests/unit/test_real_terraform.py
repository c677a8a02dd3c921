"""The tests' real Terraform (tests/support/terraform.py) runs the whole life of a module with
built-in resources only: init, plan to a file, show -json, apply, output, destroy."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.terraform import install_terraform

MODULE = """
resource "terraform_data" "server" {
  input = var.size
}

variable "size" {
  default = "small"
}

output "password" {
  value     = "hunter2-${var.size}"
  sensitive = true
}
"""


def run(terraform: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(terraform), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_module_is_planned_applied_and_destroyed(tmp_path: Path) -> None:
    terraform = install_terraform(tmp_path / "bin")
    module = tmp_path / "module"
    module.mkdir()
    (module / "main.tf").write_text(MODULE)
    assert run(terraform, module, "init", "-input=false").returncode == 0

    planned = run(terraform, module, "plan", "-input=false", "-out=plan.bin")
    assert planned.returncode == 0, planned.stderr
    shown = json.loads(run(terraform, module, "show", "-json", "plan.bin").stdout)
    assert [
        (change["address"], change["change"]["actions"]) for change in shown["resource_changes"]
    ] == [("terraform_data.server", ["create"])]

    assert run(terraform, module, "apply", "-input=false", "plan.bin").returncode == 0
    outputs = json.loads(run(terraform, module, "output", "-json").stdout)
    assert outputs["password"] == {"sensitive": True, "type": "string", "value": "hunter2-small"}

    stale = run(terraform, module, "apply", "-input=false", "plan.bin")
    assert stale.returncode == 1 and "Saved plan is stale" in stale.stderr

    destroyed = run(terraform, module, "destroy", "-auto-approve", "-input=false")
    assert destroyed.returncode == 0, destroyed.stderr
    assert json.loads((module / "terraform.tfstate").read_text())["resources"] == []
