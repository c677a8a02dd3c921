"""Which variables are cloud credentials: held back from commands, given back by a gate."""

from __future__ import annotations

import pytest

from iaccode.iac.command_env import command_env
from iaccode.iac.credentials import held, is_credential
from iaccode.secret_env import scrubbed

CREDENTIALS = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
    "ALICLOUD_ACCESS_KEY",
    "ALICLOUD_SECRET_KEY",
    "ARM_CLIENT_SECRET",
    "ARM_CLIENT_ID",
    "ARM_ACCESS_KEY",
    "AZURE_CLIENT_SECRET",
    "AZURE_STORAGE_CONNECTION_STRING",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CREDENTIALS",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
    "TF_TOKEN_app_terraform_io",
    "DIGITALOCEAN_TOKEN",
    "HCLOUD_TOKEN",
    "PULUMI_ACCESS_TOKEN",
    "VAULT_TOKEN",
    "CLOUDFLARE_API_TOKEN",
    "aws_secret_access_key",
]
NOT_CREDENTIALS = [
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "ALIBABA_CLOUD_REGION_ID",
    "ALICLOUD_REGION",
    "ARM_SUBSCRIPTION_ID",
    "ARM_TENANT_ID",
    "AZURE_SUBSCRIPTION_ID",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_REGION",
    "KUBECONFIG",
    "TF_LOG",
    "HOME",
    "PATH",
]


@pytest.mark.parametrize("name", CREDENTIALS)
def test_credentials(name: str) -> None:
    assert is_credential(name)


@pytest.mark.parametrize("name", NOT_CREDENTIALS)
def test_what_chooses_or_places_is_no_credential(name: str) -> None:
    assert not is_credential(name)


def test_held_and_the_rest_split_the_environment() -> None:
    env = {"AWS_SECRET_ACCESS_KEY": "s", "AWS_PROFILE": "prod", "HOME": "/h"}
    assert held(env) == {"AWS_SECRET_ACCESS_KEY": "s"}
    assert scrubbed(env, secrets=False, also=is_credential) == {"AWS_PROFILE": "prod", "HOME": "/h"}


def test_commands_get_no_credentials_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a-secret-by-both-rules")
    monkeypatch.setenv("AWS_PROFILE", "prod")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_a-secret-but-no-credential")
    monkeypatch.setenv("IAC_CODE_GATE_TOKEN", "from-a-parent-agent")
    held_back = command_env()
    assert "AWS_ACCESS_KEY_ID" not in held_back and "AWS_SECRET_ACCESS_KEY" not in held_back
    assert held_back["AWS_PROFILE"] == "prod"
    given = command_env(hold_credentials=False)
    assert given["AWS_ACCESS_KEY_ID"] == "AKIAEXAMPLE"
    assert given["AWS_SECRET_ACCESS_KEY"] == "a-secret-by-both-rules"
    assert "GITHUB_TOKEN" not in given and "IAC_CODE_GATE_TOKEN" not in given
