"""One rule for which environment variables are secrets (iaccode/secret_env.py), used both for
what a command sees and for what a transcript keeps."""

from __future__ import annotations

import pytest

from iaccode.iac.command_env import command_env
from iaccode.iac.credentials import is_credential
from iaccode.secret_env import is_secret, scrubbed, secret_values

SECRETS = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_AUTH_HEADER",
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "DB_PASSWORD",
    "MY_SECRET",
    "SLACK_WEBHOOK_SECRET_URL",
    "lower_case_token",
    "anthropic_auth_header",
    "IAC_CODE_SERVE_TOKEN",
    "PGPASSWORD",
    "MYSQL_PWD",
    "GITHUB_PAT",
    "ci_deploy_pat",
    "TF_TOKEN_app_terraform_io",
    "GOOGLE_CREDENTIALS",
    "MYSQL_ROOT_PASSWD",
    "NPM_CONFIG__AUTH",
]
PLAIN = [
    "HOME",
    "PATH",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "KEYBOARD",
    "TOKENIZER_PATH",
    "TF_LOG",
    "PWD",
    "OLDPWD",
    "TOKENIZERS_PARALLELISM",
    "PATH_INFO",
    "TF_VAR_region",
]


@pytest.mark.parametrize("name", SECRETS)
def test_secret_names(name: str) -> None:
    assert is_secret(name)


@pytest.mark.parametrize("name", PLAIN)
def test_plain_names(name: str) -> None:
    assert not is_secret(name)


def test_commands_and_transcripts_follow_the_same_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {name: f"value-of-{name}" for name in SECRETS + PLAIN}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    seen = command_env()
    assert not set(SECRETS) & set(seen)
    # the cloud credentials (AWS_ACCESS_KEY_ID) have a rule of their own: test_credentials.py
    assert all(seen[name] == env[name] for name in PLAIN if not is_credential(name))
    assert scrubbed(env) == {name: env[name] for name in PLAIN}
    hidden = secret_values(env)
    assert sorted(hidden) == sorted(env[name] for name in SECRETS)
    ours = secret_values()
    assert ours == sorted(set(ours), key=lambda value: (-len(value), value))
    assert set(hidden) <= set(secret_values())  # ours, by default


def test_short_values_are_not_scrubbed_and_longer_ones_go_first() -> None:
    env = {"A_TOKEN": "short", "B_KEY": "a-long-key", "C_KEY": "a-long-key-with-more"}
    assert secret_values(env) == ["a-long-key-with-more", "a-long-key"]


def test_a_url_with_a_password_is_a_secret_and_its_password_is_scrubbed_too() -> None:
    env = {
        "DATABASE_URL": "postgres://app:s3cret-pw@db:5432/app",
        "REDIS_URL": "redis://:r3dis-pw-1@c/0",
        "SITE_URL": "https://user@example.com/",
        "DOCS": "see http://a:b@ and more",
        "HTTPS_PROXY": "http://me:proxy-pass-9@proxy:3128",
    }
    assert scrubbed(env) == {
        "SITE_URL": env["SITE_URL"],
        "DOCS": env["DOCS"],
        "HTTPS_PROXY": env["HTTPS_PROXY"],
    }  # commands need it
    hidden = secret_values(env)
    assert {"s3cret-pw", "r3dis-pw-1", "proxy-pass-9", env["DATABASE_URL"]} <= set(hidden)
    assert env["HTTPS_PROXY"] not in hidden and env["SITE_URL"] not in hidden


def test_declared_names_and_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    import iaccode.secret_env as secret_env

    monkeypatch.setattr(secret_env, "_declared", ())
    assert not is_secret("ACME_ONE") and not is_secret("CORP_LLM")
    secret_env.declare(["acme_*", "CORP_LLM", ""])
    assert is_secret("ACME_ONE") and is_secret("acme_two") and is_secret("CORP_LLM")
    assert not is_secret("ACMEX") and not is_secret("CORP_LLM_URL")


def test_a_held_secret_is_scrubbed_like_a_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    import iaccode.secret_env as secret_env

    monkeypatch.setattr(secret_env, "_held", {})
    secret_env.hold("stored key", "stored-key-from-a-file")
    assert ("stored key", "stored-key-from-a-file") in secret_env.secret_items()
    assert "stored-key-from-a-file" not in secret_values({})  # an explicit env: only its own
