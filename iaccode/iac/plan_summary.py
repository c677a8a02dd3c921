"""Terraform / OpenTofu plans read for the user: what will be destroyed, replaced, created.

A :class:`PlanReader` is fed a command's output as it arrives, in chunks, and keeps only what
the summary needs (one line at a time; a ``show -json`` document whole, up to
``JSON_MAX_BYTES``), so the summary covers the whole output even when the text the model sees
is cut in the middle. Three shapes are understood:

- the human plan (``plan``, ``apply``, ``show PLANFILE``): ``# ADDRESS will be destroyed``
  lines, ``Plan: 1 to add, ...`` (colour codes and all);
- ``plan -json`` (one JSON message per line): ``planned_change`` and ``change_summary``;
- ``show -json PLANFILE`` (one document): its ``resource_changes``.

:func:`runs_plan` says whether a command line runs one of these (parsed as the guard parses).
"""

from __future__ import annotations

import json
import re
from typing import Any

from attrs import define, field

from iaccode.iac.shell import simple_commands

JSON_MAX_BYTES = 64 * 1024 * 1024
"""Largest ``show -json`` document kept for the summary (bigger plans get no summary)."""
TEXT_LINE_MAX = 8 * 1024
"""Of a longer text line only the start is looked at (an address is never that long)."""

_PROGRAMS = frozenset({"terraform", "tofu", "terragrunt"})
_SUBCOMMANDS = frozenset({"plan", "show", "apply", "destroy"})

ORDER = ("delete", "replace", "create", "update", "read", "move", "import", "forget")
"""Actions, most dangerous first: the order of the summary's lines."""
_MARKS = {"delete": "-", "replace": "-/+", "create": "+", "update": "~", "read": "<=",
          "move": "->", "import": "<-", "forget": "."}
_WORDS = {"delete": "destroy", "replace": "replace", "create": "create", "update": "update",
          "read": "read", "move": "move", "import": "import", "forget": "forget"}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TEXT_ACTIONS = [
    (re.compile(r"^\s*# (\S+) will be destroyed"), "delete"),
    (re.compile(r"^\s*# (\S+) (?:must be replaced|is tainted, so must be replaced|will be "
                r"replaced)"), "replace"),
    (re.compile(r"^\s*# (\S+) will be created"), "create"),
    (re.compile(r"^\s*# (\S+) will be updated in-place"), "update"),
    (re.compile(r"^\s*# (\S+) will be read during apply"), "read"),
    (re.compile(r"^\s*# (\S+) has moved to (\S+)"), "move"),
    (re.compile(r"^\s*# (\S+) will be imported"), "import"),
    (re.compile(r"^\s*# (\S+) will no longer be managed"), "forget"),
]
_PLAN_LINE = re.compile(r"^(Plan: .*|No changes\..*)$")
_JSON_ACTIONS = {"create": "create", "update": "update", "delete": "delete",
                 "replace": "replace", "read": "read", "move": "move", "import": "import",
                 "remove": "forget", "forget": "forget"}


def runs_plan(command: str) -> bool:
    """Whether ``command`` runs ``terraform``/``tofu`` ``plan``, ``show``, ``apply`` or
    ``destroy`` (each prints a plan), however it is wrapped or chained."""
    for simple in simple_commands(command):
        words = simple.words
        if words and words[0].rsplit("/", 1)[-1] in _PROGRAMS:
            positional = [word for word in words[1:] if not word.startswith("-")]
            if positional[:1] and positional[0] in _SUBCOMMANDS:
                return True
    return False


@define
class PlanReader:
    """Reads a plan out of output fed in chunks; :meth:`summary` once it is all in."""

    changes: dict[str, str] = field(factory=dict)
    """Address -> action (one of ORDER), in the order met."""
    moved_to: dict[str, str] = field(factory=dict)
    stated: str | None = None
    """Terraform's own count line ("Plan: 2 to add, 1 to change, 2 to destroy.")."""
    _partial: bytearray = field(factory=bytearray)
    _lines: int = 0
    _too_long: bool = False

    def feed(self, data: bytes | bytearray) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._take(data[start:end])
            self._line(bytes(self._partial))
            self._partial.clear()
            self._too_long = False
            start = end + 1
        self._take(data[start:])

    def _take(self, piece: bytes | bytearray) -> None:
        if self._too_long:
            return
        self._partial += piece
        # A JSON document may be one long line; anything else only matters at its start.
        limit = JSON_MAX_BYTES if self._partial[:1] == b"{" else TEXT_LINE_MAX
        if len(self._partial) > limit:
            del self._partial[limit:]
            self._too_long = self._partial[:1] != b"{"
            if not self._too_long:  # a document too big to keep: no summary from it
                self._partial.clear()
                self._too_long = True

    def _line(self, raw: bytes) -> None:
        self._lines += 1
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if text.startswith("{"):
            self._json(text)
            return
        text = _ANSI.sub("", text)
        if "#" in text:
            for pattern, action in _TEXT_ACTIONS:
                if found := pattern.match(text):
                    self.changes[found.group(1)] = action
                    if action == "move":
                        self.moved_to[found.group(1)] = found.group(2)
                    return
        if found := _PLAN_LINE.match(text.strip()):
            self.stated = found.group(1)

    def _json(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if message.get("type") == "planned_change":
            change = message.get("change") or {}
            address = ((change.get("resource") or {}).get("addr"))
            action = _JSON_ACTIONS.get(str(change.get("action")))
            if isinstance(address, str) and action:
                self.changes[address] = action
        elif message.get("type") == "change_summary" and isinstance(message.get("@message"),
                                                                     str):
            self.stated = message["@message"]
        elif isinstance(message.get("resource_changes"), list):
            for resource in message["resource_changes"]:
                self._resource_change(resource)

    def _resource_change(self, resource: Any) -> None:
        if not isinstance(resource, dict) or not isinstance(resource.get("address"), str):
            return
        change = resource.get("change") or {}
        actions = change.get("actions") or []
        if "delete" in actions and "create" in actions:
            action: str | None = "replace"
        elif actions in (["no-op"], []):
            action = "import" if change.get("importing") else None
            if resource.get("previous_address"):
                action = "move"
                self.moved_to[resource["previous_address"]] = resource["address"]
                self.changes[resource["previous_address"]] = "move"
                return
        else:
            action = _JSON_ACTIONS.get(str(actions[0]))
        if action:
            self.changes[resource["address"]] = action

    def summary(self) -> str | None:
        """The summary text, or None when the output named no resource to change (no plan,
        "No changes.", or a plan whose start was cut off: the count line alone says it all)."""
        if self._partial:
            self._line(bytes(self._partial))
            self._partial.clear()
        if not self.changes:
            return None
        counts = {action: 0 for action in ORDER}
        for action in self.changes.values():
            counts[action] += 1
        head = ", ".join(f"{counts[a]} to {verb}" for a, verb in (
            ("create", "add"), ("update", "change"), ("delete", "destroy"),
            ("replace", "replace")))
        extra = ", ".join(f"{counts[a]} to {_WORDS[a]}" for a in ("read", "move", "import",
                                                                   "forget") if counts[a])
        lines = [f"Plan summary: {head}{', ' + extra if extra else ''} "
                 f"(read from all {self._lines} lines of output)."]
        if self.stated:
            lines.append(f"Terraform says: {self.stated}")
        for action in ORDER:
            for address, found in self.changes.items():
                if found == action:
                    target = f" -> {self.moved_to[address]}" if address in self.moved_to else ""
                    lines.append(f"  {_MARKS[action]:>3} {_WORDS[action]:<8} {address}{target}")
        return "\n".join(lines)
