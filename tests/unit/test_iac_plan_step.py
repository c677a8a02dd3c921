"""The plan step's argv (iaccode/iac/plan_step.py): read from the command, then run for real on
the tests' Terraform (tests/support/terraform.py): the plan it makes is the one the command
would have applied, and the apply of that file does exactly that."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from iaccode.iac.plan_step import digest, explain_failure, read_change
from iaccode.iac.plan_summary import read_plan_document
from tests.support.terraform import install_terraform

OUT = Path("/private/plan.tfplan")


@pytest.mark.parametrize(
    ("argv", "plan", "apply"),
    [
        (
            ["terraform", "apply", "-auto-approve"],
            ["terraform", "plan", "-input=false", "-no-color", f"-out={OUT}"],
            ["terraform", "apply", "-input=false", str(OUT)],
        ),
        (
            [
                "/usr/bin/tofu",
                "-chdir=envs/prod",
                "apply",
                "-var",
                "size=big",
                "-var-file=prod.tfvars",
                "--target=aws_s3_bucket.a",
                "-replace",
                "aws_instance.b",
                "-parallelism=3",
                "-lock-timeout",
                "10s",
                "-auto-approve=true",
                "-backup=old.tfstate",
                "-input=false",
            ],
            [
                "/usr/bin/tofu",
                "-chdir=envs/prod",
                "plan",
                "-input=false",
                "-no-color",
                f"-out={OUT}",
                "-var",
                "size=big",
                "-var-file=prod.tfvars",
                "--target=aws_s3_bucket.a",
                "-replace",
                "aws_instance.b",
                "-parallelism=3",
                "-lock-timeout",
                "10s",
            ],
            [
                "/usr/bin/tofu",
                "-chdir=envs/prod",
                "apply",
                "-input=false",
                "-parallelism=3",
                "-lock-timeout",
                "10s",
                "-backup=old.tfstate",
                str(OUT),
            ],
        ),
        (
            ["terraform", "destroy", "-target", "terraform_data.a", "-auto-approve", "-no-color"],
            [
                "terraform",
                "plan",
                "-input=false",
                "-no-color",
                f"-out={OUT}",
                "-destroy",
                "-target",
                "terraform_data.a",
                "-no-color",
            ],
            ["terraform", "apply", "-input=false", "-no-color", str(OUT)],
        ),
        (
            ["terraform", "apply", "-json", "-refresh=false", "-auto-approve"],
            ["terraform", "plan", "-input=false", "-no-color", f"-out={OUT}", "-refresh=false"],
            ["terraform", "apply", "-input=false", "-json", str(OUT)],
        ),
        (
            [
                "terragrunt",
                "--log-level",
                "info",
                "run",
                "--",
                "apply",
                "--non-interactive",
                "-var",
                "a=1",
            ],
            [
                "terragrunt",
                "--log-level",
                "info",
                "run",
                "--",
                "plan",
                "-input=false",
                "-no-color",
                f"-out={OUT}",
                "--non-interactive",
                "-var",
                "a=1",
            ],
            [
                "terragrunt",
                "--log-level",
                "info",
                "run",
                "--",
                "apply",
                "-input=false",
                "--non-interactive",
                str(OUT),
            ],
        ),
    ],
)
def test_the_plan_and_the_apply_of_a_command(
    argv: list[str], plan: list[str], apply: list[str]
) -> None:
    call = read_change(argv)
    assert call is not None and call.problem is None and call.plan_file is None
    assert call.plan_argv(OUT) == plan
    assert call.apply_argv(OUT) == apply


def test_a_saved_plan_is_applied_as_given() -> None:
    call = read_change(["terraform", "-chdir=infra", "apply", "-lock=false", "tfplan"])
    assert call is not None and call.problem is None
    assert (call.plan_file, call.chdir, call.folder(Path("/p"))) == (
        "tfplan",
        "infra",
        Path("/p/infra"),
    )
    assert call.apply_argv(OUT) == [
        "terraform",
        "-chdir=infra",
        "apply",
        "-input=false",
        "-lock=false",
        str(OUT),
    ]
    assert call.show_argv(OUT) == [
        "terraform",
        "-chdir=infra",
        "show",
        "-json",
        "-no-color",
        str(OUT),
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["terraform", "plan"],
        ["terraform", "-chdir", "x", "apply"],
        ["terraform", "apply", "-h"],
        ["terraform", "-version"],
        ["kubectl", "apply"],
        ["terragrunt", "output"],
        ["terragrunt", "--non-interactive", "plan"],
        [],
    ],
)
def test_what_is_not_an_apply(argv: list[str]) -> None:
    assert read_change(argv) is None


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["terragrunt", "run", "--all", "apply"], "many modules"),
        (["terragrunt", "run-all", "destroy"], "many modules"),
        (["terragrunt", "apply-all"], "many modules"),
        (["terraform", "apply", "a.tfplan", "b.tfplan"], "words after the plan file"),
        (["terraform", "apply", "-destroy", "a.tfplan"], "belong to the plan"),
        (["terraform", "destroy", "a.tfplan"], "takes no plan file"),
    ],
)
def test_what_cannot_be_bound_to_one_plan(argv: list[str], problem: str) -> None:
    call = read_change(argv)
    assert call is not None and call.problem is not None and problem in call.problem


def test_the_words_for_a_stale_plan_and_a_held_lock() -> None:
    stale = explain_failure(
        "Error: Saved plan is stale\n\nThe given plan file ...", "terraform apply"
    )
    assert stale is not None and "nothing was applied" in stale
    assert "terraform apply" in stale
    assert "state lock" in (explain_failure("Error acquiring the state lock", "x") or "")
    assert explain_failure("Error: Invalid reference", "x") is None


MODULE = """
variable "size" {
  default = "small"
}
resource "terraform_data" "server" {
  input = var.size
}
resource "terraform_data" "disk" {
  triggers_replace = var.size
}
"""


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TF_IN_AUTOMATION": "1"}
    env.pop("TF_CLI_CONFIG_FILE", None)
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=env
    )


def test_on_real_terraform_the_plan_step_applies_what_the_command_would(tmp_path: Path) -> None:
    terraform = str(install_terraform(tmp_path / "bin"))
    module = tmp_path / "project" / "infra"
    module.mkdir(parents=True)
    (module / "main.tf").write_text(MODULE)
    (module / "big.tfvars").write_text('size = "big"\n')
    assert run([terraform, "-chdir=infra", "init", "-input=false"], module.parent).returncode == 0
    assert (
        run(
            [terraform, "-chdir=infra", "apply", "-auto-approve", "-input=false"], module.parent
        ).returncode
        == 0
    )

    call = read_change(
        [
            terraform,
            "-chdir=infra",
            "apply",
            "-var-file=big.tfvars",
            "-target=terraform_data.disk",
            "-auto-approve",
        ]
    )
    assert call is not None
    saved = tmp_path / "private" / "change.tfplan"
    saved.parent.mkdir()
    planned = run(call.plan_argv(saved), module.parent)
    assert planned.returncode == 0, planned.stderr
    shown = run(call.show_argv(saved), module.parent)
    plan = read_plan_document(json.loads(shown.stdout))
    assert plan.summary() is not None and plan.summary().splitlines()[1:] == [  # type: ignore[union-attr]
        "  -/+ replace  terraform_data.disk (cannot be updated in place: triggers_replace)"
    ]

    before = digest(saved.read_bytes())
    applied = run(call.apply_argv(saved), module.parent)
    assert applied.returncode == 0, applied.stderr
    state = json.loads((module / "terraform.tfstate").read_text())
    values = {r["name"]: r["instances"][0]["attributes"] for r in state["resources"]}
    assert _value(values["disk"]["triggers_replace"]) == "big"
    assert _value(values["server"]["input"]) == "small", "-target must hold in the plan"
    assert digest(saved.read_bytes()) == before

    again = run(call.apply_argv(saved), module.parent)
    assert again.returncode == 1
    assert "nothing was applied" in (explain_failure(again.stderr, call.command) or "")


def test_on_real_terraform_an_empty_plan_is_empty_and_a_destroy_plans_destroys(
    tmp_path: Path,
) -> None:
    terraform = str(install_terraform(tmp_path / "bin"))
    module = tmp_path / "module"
    module.mkdir()
    (module / "main.tf").write_text(MODULE)
    assert run([terraform, "init", "-input=false"], module).returncode == 0
    assert run([terraform, "apply", "-auto-approve", "-input=false"], module).returncode == 0

    for argv, expected in (
        (["apply"], []),
        (
            ["destroy", "-auto-approve"],
            ["    - destroy  terraform_data.disk", "    - destroy  terraform_data.server"],
        ),
    ):
        call = read_change([terraform, *argv])
        assert call is not None
        saved = tmp_path / f"{argv[0]}.tfplan"
        assert run(call.plan_argv(saved), module).returncode == 0
        plan = read_plan_document(json.loads(run(call.show_argv(saved), module).stdout))
        assert plan.empty is (expected == [])
        assert sorted((plan.summary() or "").splitlines()[1:]) == expected


def _value(attribute: object) -> object:
    """A state attribute's value (Terraform 1.15 writes ``{"value": ..., "type": ...}``)."""
    return attribute["value"] if isinstance(attribute, dict) else attribute
