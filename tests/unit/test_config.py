"""Config: config.toml < environment < command line; every bad value is a clear ConfigError."""

from __future__ import annotations

from pathlib import Path

import pytest

from iaccode.choices import MODES, THOUGHT_LEVELS
from iaccode.config import DEFAULT_MODEL, Config, ConfigError
from iaccode.tools.base import ToolLimits

FULL = """\
model = "claude-opus-5-5"
mode = "plan"
thought_level = "high"
max_turn_requests = 7
max_tokens = 9000
compaction_threshold = 0.75
log_level = "debug"

[tools]
bash_timeout = 10
bash_max_timeout = 20.5
web_timeout = 5
output_chars = 1234
"""


def home_with(tmp_path: Path, text: str | None) -> dict[str, str]:
    """An env whose IAC_CODE_HOME is a fresh dir, holding config.toml with ``text`` if given."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if text is not None:
        (home / "config.toml").write_text(text, encoding="utf-8")
    return {"IAC_CODE_HOME": str(home)}


def config_error(env: dict[str, str], **overrides: object) -> str:
    with pytest.raises(ConfigError) as caught:
        Config.from_env(env, **overrides)
    return str(caught.value)


# --- reading ---------------------------------------------------------------------------------


def test_missing_file_gives_the_defaults(tmp_path: Path) -> None:
    env = home_with(tmp_path, None)
    config = Config.from_env(env)
    assert config.home == tmp_path / "home"
    assert config.model == DEFAULT_MODEL
    assert config.default_mode == "default"
    assert config.thought_level == "medium"
    assert config.max_turn_requests == 100
    assert config.max_tokens == 16_000
    assert config.compaction_threshold == 0.9
    assert config.log_level == "INFO"
    assert config.tool_limits == ToolLimits()


def test_missing_home_dir_is_fine(tmp_path: Path) -> None:
    config = Config.from_env({"IAC_CODE_HOME": str(tmp_path / "nowhere")})
    assert config.model == DEFAULT_MODEL


def test_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    assert Config.from_env(home_with(tmp_path, "")) == Config.from_env(home_with(tmp_path, None))


def test_every_key_is_read(tmp_path: Path) -> None:
    config = Config.from_env(home_with(tmp_path, FULL))
    assert config.model == "claude-opus-5-5"
    assert config.default_mode == "plan"
    assert config.thought_level == "high"
    assert config.max_turn_requests == 7
    assert config.max_tokens == 9000
    assert config.compaction_threshold == 0.75
    assert config.log_level == "DEBUG"
    limits = config.tool_limits
    assert (limits.bash_timeout, limits.bash_max_timeout) == (10.0, 20.5)
    assert isinstance(limits.bash_timeout, float)
    assert limits.web_timeout == 5.0
    assert limits.output_chars == 1234
    # limits the file does not name keep their defaults
    assert limits.read_max_bytes == ToolLimits().read_max_bytes


def test_partial_tools_table_keeps_other_limits(tmp_path: Path) -> None:
    config = Config.from_env(home_with(tmp_path, "[tools]\noutput_chars = 99\n"))
    assert config.tool_limits == ToolLimits(output_chars=99)


def test_web_allowed_hosts_from_the_file(tmp_path: Path) -> None:
    config = Config.from_env(
        home_with(
            tmp_path, '[tools]\nweb_allowed_hosts = ["Docs.Intranet:443", "[fd00::1]:8080"]\n'
        )
    )
    assert config.tool_limits.web_allowed_hosts == {"docs.intranet:443", "[fd00::1]:8080"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"docs:443"', "tools.web_allowed_hosts must be an array of strings, got 'docs:443'"),
        ("[443]", "tools.web_allowed_hosts must be an array of strings, got [443]"),
        ('["docs"]', '"host:port" entries, like "docs.intranet:443"; \'docs\' is not'),
        ('["docs:0"]', "'docs:0' is not"),
        ('[":80"]', "':80' is not"),
    ],
)
def test_bad_web_allowed_hosts_are_named(tmp_path: Path, value: str, expected: str) -> None:
    message = config_error(home_with(tmp_path, f"[tools]\nweb_allowed_hosts = {value}\n"))
    assert expected in message


def test_secret_names_from_the_file(tmp_path: Path) -> None:
    config = Config.from_env(home_with(tmp_path, '[secrets]\nextra = ["VAULTISH", "ACME_*"]\n'))
    assert config.secret_names == ("VAULTISH", "ACME_*")


@pytest.mark.parametrize("value", ['"ACME_*"', '["A*B"]', '["with space"]', '["*"]'])
def test_bad_secret_names_are_named(tmp_path: Path, value: str) -> None:
    message = config_error(home_with(tmp_path, f"[secrets]\nextra = {value}\n"))
    assert "secrets.extra" in message


def test_integer_threshold_is_a_float(tmp_path: Path) -> None:
    config = Config.from_env(home_with(tmp_path, "compaction_threshold = 1\n"))
    assert config.compaction_threshold == 1.0
    assert isinstance(config.compaction_threshold, float)


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_is_accepted(tmp_path: Path, mode: str) -> None:
    assert Config.from_env(home_with(tmp_path, f'mode = "{mode}"\n')).default_mode == mode


@pytest.mark.parametrize("level", THOUGHT_LEVELS)
def test_every_thought_level_is_accepted(tmp_path: Path, level: str) -> None:
    config = Config.from_env(home_with(tmp_path, f'thought_level = "{level}"\n'))
    assert config.thought_level == level


def test_unknown_model_id_is_allowed(tmp_path: Path) -> None:
    config = Config.from_env(home_with(tmp_path, 'model = "claude-next"\n'))
    assert config.model == "claude-next"


def test_home_from_an_override_is_where_the_file_is_read(tmp_path: Path) -> None:
    home = tmp_path / "elsewhere"
    home.mkdir()
    (home / "config.toml").write_text("max_tokens = 5000\n", encoding="utf-8")
    config = Config.from_env(home_with(tmp_path, None), home=home)
    assert (config.home, config.max_tokens) == (home, 5000)


# --- precedence ------------------------------------------------------------------------------


def test_environment_beats_the_file(tmp_path: Path) -> None:
    env = home_with(tmp_path, FULL) | {
        "IAC_CODE_MODEL": "claude-haiku-5-5",
        "IAC_CODE_MODE": "bypass",
        "IAC_CODE_THOUGHT_LEVEL": "off",
        "IAC_CODE_MAX_TURN_REQUESTS": "3",
        "IAC_CODE_MAX_TOKENS": "8000",
        "IAC_CODE_COMPACTION_THRESHOLD": "0.5",
        "IAC_CODE_LOG_LEVEL": "warning",
    }
    config = Config.from_env(env)
    assert config.model == "claude-haiku-5-5"
    assert config.default_mode == "bypass"
    assert config.thought_level == "off"
    assert config.max_turn_requests == 3
    assert config.max_tokens == 8000
    assert config.compaction_threshold == 0.5
    assert config.log_level == "WARNING"
    assert config.tool_limits.output_chars == 1234  # no env variable: the file's value stands


def test_empty_environment_variable_counts_as_unset(tmp_path: Path) -> None:
    env = home_with(tmp_path, FULL) | {"IAC_CODE_MAX_TOKENS": "", "IAC_CODE_MODE": ""}
    config = Config.from_env(env)
    assert (config.max_tokens, config.default_mode) == (9000, "plan")


def test_overrides_beat_environment_and_file(tmp_path: Path) -> None:
    env = home_with(tmp_path, FULL) | {
        "IAC_CODE_MODEL": "claude-haiku-5-5",
        "IAC_CODE_MODE": "bypass",
    }
    config = Config.from_env(
        env,
        model="claude-sonnet-5-5",
        default_mode="accept_edits",
        max_tokens=12_000,
        model_script=None,
    )
    assert config.model == "claude-sonnet-5-5"
    assert config.default_mode == "accept_edits"
    assert config.max_tokens == 12_000
    assert config.model_script is None  # None overrides are skipped
    assert config.thought_level == "high"  # from the file, untouched


def test_file_beats_the_defaults_only_where_it_speaks(tmp_path: Path) -> None:
    config = Config.from_env(home_with(tmp_path, "max_tokens = 20000\n"))
    assert config.max_tokens == 20_000
    assert config.max_turn_requests == 100


def test_environment_only_settings_still_work(tmp_path: Path) -> None:
    env = home_with(tmp_path, None) | {
        "IAC_CODE_MODEL_SCRIPT": "script.json",
        "IAC_CODE_MAX_RETRIES": "2",
        "IAC_CODE_MAX_LINE_BYTES": "4096",
    }
    config = Config.from_env(env)
    assert config.model_script == Path("script.json")
    assert (config.max_retries, config.max_line_bytes) == (2, 4096)


# --- errors in config.toml -------------------------------------------------------------------


def test_invalid_toml_names_file_and_line(tmp_path: Path) -> None:
    env = home_with(tmp_path, 'model = "a"\nmax_tokens = = 3\n')
    message = config_error(env)
    assert str(tmp_path / "home" / "config.toml") in message
    assert "not valid TOML" in message
    assert "line 2" in message


def test_unknown_key_is_named_with_the_known_ones(tmp_path: Path) -> None:
    message = config_error(home_with(tmp_path, "max_token = 5\n"))
    assert "config.toml: unknown key 'max_token'" in message
    for key in (
        "model",
        "mode",
        "thought_level",
        "max_turn_requests",
        "max_tokens",
        "compaction_threshold",
        "log_level",
        "[tools]",
    ):
        assert key in message


def test_env_only_setting_is_unknown_in_the_file(tmp_path: Path) -> None:
    message = config_error(home_with(tmp_path, "thinking_budget = 0\n"))
    assert "unknown key 'thinking_budget'" in message  # thought_level replaced it


def test_unknown_tools_key_is_named(tmp_path: Path) -> None:
    message = config_error(home_with(tmp_path, "[tools]\nbash_timeot = 5\n"))
    assert "config.toml: unknown key 'tools.bash_timeot'" in message
    assert "bash_timeout, bash_max_timeout, web_timeout, output_chars" in message


def test_unknown_table_is_an_unknown_key(tmp_path: Path) -> None:
    assert "unknown key 'extras'" in config_error(home_with(tmp_path, "[extras]\na = 1\n"))


def test_tools_that_is_not_a_table(tmp_path: Path) -> None:
    message = config_error(home_with(tmp_path, "tools = 3\n"))
    assert "config.toml: tools must be a table, got an integer" in message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('max_tokens = "big"', "config.toml: max_tokens must be an integer, got a string"),
        ("max_tokens = true", "config.toml: max_tokens must be an integer, got a boolean"),
        ("max_tokens = 1.5", "config.toml: max_tokens must be an integer, got a float"),
        ("max_turn_requests = false", "max_turn_requests must be an integer, got a boolean"),
        ("model = 5", "config.toml: model must be a string, got an integer"),
        ("mode = true", "config.toml: mode must be a string, got a boolean"),
        ("thought_level = [1]", "config.toml: thought_level must be a string, got an array"),
        ('compaction_threshold = "0.5"', "compaction_threshold must be a number, got a string"),
        ("compaction_threshold = true", "compaction_threshold must be a number, got a boolean"),
        ("log_level = 10", "config.toml: log_level must be a string, got an integer"),
        ("model = 1979-05-27", "config.toml: model must be a string, got a date or time"),
        ("[tools]\noutput_chars = true", "tools.output_chars must be an integer, got a boolean"),
        ('[tools]\nbash_timeout = "2m"', "tools.bash_timeout must be a number, got a string"),
    ],
)
def test_wrong_type_is_named(tmp_path: Path, line: str, expected: str) -> None:
    assert expected in config_error(home_with(tmp_path, line + "\n"))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("max_tokens = -1", "config.toml: max_tokens must not be negative, got -1"),
        ("max_turn_requests = -5", "config.toml: max_turn_requests must not be negative, got -5"),
        ("compaction_threshold = 0", "compaction_threshold must be more than 0 and at most 1"),
        ("compaction_threshold = 1.5", "compaction_threshold must be more than 0 and at most 1"),
        ("compaction_threshold = -0.1", "compaction_threshold must be more than 0 and at most 1"),
        ("compaction_threshold = nan", "compaction_threshold must be a finite number"),
        ('model = ""', "config.toml: model must not be empty"),
        (
            'mode = "fast"',
            "config.toml: mode must be one of default, accept_edits, plan, bypass, got 'fast'",
        ),
        ('mode = "Plan"', "mode must be one of"),
        (
            'thought_level = "max"',
            "config.toml: thought_level must be one of off, low, medium, high, got 'max'",
        ),
        ('log_level = "loud"', "config.toml: log_level must be one of"),
        (
            "[tools]\nbash_timeout = 0",
            "config.toml: tools.bash_timeout must be more than 0, got 0.0",
        ),
        ("[tools]\nweb_timeout = -3", "tools.web_timeout must be more than 0"),
        ("[tools]\nbash_max_timeout = inf", "tools.bash_max_timeout must be a finite number"),
        ("[tools]\noutput_chars = 0", "config.toml: tools.output_chars must be at least 1, got 0"),
        (
            "[tools]\nbash_timeout = 900",
            "tools.bash_timeout (900) must not exceed tools.bash_max_timeout (600)",
        ),
    ],
)
def test_out_of_range_value_is_named(tmp_path: Path, line: str, expected: str) -> None:
    assert expected in config_error(home_with(tmp_path, line + "\n"))


def test_non_utf8_file(tmp_path: Path) -> None:
    env = home_with(tmp_path, None)
    (tmp_path / "home" / "config.toml").write_bytes(b'model = "\xff"\n')
    message = config_error(env)
    assert "config.toml" in message
    assert "UTF-8" in message


def test_unreadable_file(tmp_path: Path) -> None:
    env = home_with(tmp_path, None)
    (tmp_path / "home" / "config.toml").mkdir()
    message = config_error(env)
    assert "config.toml: cannot read it" in message


# --- errors in the environment and overrides -------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("IAC_CODE_MAX_TOKENS", "big", "IAC_CODE_MAX_TOKENS must be a whole number, got 'big'"),
        ("IAC_CODE_MAX_TOKENS", "-1", "IAC_CODE_MAX_TOKENS must not be negative, got -1"),
        ("IAC_CODE_MAX_TURN_REQUESTS", "1.5", "IAC_CODE_MAX_TURN_REQUESTS must be a whole number"),
        ("IAC_CODE_MAX_RETRIES", "-2", "IAC_CODE_MAX_RETRIES must not be negative"),
        ("IAC_CODE_MAX_LINE_BYTES", "-1", "IAC_CODE_MAX_LINE_BYTES must not be negative"),
        (
            "IAC_CODE_MODE",
            "fast",
            "IAC_CODE_MODE must be one of default, accept_edits, plan, bypass",
        ),
        ("IAC_CODE_THOUGHT_LEVEL", "max", "IAC_CODE_THOUGHT_LEVEL must be one of off, low, medium"),
        ("IAC_CODE_COMPACTION_THRESHOLD", "most", "IAC_CODE_COMPACTION_THRESHOLD must be a number"),
        ("IAC_CODE_COMPACTION_THRESHOLD", "2", "IAC_CODE_COMPACTION_THRESHOLD must be more than 0"),
        ("IAC_CODE_COMPACTION_THRESHOLD", "nan", "IAC_CODE_COMPACTION_THRESHOLD must be a finite"),
        ("IAC_CODE_LOG_LEVEL", "loud", "IAC_CODE_LOG_LEVEL must be one of"),
    ],
)
def test_bad_environment_variable_is_named(
    tmp_path: Path, name: str, raw: str, expected: str
) -> None:
    assert expected in config_error(home_with(tmp_path, None) | {name: raw})


def test_bad_environment_variable_is_reported_even_when_the_file_is_fine(tmp_path: Path) -> None:
    env = home_with(tmp_path, FULL) | {"IAC_CODE_MODE": "fast"}
    assert "IAC_CODE_MODE must be one of" in config_error(env)


def test_bad_override_is_named(tmp_path: Path) -> None:
    env = home_with(tmp_path, None)
    assert "default_mode must be one of" in config_error(env, default_mode="fast")
    assert "max_tokens must be an integer, got a boolean" in config_error(env, max_tokens=True)
    assert "model must not be empty" in config_error(env, model="")


def test_the_environment_cannot_mend_a_bad_file(tmp_path: Path) -> None:
    """The file is checked whole even when the environment overrides the bad key."""
    env = home_with(tmp_path, 'mode = "fast"\n') | {"IAC_CODE_MODE": "plan"}
    assert "config.toml: mode must be one of" in config_error(env)


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


# --- [iac] -------------------------------------------------------------------------------------


def test_infra_changes_are_confirmed_by_default(tmp_path: Path) -> None:
    assert Config.from_env({"IAC_CODE_HOME": str(tmp_path)}).confirm_infra_changes is True


def test_iac_table_turns_the_infra_question_off(tmp_path: Path) -> None:
    env = home_with(tmp_path, "[iac]\nconfirm_infra_changes = false\n")
    assert Config.from_env(env).confirm_infra_changes is False
    assert Config.from_env(env).hold_credentials is True


def test_iac_table_lets_the_credentials_through(tmp_path: Path) -> None:
    env = home_with(tmp_path, "[iac]\nhold_credentials = false\n")
    assert Config.from_env(env).hold_credentials is False
    assert Config.from_env({"IAC_CODE_HOME": str(tmp_path)}).hold_credentials is True


def test_protected_targets_are_globs_kept_as_written(tmp_path: Path) -> None:
    assert Config.from_env({"IAC_CODE_HOME": str(tmp_path)}).protected == ()
    env = home_with(tmp_path, '[iac]\nprotected = ["prod*", "Production"]\n')
    assert Config.from_env(env).protected == ("prod*", "Production")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[iac]\nprotected = "prod"\n', "config.toml: iac.protected must be an array"),
        ('[iac]\nprotected = ["prod", " "]\n', "config.toml: iac.protected must hold globs"),
        (
            '[iac]\nconfirm_infra_changes = "no"\n',
            "config.toml: iac.confirm_infra_changes must be a boolean, got a string",
        ),
        (
            "[iac]\nconfirm_infra_changes = 0\n",
            "config.toml: iac.confirm_infra_changes must be a boolean, got an integer",
        ),
        (
            "[iac]\nconfirm_infra = false\n",
            "config.toml: unknown key 'iac.confirm_infra'; the [iac] keys are "
            "confirm_infra_changes, hold_credentials",
        ),
        ("iac = true\n", "config.toml: iac must be a table, got a boolean"),
    ],
)
def test_bad_iac_settings_are_named(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in config_error(home_with(tmp_path, text))


# -- [serve] (iaccode serve) ----------------------------------------------------------------


def test_serve_table_is_read(tmp_path: Path) -> None:
    env = home_with(
        tmp_path,
        "[serve]\nmax_body_bytes = 1024\nidle_timeout = 5\n"
        'send_timeout = 2.5\nallowed_origins = ["https://ACP.example.com/"]\n'
        'allowed_hosts = ["ACP.example.com"]\nbody_timeout = 7\n',
    )
    serve = Config.from_env(env).serve
    assert (serve.max_body_bytes, serve.idle_timeout, serve.send_timeout) == (1024, 5.0, 2.5)
    assert serve.allowed_origins == frozenset({"https://acp.example.com"})
    assert (serve.allowed_hosts, serve.body_timeout) == (frozenset({"acp.example.com"}), 7.0)
    assert serve.token is None


def test_serve_token_from_a_private_file_and_the_environment(tmp_path: Path) -> None:
    env = home_with(tmp_path, '[serve]\ntoken_file = "token"\n')
    token_file = tmp_path / "home" / "token"
    token_file.write_text("file-token-0123456789\n")
    token_file.chmod(0o600)
    assert Config.from_env(env).serve.token == "file-token-0123456789"
    assert "file-token" not in repr(Config.from_env(env))  # never logged by accident
    env["IAC_CODE_SERVE_TOKEN"] = "env-token-0123456789"
    assert Config.from_env(env).serve.token == "env-token-0123456789"


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    env = home_with(tmp_path, '[serve]\ntoken_file = "token"\n')
    token_file = tmp_path / "home" / "token"
    token_file.write_text("file-token-0123456789\n")
    token_file.chmod(0o640)
    assert "is readable by others: chmod 600 it" in config_error(env)
    token_file.unlink()
    assert "serve.token_file" in config_error(env) and "cannot be read" in config_error(env)


@pytest.mark.parametrize("token", ["short", "has a space in it, long enough"])
def test_a_weak_token_is_refused(tmp_path: Path, token: str) -> None:
    env = {**home_with(tmp_path, None), "IAC_CODE_SERVE_TOKEN": token}
    assert "IAC_CODE_SERVE_TOKEN must be at least 16 printable characters" in config_error(env)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("max_body_bytes = 0", "serve.max_body_bytes must be at least 1"),
        ("idle_timeout = -1", "serve.idle_timeout must be more than 0"),
        ('allowed_origins = ["evil"]', "serve.allowed_origins must hold origins"),
        ('allowed_hosts = ["https://acp.example.com"]', "serve.allowed_hosts must hold host names"),
        ('allowed_hosts = ["acp.example.com:8765"]', "serve.allowed_hosts must hold host names"),
        ("body_timeout = 0", "serve.body_timeout must be more than 0"),
        ("tokenfile = 'x'", "unknown key 'serve.tokenfile'"),
    ],
)
def test_bad_serve_settings_are_named(tmp_path: Path, line: str, expected: str) -> None:
    assert expected in config_error(home_with(tmp_path, f"[serve]\n{line}\n"))
