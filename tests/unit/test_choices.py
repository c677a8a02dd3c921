"""The one list of modes and thinking levels (iaccode/choices.py) is what every part uses."""

from __future__ import annotations

import pytest

from iaccode.choices import DEFAULT_MODE, DEFAULT_THOUGHT_LEVEL, MODES, THOUGHT_LEVELS, thinks
from iaccode.config import Config, ConfigError
from iaccode.llm.anthropic_provider import THINKING_BUDGETS
from iaccode.server.options import ACP_MODES


def test_the_acp_modes_are_the_modes() -> None:
    assert [(mode.id, mode.name, mode.description) for mode in ACP_MODES.values()] == [
        (mode.id, mode.name, mode.description) for mode in MODES.values()
    ]
    assert list(MODES) == ["default", "accept_edits", "plan", "bypass"]


def test_every_level_but_off_thinks_and_has_a_budget() -> None:
    assert list(THOUGHT_LEVELS) == ["off", "low", "medium", "high"]
    assert [level for level in THOUGHT_LEVELS if thinks(level)] == list(THINKING_BUDGETS)
    assert not thinks("off") and not thinks("extreme")


def test_config_accepts_exactly_these(tmp_path: object) -> None:
    env = {"IAC_CODE_HOME": str(tmp_path)}
    config = Config.from_env(env)
    assert (config.default_mode, config.thought_level) == (DEFAULT_MODE, DEFAULT_THOUGHT_LEVEL)
    with pytest.raises(ConfigError, match="must be one of default, accept_edits, plan, bypass"):
        Config.from_env({**env, "IAC_CODE_MODE": "yolo"})
    with pytest.raises(ConfigError, match="must be one of off, low, medium, high"):
        Config.from_env({**env, "IAC_CODE_THOUGHT_LEVEL": "max"})
