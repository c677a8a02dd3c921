"""Configuration: one frozen record, read from config.toml, the environment and the command line.

Each setting is, from lowest to highest precedence: the built-in default, the user's
``$IAC_CODE_HOME/config.toml`` (``~/.iac-code/config.toml``; a missing file is fine), an
``IAC_CODE_*`` environment variable (an empty one counts as unset), a command-line option.
Every key, variable and default is in ``docs/configuration.md`` (the one reference: change it
with the code). Keys are never kept in the Config: the provider reads them.
A value we cannot use is a ConfigError naming the file and key, or the variable.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from attrs import evolve, field, frozen

from iaccode import checks
from iaccode.choices import DEFAULT_MODE, DEFAULT_THOUGHT_LEVEL, MODES, THOUGHT_LEVELS
from iaccode.llm.providers import DEFAULT_PROVIDER, PRESETS, default_model
from iaccode.mcp.config import ServerConfigError, ServerSpec, from_toml
from iaccode.tools.base import ToolLimits

DEFAULT_MODEL = default_model(DEFAULT_PROVIDER, None)
CONFIG_FILE = "config.toml"
"""The user's configuration file, in the home dir."""


MIN_TOKEN_CHARS = 16
"""Shortest bearer token ``iaccode serve`` accepts (a generated one has 43 characters)."""


class ConfigError(ValueError):
    """A setting has a value we cannot use; the message names the file and key, or the variable."""


def _upper(text: str) -> str:
    return text.upper()


@frozen
class ServeSettings:
    """How ``iaccode serve`` listens (config.toml's ``[serve]`` table)."""

    token: str | None = field(default=None, repr=False)
    """The bearer token clients must send (IAC_CODE_SERVE_TOKEN, or ``token_file``); None:
    the server makes one and prints it once."""
    token_path: Path | None = None
    """The ``token_file`` the token was read from (a write to it asks in every mode)."""
    max_body_bytes: int = 4 * 1024 * 1024
    """Largest POST body or WebSocket message accepted (413 / close 1009 past it)."""
    idle_timeout: float = 300.0
    """Seconds a connection may go without a request and without its stream open before it is
    closed (its turns cancelled, its commands ended)."""
    send_timeout: float = 30.0
    """Seconds the agent's messages may wait for a client that is not reading its stream
    before the connection is closed (nothing is dropped from a live stream)."""
    allowed_origins: frozenset[str] = field(factory=frozenset)
    """Browser origins allowed besides the server's own address (``scheme://host[:port]``)."""
    allowed_hosts: frozenset[str] = field(factory=frozenset)
    """Host names (the ``Host`` header) the server answers to besides IP addresses and
    ``localhost``: the name a proxy in front of it passes on (DNS rebinding otherwise)."""
    body_timeout: float = 60.0
    """Seconds a request that passed the token check has to send its whole body (408 past)."""


@frozen
class Config:
    home: Path
    """Data dir (IAC_CODE_HOME, default ~/.iac-code): config.toml, logs/ and sessions/ live here."""
    provider: str = DEFAULT_PROVIDER
    """Which API answers, a preset of ``iaccode.llm.providers`` (config.toml ``provider``,
    IAC_CODE_PROVIDER, ``--provider``)."""
    base_url: str | None = None
    """The API's address instead of the preset's (``base_url``, IAC_CODE_BASE_URL)."""
    api_key_env: str | None = None
    """The environment variable holding the key instead of the preset's (``api_key_env``)."""
    models: tuple[str, ...] | None = None
    """Model ids offered instead of the preset's list (``models``)."""
    model: str = DEFAULT_MODEL
    """Model id for new sessions (config.toml ``model``, IAC_CODE_MODEL, ``--model``); when
    unset, the first of the provider's models."""
    default_mode: str = DEFAULT_MODE
    """Mode of new sessions, one of ``iaccode.choices.MODES`` (config.toml ``mode``,
    IAC_CODE_MODE)."""
    thought_level: str = DEFAULT_THOUGHT_LEVEL
    """Thinking effort of new sessions, one of ``iaccode.choices.THOUGHT_LEVELS``
    (``thought_level``, IAC_CODE_THOUGHT_LEVEL)."""
    model_script: Path | None = None
    """A model script, or a transcript, to play instead of calling the API
    (IAC_CODE_MODEL_SCRIPT, ``--model-script``)."""
    record_path: Path | None = None
    """Write a transcript of everything to this file (``iaccode acp --record PATH``)."""
    recorded_tools: Path | None = None
    """Take bash/web_fetch results from this transcript (IAC_CODE_RECORDED_TOOLS; replays)."""
    max_tokens: int = 16_000
    """Output token limit per model request (``max_tokens``, IAC_CODE_MAX_TOKENS)."""
    max_retries: int = 4
    """Retries of a failed model request before its stream starts (IAC_CODE_MAX_RETRIES)."""
    request_timeout: float = 600.0
    """Seconds a model request may go without data before it fails."""
    max_turn_requests: int = 100
    """Model requests one prompt may make before it stops (``max_turn_requests``,
    IAC_CODE_MAX_TURN_REQUESTS)."""
    context_window: int = 200_000
    """Context window size reported in usage updates."""
    compaction_threshold: float = 0.9
    """Share of the context window (0 < x <= 1) whose use triggers compaction
    (``compaction_threshold``, IAC_CODE_COMPACTION_THRESHOLD)."""
    max_line_bytes: int = 128 * 1024 * 1024
    """Longest JSON-RPC line accepted (IAC_CODE_MAX_LINE_BYTES); longer lines get an error."""
    drain_timeout: float = 1.0
    """At shutdown, how long cancelled work may take to answer before it is cut off."""
    tool_limits: ToolLimits = field(factory=ToolLimits)
    """Bounds on tool calls; config.toml's ``[tools]`` table sets bash_timeout,
    bash_max_timeout, web_timeout, output_chars and web_allowed_hosts."""
    mcp_servers: tuple[ServerSpec, ...] = ()
    """The user's MCP servers (config.toml ``[mcp_servers.NAME]``), for every session; an
    editor's server of the same name replaces one."""
    mcp_startup_timeout: float = 10.0
    """Seconds the first model request of a prompt waits for MCP servers still starting
    (``mcp_startup_timeout``); later ones join at a later prompt."""
    confirm_infra_changes: bool = True
    """Bash commands that change real infrastructure always ask, in every mode (config.toml
    ``[iac] confirm_infra_changes``); False: they are ordinary commands."""
    hold_credentials: bool = True
    """Cloud credentials are kept out of every command's environment and given back by a gate
    to the real CLI it runs (config.toml ``[iac] hold_credentials``)."""
    protected: tuple[str, ...] = ()
    """Globs of the targets (workspaces, kube contexts, Pulumi stacks) whose changes need the
    target's name typed in to go ahead (config.toml ``[iac] protected``)."""
    serve: ServeSettings = field(factory=ServeSettings)
    """``iaccode serve`` settings: config.toml's ``[serve]`` table, IAC_CODE_SERVE_TOKEN."""
    secret_names: tuple[str, ...] = ()
    """More environment variables that are secrets (config.toml ``[secrets] extra``: names or
    ``PREFIX_*`` patterns), kept from commands and replaced in output like the built-in ones."""
    log_level: str = field(default="INFO", converter=_upper)
    """Level of the log on stderr and in home/logs/iaccode.log (``log_level``,
    IAC_CODE_LOG_LEVEL); always upper case."""

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "iaccode.log"

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **overrides: object) -> Config:
        """Defaults < ``<home>/config.toml`` < ``env`` < ``overrides`` (None values are skipped)."""
        overrides = {k: v for k, v in overrides.items() if v is not None}
        home = Path(
            overrides.get("home")
            or env.get("IAC_CODE_HOME")  # type: ignore[arg-type]
            or Path.home() / ".iac-code"
        ).expanduser()
        values: dict[str, object] = {"home": home, **read_config_file(home / CONFIG_FILE)}
        for attr, setting in SETTINGS.items():
            raw = env.get(setting.env) if setting.env else None
            if raw:
                values[attr] = _from_env(setting, raw)
        if script := env.get("IAC_CODE_MODEL_SCRIPT"):
            values["model_script"] = Path(script)
        if recorded := env.get("IAC_CODE_RECORDED_TOOLS"):
            values["recorded_tools"] = Path(recorded)
        if token := env.get("IAC_CODE_SERVE_TOKEN"):
            serve = values.get("serve", ServeSettings())
            assert isinstance(serve, ServeSettings)
            values["serve"] = evolve(serve, token=_checked_token("IAC_CODE_SERVE_TOKEN ", token))
        for attr, value in overrides.items():
            known = SETTINGS.get(attr)
            values[attr] = _from_value(f"{attr} ", value, known) if known else value
        if "model" not in values:
            values["model"] = default_model(
                str(values.get("provider", DEFAULT_PROVIDER)),
                values.get("models"),  # type: ignore[arg-type]
            )
        config = cls(**values)  # type: ignore[arg-type]
        return config


class _Setting(NamedTuple):
    """A setting's config.toml key and environment variable (None: not read there), its kind
    (int, float or str), and what is wrong with a value of that kind (None: nothing)."""

    key: str | None
    env: str | None
    kind: type
    problem: Callable[[Any], str | None]


def _at_least(low: int) -> Callable[[Any], str | None]:
    problem = f"must be at least {low}" if low else "must not be negative"
    return lambda v: None if v >= low else problem


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


def _positive(value: float) -> str | None:
    return None if value > 0 else "must be more than 0"


def _share(value: float) -> str | None:
    return None if 0 < value <= 1 else "must be more than 0 and at most 1"


def _host_ports(hosts: frozenset[str]) -> str | None:
    """Each entry is ``host:port`` (``[v6]:port`` for IPv6) with a port from 1 to 65535."""
    for entry in sorted(hosts):
        host, _, port = entry.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f'must hold "host:port" entries, like "docs.intranet:443"; {entry!r} is not'
    return None


def _log_level(value: str) -> str | None:
    return _one_of(tuple(logging.getLevelNamesMapping()))(value.upper())


def _variable_name(value: str) -> str | None:
    return None if value.isidentifier() else "must be an environment variable's name"


def _model_ids(value: tuple[str, ...]) -> str | None:
    return None if value and all(value) else "must list at least one model id, none empty"


SETTINGS: dict[str, _Setting] = {
    "provider": _Setting("provider", "IAC_CODE_PROVIDER", str, _one_of(tuple(PRESETS))),
    "base_url": _Setting(
        "base_url",
        "IAC_CODE_BASE_URL",
        str,
        lambda v: (
            None if v.startswith(("http://", "https://")) else "must be an http:// or https:// URL"
        ),
    ),
    "api_key_env": _Setting("api_key_env", None, str, _variable_name),
    "models": _Setting("models", None, tuple, _model_ids),
    "model": _Setting("model", "IAC_CODE_MODEL", str, lambda v: None if v else "must not be empty"),
    "default_mode": _Setting("mode", "IAC_CODE_MODE", str, _one_of(tuple(MODES))),
    "thought_level": _Setting(
        "thought_level", "IAC_CODE_THOUGHT_LEVEL", str, _one_of(tuple(THOUGHT_LEVELS))
    ),
    "max_turn_requests": _Setting(
        "max_turn_requests", "IAC_CODE_MAX_TURN_REQUESTS", int, _at_least(0)
    ),
    "max_tokens": _Setting("max_tokens", "IAC_CODE_MAX_TOKENS", int, _at_least(0)),
    "compaction_threshold": _Setting(
        "compaction_threshold", "IAC_CODE_COMPACTION_THRESHOLD", float, _share
    ),
    "log_level": _Setting("log_level", "IAC_CODE_LOG_LEVEL", str, _log_level),
    "mcp_startup_timeout": _Setting("mcp_startup_timeout", None, float, _positive),
    "max_retries": _Setting(None, "IAC_CODE_MAX_RETRIES", int, _at_least(0)),
    "max_line_bytes": _Setting(None, "IAC_CODE_MAX_LINE_BYTES", int, _at_least(0)),
}
"""Config attribute -> where it is read and how it is checked."""

TOOL_SETTINGS: dict[str, _Setting] = {
    "bash_timeout": _Setting("bash_timeout", None, float, _positive),
    "bash_max_timeout": _Setting("bash_max_timeout", None, float, _positive),
    "web_timeout": _Setting("web_timeout", None, float, _positive),
    "output_chars": _Setting("output_chars", None, int, _at_least(1)),
    "web_allowed_hosts": _Setting("web_allowed_hosts", None, frozenset, _host_ports),
}
"""ToolLimits attribute -> its key in config.toml's ``[tools]`` table."""

IAC_SETTINGS: dict[str, _Setting] = {
    "confirm_infra_changes": _Setting("confirm_infra_changes", None, bool, lambda v: None),
    "hold_credentials": _Setting("hold_credentials", None, bool, lambda v: None),
    "protected": _Setting(
        "protected",
        None,
        tuple,
        lambda v: (
            None
            if all(g.strip() for g in v)
            else 'must hold globs, none empty ("prod*", "production")'
        ),
    ),
}
"""Config attribute -> its key in config.toml's ``[iac]`` table."""


def _secret_patterns(names: tuple[str, ...]) -> str | None:
    for name in names:
        if not name.removesuffix("*").replace("_", "a").isalnum() or "*" in name[:-1]:
            return f'must hold variable names or "PREFIX_*" patterns; {name!r} is not'
    return None


SECRET_SETTINGS: dict[str, _Setting] = {
    "extra": _Setting("extra", None, tuple, _secret_patterns),
}
"""Config attribute (``extra``: ``secret_names``) -> its key in config.toml's ``[secrets]``."""


def _origins(origins: frozenset[str]) -> str | None:
    for origin in sorted(origins):
        scheme, sep, rest = origin.rstrip("/").partition("://")
        if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
            return f'must hold origins like "https://acp.example.com"; {origin!r} is not'
    return None


def _host_names(hosts: frozenset[str]) -> str | None:
    for host in sorted(hosts):
        if not host or any(c in host for c in "/:[]@ ") or not host.isprintable():
            return f'must hold host names like "acp.example.com"; {host!r} is not'
    return None


SERVE_SETTINGS: dict[str, _Setting] = {
    "token_file": _Setting("token_file", None, str, lambda v: None if v else "must not be empty"),
    "max_body_bytes": _Setting("max_body_bytes", None, int, _at_least(1)),
    "idle_timeout": _Setting("idle_timeout", None, float, _positive),
    "send_timeout": _Setting("send_timeout", None, float, _positive),
    "allowed_origins": _Setting("allowed_origins", None, frozenset, _origins),
    "allowed_hosts": _Setting("allowed_hosts", None, frozenset, _host_names),
    "body_timeout": _Setting("body_timeout", None, float, _positive),
}
"""ServeSettings attribute (``token_file``: read into ``token``) -> its key in ``[serve]``."""


def _checked_token(label: str, token: str) -> str:
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() or not c.isprintable() for c in token):
        raise ConfigError(
            f"{label}must be at least {MIN_TOKEN_CHARS} printable characters without spaces"
        )
    return token


def _read_token_file(path: Path, file: Path) -> str:
    """The token in ``file``; a ConfigError (naming config.toml) otherwise."""
    label = f"{path}: serve.token_file {str(file)!r} "
    try:
        if file.stat().st_mode & 0o077:
            raise ConfigError(f"{label}is readable by others: chmod 600 it")
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{label}cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{label}is not UTF-8 text") from None
    return _checked_token(label, text)


def _read_table(
    path: Path, name: str, table: object, settings: dict[str, _Setting]
) -> dict[str, Any]:
    """The checked values of one config.toml table (``[tools]``, ``[serve]``)."""
    try:
        table = checks.table(table, f"{path}: {name}", toml=True)
    except checks.Invalid as exc:
        raise ConfigError(str(exc)) from None
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in settings:
            raise ConfigError(
                f"{path}: unknown key '{name}.{key}'; the [{name}] keys are {', '.join(settings)}"
            )
        values[key] = _from_value(f"{path}: {name}.{key} ", value, settings[key])
    return values


def _serve_settings(path: Path, table: object) -> ServeSettings:
    values = _read_table(path, "serve", table, SERVE_SETTINGS)
    if "allowed_origins" in values:  # _from_value lower-cases them; origins are too
        values["allowed_origins"] = frozenset(o.rstrip("/") for o in values["allowed_origins"])
    if "token_file" in values:
        # ~ expanded, relative to the home dir
        token_path = path.parent / Path(values.pop("token_file")).expanduser()
        values["token"] = _read_token_file(path, token_path)
        values["token_path"] = token_path
    return ServeSettings(**values)


_CHECKS: dict[type, Callable[..., Any]] = {
    bool: checks.boolean,
    int: checks.integer,
    float: checks.number,
    str: checks.string,
}


def _from_value(label: str, value: object, setting: _Setting) -> Any:
    """A typed value (from TOML or Python) checked; ``label`` starts the message."""
    where = label.rstrip()
    try:
        if setting.kind is frozenset:  # from TOML: an array of strings
            value = frozenset(v.lower() for v in checks.strings(value, where))  # host names
        elif setting.kind is tuple:  # from TOML: an array of strings, in order
            value = tuple(checks.strings(value, where))
        else:
            value = _CHECKS[setting.kind](value, where, toml=True)
    except checks.Invalid as exc:
        raise ConfigError(str(exc)) from None
    if problem := setting.problem(value):
        raise ConfigError(f"{label}{problem}, got {value!r}")
    return value


def _from_env(setting: _Setting, raw: str) -> Any:
    value: object = raw
    try:
        if setting.kind is not str:
            value = setting.kind(raw)
    except ValueError:
        what = "a whole number" if setting.kind is int else "a number"
        raise ConfigError(f"{setting.env} must be {what}, got {raw!r}") from None
    return _from_value(f"{setting.env} ", value, setting)


def read_config_file(path: Path) -> dict[str, object]:
    """Config attribute -> value from a config.toml (``tool_limits`` from its [tools] table).

    A missing file gives {}; a file we cannot use is a ConfigError naming it and the key.
    """
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:  # the message gives line and column
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    attrs = {s.key: attr for attr, s in SETTINGS.items() if s.key}
    tools = data.pop("tools", {})
    iac = data.pop("iac", {})
    serve = data.pop("serve", None)
    secrets = data.pop("secrets", {})
    values: dict[str, object] = {}
    if "mcp_servers" in data:
        try:
            values["mcp_servers"] = tuple(from_toml(data.pop("mcp_servers")))
        except ServerConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    for key, value in data.items():
        if key not in attrs:
            raise ConfigError(
                f"{path}: unknown key {key!r}; the keys are "
                f"{', '.join(attrs)}, the [tools], [mcp_servers], [iac], "
                "[secrets] and [serve] tables"
            )
        values[attrs[key]] = _from_value(f"{path}: {key} ", value, SETTINGS[attrs[key]])
    values.update(_read_table(path, "iac", iac, IAC_SETTINGS))
    if extra := _read_table(path, "secrets", secrets, SECRET_SETTINGS).get("extra"):
        values["secret_names"] = extra
    limits = _read_table(path, "tools", tools, TOOL_SETTINGS)
    if serve is not None:
        values["serve"] = _serve_settings(path, serve)
    if limits:
        values["tool_limits"] = tool_limits = ToolLimits(**limits)
        if tool_limits.bash_timeout > tool_limits.bash_max_timeout:
            raise ConfigError(
                f"{path}: tools.bash_timeout ({tool_limits.bash_timeout:g}) must not exceed "
                f"tools.bash_max_timeout ({tool_limits.bash_max_timeout:g})"
            )
    return values
