"""Choosing a provider: presets, their variables, the overrides, and the config keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from iaccode.config import Config, ConfigError
from iaccode.llm.anthropic_provider import AnthropicProvider
from iaccode.llm.base import MissingCredentials
from iaccode.llm.offline import ScriptedProvider
from iaccode.llm.openai_provider import OpenAIProvider
from iaccode.llm.providers import PRESETS, endpoint, offered_models
from iaccode.server.provider import make_provider


def config(tmp_path: Path, toml: str = "", **env: str) -> Config:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(toml, encoding="utf-8")
    return Config.from_env({"IAC_CODE_HOME": str(home), **env})


def test_anthropic_is_the_default(tmp_path: Path) -> None:
    chosen = config(tmp_path)
    assert chosen.provider == "anthropic" and chosen.model == "claude-sonnet-5-5"
    assert isinstance(make_provider(chosen), AnthropicProvider)
    assert list(offered_models(chosen)) == list(PRESETS["anthropic"].models)


@pytest.mark.parametrize(
    ("provider", "url", "variable", "model"),
    [
        ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-5.1"),
        (
            "dashscope",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_API_KEY",
            "qwen3-coder-plus",
        ),
        ("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "deepseek-chat"),
        ("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "qwen/qwen3-coder"),
        ("ollama", "http://localhost:11434/v1", None, "qwen3-coder"),
    ],
)
def test_each_preset_knows_its_url_key_and_default_model(
    tmp_path: Path, provider: str, url: str, variable: str | None, model: str
) -> None:
    chosen = config(tmp_path, IAC_CODE_PROVIDER=provider)
    where = endpoint(chosen, {})
    assert (where.base_url, where.key_variable, chosen.model) == (url, variable, model)
    assert isinstance(make_provider(chosen), OpenAIProvider)
    if variable is None:  # ollama: no key needed, nothing missing
        assert where.missing(chosen.model, {}) is None
    else:
        assert variable in str(where.missing(chosen.model, {}))
        assert where.missing(chosen.model, {variable: "k"}) is None


def test_base_url_and_api_key_overrides(tmp_path: Path) -> None:
    chosen = config(
        tmp_path, IAC_CODE_PROVIDER="deepseek", IAC_CODE_BASE_URL="http://gateway.internal/v1"
    )
    where = endpoint(chosen, {"IAC_CODE_API_KEY": "shared"})
    assert where.base_url == "http://gateway.internal/v1"
    assert where.key_variable == "IAC_CODE_API_KEY"
    assert where.api_key({"IAC_CODE_API_KEY": "shared"}) == "shared"
    # api_key_env in config.toml names the variable and beats IAC_CODE_API_KEY.
    named = config(tmp_path, 'provider = "openai"\napi_key_env = "MY_TEAM_KEY"\n')
    where = endpoint(named, {"IAC_CODE_API_KEY": "shared"})
    assert where.key_variable == "MY_TEAM_KEY"
    assert "MY_TEAM_KEY" in str(where.missing(named.model, {"IAC_CODE_API_KEY": "shared"}))


def test_the_anthropic_preset_takes_the_overrides_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("IAC_CODE_API_KEY", "")
    provider = make_provider(config(tmp_path, 'api_key_env = "CLAUDE_KEY"\n'))
    with pytest.raises(MissingCredentials, match="CLAUDE_KEY"):
        provider.check_credentials()
    monkeypatch.setenv("CLAUDE_KEY", "k")
    provider.check_credentials()


def test_models_from_config_replace_the_presets(tmp_path: Path) -> None:
    chosen = config(tmp_path, 'provider = "ollama"\nmodels = ["llama3.3:70b", "qwen3"]\n')
    assert chosen.models == ("llama3.3:70b", "qwen3")
    assert chosen.model == "llama3.3:70b"
    assert offered_models(chosen) == {"llama3.3:70b": "llama3.3:70b", "qwen3": "Qwen3"}
    # A model named in IAC_CODE_MODEL is offered too.
    chosen = config(tmp_path, 'provider = "ollama"\n', IAC_CODE_MODEL="mistral")
    assert chosen.model == "mistral" and "mistral" in offered_models(chosen)


def test_openai_compatible_needs_a_base_url_and_a_model(tmp_path: Path) -> None:
    bare = config(tmp_path, IAC_CODE_PROVIDER="openai_compatible")
    with pytest.raises(MissingCredentials, match="IAC_CODE_BASE_URL"):
        make_provider(bare).check_credentials()
    no_model = config(
        tmp_path,
        IAC_CODE_PROVIDER="openai_compatible",
        IAC_CODE_BASE_URL="http://localhost:8000/v1",
    )
    with pytest.raises(MissingCredentials, match="IAC_CODE_MODEL"):
        make_provider(no_model).check_credentials()
    ready = config(
        tmp_path,
        IAC_CODE_PROVIDER="openai_compatible",
        IAC_CODE_BASE_URL="http://localhost:8000/v1",
        IAC_CODE_MODEL="my-model",
    )
    make_provider(ready).check_credentials()  # a local server needs no key


def test_a_model_script_wins_over_any_provider(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text("[]")
    chosen = config(tmp_path, IAC_CODE_PROVIDER="openai", IAC_CODE_MODEL_SCRIPT=str(script))
    assert isinstance(make_provider(chosen), ScriptedProvider)


@pytest.mark.parametrize(
    ("toml", "env", "expected"),
    [
        ('provider = "bedrock"\n', {}, "provider must be one of anthropic, openai, dashscope"),
        ("", {"IAC_CODE_PROVIDER": "gemini"}, "IAC_CODE_PROVIDER must be one of anthropic"),
        ('base_url = "localhost:8000"\n', {}, "base_url must be an http:// or https:// URL"),
        ('api_key_env = "MY KEY"\n', {}, "api_key_env must be an environment variable's name"),
        ("models = []\n", {}, "models must list at least one model id"),
        ('models = "qwen3"\n', {}, "models must be an array of strings"),
    ],
)
def test_bad_provider_settings_are_named(
    tmp_path: Path, toml: str, env: dict[str, str], expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        config(tmp_path, toml, **env)


def test_provider_on_the_command_line_beats_the_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    chosen = Config.from_env(
        {"IAC_CODE_HOME": str(home), "IAC_CODE_PROVIDER": "openai"}, provider="dashscope"
    )
    assert (chosen.provider, chosen.model) == ("dashscope", "qwen3-coder-plus")
