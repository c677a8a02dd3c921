"""One rule for which environment variables are secrets (iaccode/secret_env.py), used both for
what a command sees and for what a transcript keeps."""

from __future__ import annotations

import pytest

from iaccode.secret_env import is_secret, secret_values, without_secrets
from iaccode.tools.command_env import command_env

SECRETS = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_AUTH_HEADER", "GITHUB_TOKEN",
           "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MY_SECRET", "SLACK_WEBHOOK_SECRET_URL",
           "lower_case_token", "anthropic_auth_header", "IAC_CODE_SERVE_TOKEN"]
PLAIN = ["HOME", "PATH", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "KEYBOARD", "TOKENIZER_PATH",
         "TF_LOG"]


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
    seen = command_env(hold_credentials=False)  # the cloud credentials' own rule aside
    assert not set(SECRETS) & set(seen)
    assert all(seen[name] == env[name] for name in PLAIN)
    assert without_secrets(env) == {name: env[name] for name in PLAIN}
    scrubbed = secret_values(env)
    assert sorted(scrubbed) == sorted(env[name] for name in SECRETS)
    ours = secret_values()
    assert ours == sorted(set(ours), key=lambda value: (-len(value), value))
    assert set(scrubbed) <= set(secret_values())  # ours, by default


def test_short_values_are_not_scrubbed_and_longer_ones_go_first() -> None:
    env = {"A_TOKEN": "short", "B_KEY": "a-long-key", "C_KEY": "a-long-key-with-more"}
    assert secret_values(env) == ["a-long-key-with-more", "a-long-key"]
