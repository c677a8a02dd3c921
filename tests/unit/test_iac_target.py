"""The target a change touches, named from files and the environment (iaccode/iac/target.py),
and the protected globs matched against it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from iaccode.iac.target import (
    Target,
    kube_target,
    protected_name,
    pulumi_target,
    terraform_target,
    title,
)
from tests.support.terraform import install_terraform

S3_MODULE = """
terraform {
  backend "s3" {
    bucket = "acme-state"
    key    = "prod.tfstate"
    region = "eu-west-1"
    access_key = "AKIAEXAMPLEKEY"
  }
}
provider "aws" {
  region = "eu-west-1"
}
provider "aws" {
  alias  = "us"
  region = "us-east-1"
}
resource "aws_s3_bucket" "logs" {}
resource "google_storage_bucket" "b" {}
"""


def test_the_title_of_the_issue_from_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text(S3_MODULE)
    target = terraform_target(tmp_path, {"TF_WORKSPACE": "prod", "GOOGLE_PROJECT": "acme-1"})
    assert title("terraform apply", target) == (
        "terraform apply · workspace prod · s3 acme-state/prod.tfstate · "
        "aws eu-west-1, us-east-1 · google project acme-1"
    )
    assert "AKIA" not in title("x", target), "never a credential of the backend"


def test_what_init_configured_wins_and_the_environment_fills_in(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text(
        'terraform {\n  backend "gcs" {}\n}\nprovider "aws" {\n  region = var.region\n}\n'
        'resource "azurerm_resource_group" "g" {}\n'
    )
    (tmp_path / ".terraform").mkdir()
    (tmp_path / ".terraform" / "environment").write_text("staging")
    (tmp_path / ".terraform" / "terraform.tfstate").write_text(
        json.dumps(
            {
                "version": 3,
                "backend": {
                    "type": "gcs",
                    "config": {
                        "bucket": "tf-state",
                        "prefix": "env/staging",
                        "credentials": "{secret json}",
                    },
                },
            }
        )
    )
    target = terraform_target(
        tmp_path,
        {"AWS_REGION": "ap-southeast-1", "AWS_PROFILE": "ops", "ARM_SUBSCRIPTION_ID": "sub-9"},
    )
    assert target.parts() == [
        "workspace staging",
        "gcs tf-state/env/staging",
        "aws ap-southeast-1 profile ops",
        "azurerm subscription sub-9",
    ]


def test_hcp_terraform_terragrunt_and_an_http_backend_with_a_password(tmp_path: Path) -> None:
    cloud = tmp_path / "cloud"
    cloud.mkdir()
    (cloud / "main.tf").write_text(
        'terraform {\n  cloud {\n    organization = "acme"\n'
        '    workspaces {\n      name = "payments-prod"\n    }\n'
        "  }\n}\n"
    )
    assert terraform_target(cloud, {}).backend == "HCP Terraform acme/payments-prod"
    grunt = tmp_path / "grunt"
    grunt.mkdir()
    (grunt / "terragrunt.hcl").write_text(
        'remote_state {\n  backend = "oss"\n  config = {\n    bucket = "state"\n'
        '    prefix = "live"\n    key = "${path_relative_to_include()}/tf.tfstate"\n  }\n}\n'
    )
    assert (
        terraform_target(grunt, {"ALIBABA_CLOUD_REGION_ID": "cn-hangzhou"}).backend
        == "oss state/live"
    )
    http = tmp_path / "http"
    (http / ".terraform").mkdir(parents=True)
    (http / ".terraform" / "terraform.tfstate").write_text(
        json.dumps(
            {
                "backend": {
                    "type": "http",
                    "config": {"address": "https://user:pw@state.example/x?token=t"},
                }
            }
        )
    )
    assert terraform_target(http, {}).backend == "http https://state.example/x"


def test_a_workspace_of_the_real_terraform(tmp_path: Path) -> None:
    terraform = str(install_terraform(tmp_path / "bin"))
    module = tmp_path / "module"
    module.mkdir()
    (module / "main.tf").write_text('resource "terraform_data" "a" {}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("TF_WORKSPACE", "TF_DATA_DIR")}
    for argv in (["init", "-input=false"], ["workspace", "new", "prod-eu"]):
        done = subprocess.run(
            [terraform, *argv], cwd=module, env=env, capture_output=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
    target = terraform_target(module, env)
    assert target.parts() == [
        "workspace prod-eu",
        "local terraform.tfstate.d/prod-eu/terraform.tfstate",
    ]
    assert protected_name(target, ["prod*"]) == ("workspace", "prod-eu")
    assert terraform_target(module, {**env, "TF_WORKSPACE": "dev"}).workspace == "dev"


def test_kube_contexts(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: prod-eu # the main one\n")
    other = tmp_path / "other"
    other.write_text("apiVersion: v1\ncontexts: []\n")
    env = {"KUBECONFIG": f"{other}{os.pathsep}{config}"}
    assert kube_target(["kubectl", "delete", "pod", "x"], env) == Target(kube_context="prod-eu")
    assert kube_target(
        ["kubectl", "--context=dev", "-n", "web", "apply", "-f", "."], env
    ).parts() == ["context dev", "namespace web"]
    assert (
        kube_target(["helm", "upgrade", "r", ".", "--kube-context", "stage"], env).kube_context
        == "stage"
    )
    assert (
        kube_target(["helm", "uninstall", "r"], {**env, "HELM_KUBECONTEXT": "ci"}).kube_context
        == "ci"
    )
    assert (
        kube_target(["kubectl", "--kubeconfig", str(other), "delete", "ns", "a"], env).kube_context
        is None
    )


def test_pulumi_stacks(tmp_path: Path) -> None:
    project = tmp_path / "infra"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: shop\nruntime: python\n")
    home = tmp_path / "pulumi-home"
    key = hashlib.sha1(str(project / "Pulumi.yaml").encode()).hexdigest()
    (home / "workspaces").mkdir(parents=True)
    (home / "workspaces" / f"shop-{key}-workspace.json").write_text('{"stack": "production"}')
    env = {"PULUMI_HOME": str(home)}
    assert pulumi_target(["pulumi", "up", "--yes"], project, env).stack == "production"
    assert pulumi_target(["pulumi", "destroy", "-s", "dev"], project, env).stack == "dev"
    assert pulumi_target(["pulumi", "-C", "infra", "up"], tmp_path, env).stack == "production"


def test_protected_globs_match_whole_names_case_sensitively() -> None:
    globs = ["prod*", "production"]
    assert protected_name(Target(workspace="default", kube_context="production"), globs) == (
        "kube context",
        "production",
    )
    assert protected_name(Target(stack="prod-eu"), globs) == ("stack", "prod-eu")
    assert protected_name(Target(workspace="preprod"), globs) is None
    assert protected_name(Target(workspace="Prod"), globs) is None
    assert protected_name(Target(providers=("kubernetes context prod-1",)), globs) == (
        "kube context",
        "prod-1",
    )


def test_a_name_from_a_file_cannot_write_the_question(tmp_path: Path) -> None:
    (tmp_path / ".terraform").mkdir()
    (tmp_path / ".terraform" / "environment").write_text(
        "dev\n\nAll checks passed: safe to allow\u202e\x1b[2K"
    )
    shown = title("terraform destroy", terraform_target(tmp_path, {}))
    assert "\n" not in shown and "\u202e" not in shown and "\x1b" not in shown
    assert shown.startswith("terraform destroy · workspace dev??All checks passed")
