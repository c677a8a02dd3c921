"""What may legitimately differ between a recording and its replay, made equal.

Session ids and message ids (by order of appearance), timestamps, the working directory and
data dir of the machine, and the agent's version string are replaced by placeholders before
comparing.
"""

from __future__ import annotations

import json
import re
from typing import Any

SESSION_ID = re.compile(r"sess_[0-9a-f]{32}")
MESSAGE_ID = re.compile(r"msg_[0-9a-f]{32}")
"""A model message's ``messageId`` (``turn.transcript.new_message_id``): new in every run."""
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")


class Normalizer:
    """One per side of a comparison: it numbers that side's session ids as it meets them."""

    def __init__(self, paths: dict[str, str]) -> None:
        # Longest first, so a path is not half-replaced by one of its prefixes.
        self._paths = sorted(
            ((p, name) for p, name in paths.items() if p),
            reverse=True,
            key=lambda item: len(item[0]),
        )
        self._sessions: dict[str, str] = {}
        self._messages: dict[str, str] = {}

    def __call__(self, message: Any) -> Any:
        text = json.dumps(message, ensure_ascii=False, sort_keys=True)
        for path, name in self._paths:
            text = text.replace(path, name)
        text = SESSION_ID.sub(self._session, text)
        text = MESSAGE_ID.sub(self._message, text)
        text = TIMESTAMP.sub("<time>", text)
        normal = json.loads(text)
        if isinstance(normal, dict):
            info = (normal.get("result") or {}) if isinstance(normal.get("result"), dict) else {}
            if isinstance(info.get("agentInfo"), dict) and "version" in info["agentInfo"]:
                info["agentInfo"]["version"] = "<version>"
        return normal

    def translate(self, other: Normalizer) -> dict[str, str]:
        """This side's session ids -> the other side's ids for the same placeholder."""
        theirs = {placeholder: real for real, placeholder in other._sessions.items()}
        return {
            mine: theirs[placeholder]
            for mine, placeholder in self._sessions.items()
            if placeholder in theirs
        }

    def _message(self, match: re.Match[str]) -> str:
        return self._messages.setdefault(match.group(0), f"<message-{len(self._messages) + 1}>")

    def _session(self, match: re.Match[str]) -> str:
        return self._sessions.setdefault(match.group(0), f"<session-{len(self._sessions) + 1}>")


def first_difference(expected: Any, actual: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, as ``path: expected X, got Y`` (None if equal)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            here = f"{path}.{key}" if path else key
            if key not in actual:
                return f"{here}: missing (expected {_short(expected[key])})"
            if key not in expected:
                return f"{here}: unexpected (got {_short(actual[key])})"
            found = first_difference(expected[key], actual[key], here)
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (a, b) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{path}: expected {len(expected)} items, got {len(actual)}"
        return None
    if expected != actual:
        return f"{path or 'message'}: expected {_short(expected)}, got {_short(actual)}"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."
