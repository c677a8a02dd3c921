"""Configuration: one frozen record, read from the environment and the command line."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from attrs import field, frozen

from iaccode.tools.base import ToolLimits

MODELS: dict[str, str] = {
    "claude-sonnet-5-5": "Claude Sonnet 5.5",
    "claude-opus-5-5": "Claude Opus 5.5",
    "claude-haiku-5-5": "Claude Haiku 5.5",
}
"""Models offered in the session's model option (id -> display name)."""

DEFAULT_MODEL = "claude-sonnet-5-5"


class ConfigError(ValueError):
    """A setting has a value we cannot use; the message names the variable."""


@frozen
class Config:
    home: Path
    """Data dir (IAC_CODE_HOME, default ~/.iac-code): logs/ and sessions/ live here."""
    model: str = DEFAULT_MODEL
    """Model id for new sessions (IAC_CODE_MODEL)."""
    model_script: Path | None = None
    """A model script to play instead of calling the API (IAC_CODE_MODEL_SCRIPT)."""
    max_tokens: int = 16_000
    """Output token limit per model request (IAC_CODE_MAX_TOKENS)."""
    thinking_budget: int = 4_000
    """Extended-thinking budget per request, 0 = off (IAC_CODE_THINKING_BUDGET)."""
    max_retries: int = 4
    """Retries of a failed model request before its stream starts (IAC_CODE_MAX_RETRIES)."""
    request_timeout: float = 600.0
    """Seconds a model request may go without data before it fails."""
    max_turn_requests: int = 100
    """Model requests one prompt may make before it stops (IAC_CODE_MAX_TURN_REQUESTS)."""
    context_window: int = 200_000
    """Context window size reported in usage updates."""
    max_line_bytes: int = 128 * 1024 * 1024
    """Longest JSON-RPC line accepted (IAC_CODE_MAX_LINE_BYTES); longer lines get an error."""
    drain_timeout: float = 1.0
    """At shutdown, how long cancelled work may take to answer before it is cut off."""
    tool_limits: ToolLimits = field(factory=ToolLimits)
    """Bounds on tool calls (output sizes, timeouts)."""
    log_level: str = "INFO"
    """Level of the log on stderr and in home/logs/iaccode.log (IAC_CODE_LOG_LEVEL)."""

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "iaccode.log"

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **overrides: object) -> Config:
        def integer(name: str, default: int) -> int:
            raw = env.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = int(raw)
            except ValueError:
                raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
            if value < 0:
                raise ConfigError(f"{name} must not be negative, got {raw!r}")
            return value

        script = env.get("IAC_CODE_MODEL_SCRIPT")
        values: dict[str, object] = {
            "home": Path(env.get("IAC_CODE_HOME") or Path.home() / ".iac-code").expanduser(),
            "model": env.get("IAC_CODE_MODEL") or DEFAULT_MODEL,
            "model_script": Path(script) if script else None,
            "max_tokens": integer("IAC_CODE_MAX_TOKENS", 16_000),
            "thinking_budget": integer("IAC_CODE_THINKING_BUDGET", 4_000),
            "max_retries": integer("IAC_CODE_MAX_RETRIES", 4),
            "max_turn_requests": integer("IAC_CODE_MAX_TURN_REQUESTS", 100),
            "max_line_bytes": integer("IAC_CODE_MAX_LINE_BYTES", 128 * 1024 * 1024),
            "log_level": (env.get("IAC_CODE_LOG_LEVEL") or "INFO").upper(),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)  # type: ignore[arg-type]
        if config.thinking_budget and config.thinking_budget >= config.max_tokens:
            raise ConfigError("IAC_CODE_THINKING_BUDGET must be below IAC_CODE_MAX_TOKENS")
        return config
