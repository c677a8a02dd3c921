"""Values Terraform marks sensitive, read from what the real Terraform writes and prints
(iaccode/iac/sensitive_values.py), and hidden from a tool's result (iaccode/iac/sensitive.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from iaccode.iac import sensitive
from iaccode.iac.sensitive_values import (
    document_values,
    parameter_values,
    sensitive_names,
    template_values,
    tfvars_values,
)
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent
from iaccode.tool_result import ToolResult
from tests.support.terraform import install_terraform

MODULE = """
variable "db_password" {
  type      = string
  sensitive = true
}
variable "size" {
  default = "small"
}
resource "terraform_data" "db" {
  input = {
    password = var.db_password
    size     = var.size
  }
}
output "password" {
  value     = "pw-${var.db_password}"
  sensitive = true
}
output "size" {
  value = var.size
}
"""
SECRET = "correct-horse-battery"


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A module applied with a sensitive variable, by the real Terraform; (folder, terraform)."""
    root = tmp_path_factory.mktemp("sensitive")
    terraform = str(install_terraform(root / "bin"))
    module = root / "module"
    module.mkdir()
    (module / "main.tf").write_text(MODULE)
    (module / "prod.tfvars").write_text(f'db_password = "{SECRET}"\nsize = "large"\n')
    for argv in (
        ["init", "-input=false"],
        ["apply", "-auto-approve", "-input=false", "-var-file=prod.tfvars"],
        [
            "plan",
            "-input=false",
            "-var-file=prod.tfvars",
            "-var",
            "size=huge",
            "-out=change.tfplan",
        ],
    ):
        done = tf(terraform, module, *argv)
        assert done.returncode == 0, done.stderr
    return module, terraform


def tf(terraform: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [terraform, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "TF_IN_AUTOMATION": "1"},
    )


def test_every_document_terraform_prints_gives_its_sensitive_values(
    applied: tuple[Path, str],
) -> None:
    module, terraform = applied
    password = f"pw-{SECRET}"
    state = json.loads((module / "terraform.tfstate").read_text())
    assert document_values(state) == {password, SECRET}
    pulled = json.loads(tf(terraform, module, "state", "pull").stdout)
    assert document_values(pulled) == {password, SECRET}
    outputs = json.loads(tf(terraform, module, "output", "-json").stdout)
    assert document_values(outputs) == {password}
    shown_state = json.loads(tf(terraform, module, "show", "-json").stdout)
    assert document_values(shown_state) == {password, SECRET}
    shown_plan = json.loads(tf(terraform, module, "show", "-json", "change.tfplan").stdout)
    assert SECRET in json.dumps(shown_plan), "Terraform's own plan JSON holds the secret"
    assert document_values(shown_plan) == {password, SECRET}
    assert "large" not in document_values(shown_plan) | document_values(state)


def test_names_tfvars_templates_and_parameter_files() -> None:
    assert sensitive_names(MODULE) == ({"db_password"}, {"password"})
    assert sensitive_names('variable "x" {\n  description = "sensitive = true"\n}\n') == (
        set(),
        set(),
    )
    assert tfvars_values(
        {"db_password": SECRET, "size": "large", "keys": {"a": "key-aaaa"}}, ["db_password", "keys"]
    ) == {SECRET, "key-aaaa"}
    template = {
        "Parameters": {
            "DbPassword": {"Type": "String", "NoEcho": "true", "Default": "hunter2!"},
            "Size": {"Type": "String", "Default": "small"},
        }
    }
    assert template_values(template) == {"hunter2!"}
    assert parameter_values(
        [
            {"ParameterKey": "DbPassword", "ParameterValue": "p4ssw0rd"},
            {"ParameterKey": "Size", "ParameterValue": "large"},
        ],
        {"DbPassword"},
    ) == {"p4ssw0rd"}


async def test_a_state_read_in_every_way_shows_no_secret(applied: tuple[Path, str]) -> None:
    module, _ = applied
    raw = (module / "terraform.tfstate").read_text()
    result = await sensitive.hide(None, ToolResult(raw), module.resolve())
    assert SECRET not in result.text and "(sensitive)" in result.text
    assert '"large"' in result.text, "only what Terraform marks is hidden"
    escaped = json.dumps(raw)  # the state printed inside another JSON string
    again = await sensitive.hide("cat x | jq -R .", ToolResult(escaped), module.resolve())
    assert SECRET not in again.text
    assert result.content is not None
    note = result.content[-1]
    assert isinstance(note, ContentToolCallContent) and isinstance(note.content, TextContent)
    assert "hidden from the model" in note.content.text


async def test_a_bare_sensitive_output_is_hidden_whole(applied: tuple[Path, str]) -> None:
    module, terraform = applied
    printed = tf(terraform, module, "output", "-raw", "password").stdout
    result = await sensitive.hide(
        "terraform output -raw password | base64",
        ToolResult(printed.encode().hex()),
        module.resolve(),
    )
    assert result.text.startswith(
        "(sensitive): the output of this command is the value of password"
    )
    as_json = await sensitive.hide(
        "terraform output -json password", ToolResult('"remote-only-value"'), module.resolve()
    )
    assert as_json.text.startswith("(sensitive)"), "one value alone, JSON or not"
    size = await sensitive.hide("terraform output -raw size", ToolResult("large"), module.resolve())
    assert size.text == "large"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


async def test_a_remote_states_values_are_learnt_from_what_a_command_printed(project: Path) -> None:
    pulled = {
        "version": 4,
        "lineage": "x",
        "outputs": {"token": {"value": "remote-token-123", "type": "string", "sensitive": True}},
        "resources": [],
    }
    first = await sensitive.hide(
        "terraform state pull",
        ToolResult("Acquiring state lock...\n" + json.dumps(pulled)),
        project,
    )
    assert "remote-token-123" not in first.text
    later = await sensitive.hide(None, ToolResult("x.txt:1:remote-token-123"), project)
    assert later.text.startswith("x.txt:1:(sensitive)")


async def test_a_result_without_sensitive_values_is_left_alone(project: Path) -> None:
    result = ToolResult("nothing here", raw_output={"output": "nothing here"})
    assert await sensitive.hide("ls", result, project) is result
