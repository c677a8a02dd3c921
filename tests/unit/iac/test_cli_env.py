"""What a CLI's environment makes of its argv (:mod:`iaccode.iac.cli_env`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iaccode.gate import shim
from iaccode.iac.cli_env import REPORTED, classify_run


def test_the_gate_reports_what_the_agent_reads() -> None:
    assert shim.REPORTED == REPORTED


@pytest.mark.parametrize(
    ("env", "args", "label"),
    [
        (
            {"TF_CLI_ARGS_init": "-migrate-state -force-copy"},
            ["init"],
            "terraform init -migrate-state (with TF_CLI_ARGS_init='-migrate-state -force-copy')",
        ),
        (
            {"TF_CLI_ARGS": "-migrate-state"},
            ["-chdir=x", "init"],
            "terraform init -migrate-state (with TF_CLI_ARGS=-migrate-state)",
        ),
        ({"TF_CLI_ARGS_init": "'unclosed"}, ["init"], "terraform init (TF_CLI_ARGS_init)"),
        ({}, ["init", "-migrate-state"], "terraform init -migrate-state"),
        ({"TF_CLI_ARGS_plan": "-destroy"}, ["plan"], None),
        ({"TF_CLI_ARGS_init": "-migrate-state"}, ["plan"], None),
        ({"TF_CLI_ARGS": "-no-color"}, ["version"], None),
    ],
)
def test_terraform_reads_its_arguments_from_the_environment_too(
    env: dict[str, str], args: list[str], label: str | None
) -> None:
    change = classify_run("terraform", args, env)
    assert (change.label if change else None) == label


def alias_home(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / ".aws" / "cli").mkdir(parents=True)
    (tmp_path / ".aws" / "cli" / "alias").write_text(text)
    return {"HOME": str(tmp_path)}


def test_an_aws_alias_is_read_as_what_it_expands_to(tmp_path: Path) -> None:
    env = alias_home(
        tmp_path,
        "[toplevel]\ns3 = ec2 terminate-instances\n"
        "whoami = sts get-caller-identity\nsh = !echo hi\n"
        "loop = whoami\n",
    )
    change = classify_run("aws", ["s3", "ls"], env)
    assert change is not None and change.label.startswith("aws ec2 terminate-instances")
    assert classify_run("aws", ["--region", "x", "whoami"], env) is None
    assert classify_run("aws", ["ec2", "describe-instances"], env) is None
    for command in ("sh", "loop"):
        shell = classify_run("aws", [command], env)
        assert shell is not None and shell.unknown and ".aws/cli/alias" in shell.label


def test_an_alias_file_that_cannot_be_read_asks(tmp_path: Path) -> None:
    (tmp_path / ".aws" / "cli").mkdir(parents=True)
    os.mkfifo(tmp_path / ".aws" / "cli" / "alias")  # never opened for a blocking read
    change = classify_run("aws", ["s3", "ls"], {"HOME": str(tmp_path)})
    assert change is not None and change.unknown
    assert classify_run("aws", ["s3", "ls"], {"HOME": str(tmp_path / "none")}) is None


def test_aws_service_models_of_the_user_make_no_run_a_sure_read(tmp_path: Path) -> None:
    """botocore loads models from ``~/.aws/models`` (``aws configure add-model`` writes there)
    and ``AWS_DATA_PATH`` first: one can give ``get-function`` DeleteFunction's HTTP call."""
    home = {"HOME": str(tmp_path)}
    read = ["lambda", "get-function", "--function-name", "prod-api"]
    assert classify_run("aws", read, home) is None
    (tmp_path / ".aws" / "models").mkdir(parents=True)
    assert classify_run("aws", read, home) is None  # an empty folder renames nothing
    (tmp_path / ".aws" / "models" / "lambda").mkdir()
    change = classify_run("aws", read, home)
    assert change is not None and change.unknown and "~/.aws/models" in change.label
    other = tmp_path / "other"
    other.mkdir()
    change = classify_run("aws", read, {"HOME": str(other), "AWS_DATA_PATH": "/tmp/models"})
    assert change is not None and change.label.startswith("aws lambda get-function")
    assert "AWS_DATA_PATH" in REPORTED
