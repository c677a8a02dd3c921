"""The keys ``iaccode login`` saves (iaccode/llm/stored_keys.py) and how providers use them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from iaccode.config import Config
from iaccode.llm import stored_keys
from iaccode.llm.providers import auth_methods, endpoint


@pytest.fixture(autouse=True)
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never the developer's own keyring: a machine without one."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


def test_saved_read_and_forgotten(tmp_path: Path) -> None:
    assert not stored_keys.is_stored(tmp_path, "anthropic")
    where = stored_keys.save(tmp_path, "anthropic", "sk-ant-1")
    assert where == str(tmp_path / "credentials.toml")
    stored_keys.save(tmp_path, "openai", "sk-oa-2")
    assert stat.S_IMODE((tmp_path / "credentials.toml").stat().st_mode) == 0o600
    assert (
        stored_keys.stored_key(tmp_path, "anthropic"),
        stored_keys.stored_key(tmp_path, "openai"),
    ) == ("sk-ant-1", "sk-oa-2")
    assert stored_keys.forget(tmp_path, "anthropic") is True
    assert stored_keys.forget(tmp_path, "anthropic") is False
    assert stored_keys.stored_key(tmp_path, "anthropic") is None
    assert stored_keys.stored_key(tmp_path, "openai") == "sk-oa-2"
    assert stored_keys.forget(tmp_path, "openai") is True
    assert not (tmp_path / "credentials.toml").exists()


def test_a_file_others_could_read_is_replaced_by_one_they_cannot(tmp_path: Path) -> None:
    file = tmp_path / "credentials.toml"
    file.write_text('[anthropic]\napi_key = "old"\n')
    os.chmod(file, 0o644)
    stored_keys.save(tmp_path, "anthropic", "sk-new")
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stored_keys.stored_key(tmp_path, "anthropic") == "sk-new"


def test_a_change_on_disk_is_seen_at_the_next_read(tmp_path: Path) -> None:
    stored_keys.save(tmp_path, "anthropic", "sk-first")
    assert stored_keys.stored_key(tmp_path, "anthropic") == "sk-first"
    (tmp_path / "credentials.toml").write_text('[anthropic]\napi_key = "sk-edited-by-hand"\n')
    assert stored_keys.stored_key(tmp_path, "anthropic") == "sk-edited-by-hand"


@pytest.mark.parametrize(
    "text",
    [
        "[anthropic\napi_key = 1",
        "\xff\xfe",
        "api_key = 'x'\n",
        '[anthropic]\napi_key = ""\n',
        "[anthropic]\napi_key = 5\n",
    ],
)
def test_a_damaged_file_holds_no_key_and_a_login_replaces_it(tmp_path: Path, text: str) -> None:
    (tmp_path / "credentials.toml").write_bytes(text.encode("latin-1"))
    assert stored_keys.stored_key(tmp_path, "anthropic") is None
    assert not stored_keys.is_stored(tmp_path, "anthropic")
    stored_keys.save(tmp_path, "anthropic", "sk-fresh")
    assert stored_keys.stored_key(tmp_path, "anthropic") == "sk-fresh"


@pytest.mark.parametrize(
    "key", ["", "two words", "tab\there", "ключ", "line\nbreak", 'quote"and\\backslash x']
)
def test_what_is_not_a_key_is_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError):
        stored_keys.save(tmp_path, "anthropic", key)
    assert not (tmp_path / "credentials.toml").exists()


def test_a_key_with_toml_special_characters_reads_back_the_same(tmp_path: Path) -> None:
    key = 'sk-"quoted"\\back#hash=eq[br]'
    stored_keys.save(tmp_path, "anthropic", key)
    assert stored_keys.stored_key(tmp_path, "anthropic") == key


def test_the_environment_wins_over_the_stored_key(tmp_path: Path) -> None:
    stored_keys.save(tmp_path, "openai", "sk-stored")
    where = endpoint(Config(home=tmp_path, provider="openai"))
    assert where.api_key({}) == "sk-stored"
    assert where.api_key({"OPENAI_API_KEY": "sk-env"}) == "sk-env"
    assert where.missing("gpt-5.1", {}) is None
    stored_keys.forget(tmp_path, "openai")
    problem = where.missing("gpt-5.1", {})
    assert problem is not None and "iaccode login" in problem


def test_auth_methods_offer_terminal_login_only_to_clients_that_run_it(tmp_path: Path) -> None:
    config = Config(home=tmp_path)
    assert [m["id"] for m in auth_methods(config)] == ["anthropic-api-key"]
    methods = auth_methods(config, terminal=True)
    assert [m["id"] for m in methods] == ["anthropic-api-key", "iaccode-login"]
    assert methods[1]["type"] == "terminal" and methods[1]["args"] == ["login"]
    assert auth_methods(Config(home=tmp_path, model_script=tmp_path / "s.json")) == (
        auth_methods(config)
    )  # a recording and its replay (on a script) answer alike
    assert (
        auth_methods(Config(home=tmp_path, provider="ollama", model="qwen3"), terminal=True) == []
    )
