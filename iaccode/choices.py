"""What a session lets the user choose besides the model: its mode and its thinking level.

The one list of each: config.toml and the environment are checked against them, the server
offers them as config options (and the modes as ACP session modes), the permissions read the
mode, and the providers turn a thinking level into their API's request fields. Stdlib only.
"""

from __future__ import annotations

from typing import NamedTuple


class Choice(NamedTuple):
    id: str
    """What is stored and sent (``accept_edits``)."""
    name: str
    """What the editor shows (``Accept edits``)."""
    description: str | None = None


def _by_id(*choices: Choice) -> dict[str, Choice]:
    return {choice.id: choice for choice in choices}


MODES = _by_id(
    Choice("default", "Default", "Reads inside the project run; edits and commands ask first."),
    Choice("accept_edits", "Accept edits", "File edits inside the project run without asking."),
    Choice("plan", "Plan", "Read-only: edits and commands are refused."),
    Choice(
        "bypass", "Bypass permissions", "Nothing asks: every tool runs, outside the project too."
    ),
)
"""The session modes, in the order the editor shows them (what each allows:
:func:`iaccode.turn.permissions.decide`)."""
DEFAULT_MODE = "default"

THOUGHT_LEVELS = _by_id(
    Choice("off", "Off"),
    Choice("low", "Low"),
    Choice("medium", "Medium"),
    Choice("high", "High"),
)
"""How hard the model thinks before it answers, least first."""
DEFAULT_THOUGHT_LEVEL = "medium"
NO_THINKING = "off"


def thinks(level: str) -> bool:
    """Whether ``level`` asks the model to think (a known level other than off)."""
    return level in THOUGHT_LEVELS and level != NO_THINKING
