"""Terraform / OpenTofu plans read for the user: what will be destroyed, replaced, created.

One reading, two ways in, the same :class:`Plan` and the same :meth:`Plan.summary` text:

- :class:`PlanReader` is fed a command's output as it arrives, in chunks, and keeps only what
  the summary needs (one line at a time; a ``show -json`` document whole, up to
  ``JSON_MAX_BYTES``), so the summary covers the whole output even when the text the model
  sees is cut in the middle (the plan summaries of bash output);
- :func:`read_plan_document` reads a parsed ``show -json PLANFILE`` document (the question
  before a plan-bound apply, :mod:`iaccode.iac.plan_step`).

Three shapes of output are understood:

- the human plan (``plan``, ``apply``, ``show PLANFILE``): ``# ADDRESS will be destroyed``
  lines with their ``# (because ...)`` line, ``Plan: 1 to add, ...`` (colour codes and all),
  and the drift section ("Objects have changed outside of Terraform": ``# ADDRESS has
  changed`` / ``has been deleted``);
- ``plan -json`` (one JSON message per line): ``planned_change``, ``resource_drift`` and
  ``change_summary``;
- ``show -json PLANFILE`` (one document): its ``resource_changes`` (with ``action_reason``
  and ``replace_paths``) and ``resource_drift``.

:func:`runs_plan` says whether a command line runs one of these (parsed as the guard parses).
"""

from __future__ import annotations

import json
import re
from typing import Any

from attrs import define, field

from iaccode.iac.plan_step import STALE, explain_failure
from iaccode.iac.shell import simple_commands

JSON_MAX_BYTES = 64 * 1024 * 1024
"""Largest ``show -json`` document kept for the summary (bigger plans get no summary)."""
TEXT_LINE_MAX = 8 * 1024
"""Of a longer text line only the start is looked at (an address is never that long)."""

_PROGRAMS = frozenset({"terraform", "tofu", "terragrunt"})
_SUBCOMMANDS = frozenset({"plan", "show", "apply", "destroy"})

ORDER = ("delete", "replace", "create", "update", "read", "move", "import", "forget")
"""Actions, most dangerous first: the order of the summary's lines."""
_MARKS = {
    "delete": "-",
    "replace": "-/+",
    "create": "+",
    "update": "~",
    "read": "<=",
    "move": "->",
    "import": "<-",
    "forget": ".",
}
_WORDS = {
    "delete": "destroy",
    "replace": "replace",
    "create": "create",
    "update": "update",
    "read": "read",
    "move": "move",
    "import": "import",
    "forget": "forget",
}
_DRIFT_WORDS = {"update": ("~", "changed"), "delete": ("-", "deleted")}

REASONS = {
    "tainted": "tainted",
    "requested": "requested with -replace",
    "cannot_update": "cannot be updated in place",
    "replace_triggered_by": "replace_triggered_by",
    "no_resource_config": "not in the configuration",
    "no_module": "its module is not in the configuration",
    "wrong_repetition": "count or for_each changed",
    "count_index": "its count index is out of range",
    "each_key": "its for_each key is gone",
    "no_move_target": "its moved target is not in the configuration",
}
"""Why Terraform replaces or destroys, in words (the same for every shape of output)."""
_REASON_CODES = {
    # show -json's action_reason, plan -json's reason: both to one of REASONS.
    "replace_because_tainted": "tainted",
    "tainted": "tainted",
    "replace_by_request": "requested",
    "requested": "requested",
    "replace_because_cannot_update": "cannot_update",
    "cannot_update": "cannot_update",
    "replace_by_triggers": "replace_triggered_by",
    "replace_triggered_by": "replace_triggered_by",
    "delete_because_no_resource_config": "no_resource_config",
    "delete_because_no_module": "no_module",
    "delete_because_wrong_repetition": "wrong_repetition",
    "delete_because_count_index": "count_index",
    "delete_because_each_key": "each_key",
    "delete_because_no_move_target": "no_move_target",
}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TEXT_ACTIONS = [
    (re.compile(r"^\s*# (\S+) will be destroyed"), "delete", None),
    (re.compile(r"^\s*# (\S+) is tainted, so must be replaced"), "replace", "tainted"),
    (re.compile(r"^\s*# (\S+) will be replaced, as requested"), "replace", "requested"),
    (
        re.compile(r"^\s*# (\S+) will be replaced due to changes in replace_triggered_by"),
        "replace",
        "replace_triggered_by",
    ),
    (re.compile(r"^\s*# (\S+) (?:must be replaced|will be replaced)"), "replace", "cannot_update"),
    (re.compile(r"^\s*# (\S+) will be created"), "create", None),
    (re.compile(r"^\s*# (\S+) will be updated in-place"), "update", None),
    (re.compile(r"^\s*# (\S+) will be read during apply"), "read", None),
    (re.compile(r"^\s*# (\S+) has moved to (\S+)"), "move", None),
    (re.compile(r"^\s*# (\S+) will be imported"), "import", None),
    (re.compile(r"^\s*# (\S+) will no longer be managed"), "forget", None),
]
_TEXT_DRIFT = re.compile(r"^\s*# (\S+) (?:has changed|has been changed|has been deleted)")
_BECAUSE = [
    (
        re.compile(
            r"^\s*# \(because (?:module\.\S+ is not in configuration|the containing "
            r"module)"
        ),
        "no_module",
    ),
    (re.compile(r"^\s*# \(because \S+ is not in configuration\)"), "no_resource_config"),
    (re.compile(r"^\s*# \(because resource (?:does not use|uses) "), "wrong_repetition"),
    (re.compile(r"^\s*# \(because index \S+ is out of range"), "count_index"),
    (re.compile(r"^\s*# \(because key \S+ is not in for_each map"), "each_key"),
    (
        re.compile(r"^\s*# \(because \S+ was moved to \S+, which is not in configuration"),
        "no_move_target",
    ),
]
_FORCES = re.compile(r"^\s*[-+~]/?[-+~]?\s+(\S+)\s+=.*# forces replacement\s*$")
_DRIFT_START = re.compile(r"^Note: Objects have changed outside of (?:Terraform|OpenTofu)")
_DRIFT_END = (
    "Terraform will perform",
    "OpenTofu will perform",
    "Unless you have made",
    "This is a refresh-only plan",
    "Terraform used the selected",
    "OpenTofu used the selected",
)
_PLAN_LINE = re.compile(r"^(Plan: .*|No changes\..*)$")
_JSON_ACTIONS = {
    "create": "create",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "read": "read",
    "move": "move",
    "import": "import",
    "remove": "forget",
    "forget": "forget",
}


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
class ResourceChange:
    """What a plan does to one resource."""

    action: str
    """One of ORDER."""
    reason: str | None = None
    """A key of REASONS, when Terraform says why."""
    paths: list[str] = field(factory=list)
    """For a replacement: the arguments whose change forces it."""
    moved_to: str | None = None


@define
class Plan:
    """What a plan does, however it was read."""

    changes: dict[str, ResourceChange] = field(factory=dict)
    """Address -> its change, in the order met (no-ops left out)."""
    drift: dict[str, str] = field(factory=dict)
    """Address -> "update" or "delete": what changed outside of Terraform."""
    stated: str | None = None
    """Terraform's own count line ("Plan: 2 to add, 1 to change, 2 to destroy.")."""
    outputs_change: bool = False
    """Only from a document: some output value changes (an apply would write the state)."""
    read_from: str = "the plan"
    """How the summary says it was read ("all 120 lines of output", "the plan file")."""
    stale: bool = False
    """Terraform refused a saved plan as stale ("Saved plan is stale")."""

    def counts(self) -> dict[str, int]:
        counts = {action: 0 for action in ORDER}
        for change in self.changes.values():
            counts[change.action] += 1
        return counts

    @property
    def empty(self) -> bool:
        """Nothing to apply: no resource changes, no output changes, no drift to record."""
        return not self.changes and not self.outputs_change and not self.drift

    def summary(self) -> str | None:
        """The summary text, or None when the plan names no resource to change and no drift
        (no plan, "No changes.", or output whose start was cut off: the count line alone
        says it all)."""
        if self.stale:
            return f"Not applied: {explain_failure(STALE)}"
        if not self.changes and not self.drift:
            return None
        counts = self.counts()
        head = ", ".join(
            f"{counts[a]} to {verb}"
            for a, verb in (
                ("create", "add"),
                ("update", "change"),
                ("delete", "destroy"),
                ("replace", "replace"),
            )
        )
        extra = ", ".join(
            f"{counts[a]} to {_WORDS[a]}" for a in ("read", "move", "import", "forget") if counts[a]
        )
        lines = [
            f"Plan summary: {head}{', ' + extra if extra else ''} (read from {self.read_from})."
        ]
        if self.stated:
            lines.append(f"Terraform says: {self.stated}")
        for action in ORDER:
            for address, change in self.changes.items():
                if change.action == action:
                    lines.append(
                        f"  {_MARKS[action]:>3} {_WORDS[action]:<8} {address}{_detail(change)}"
                    )
        if self.drift:
            lines.append(f"Changed outside of Terraform (drift): {len(self.drift)}")
            for address, action in self.drift.items():
                mark, word = _DRIFT_WORDS.get(action, ("~", "changed"))
                lines.append(f"  {mark:>3} {word:<8} {address}")
        return "\n".join(lines)


def _detail(change: ResourceChange) -> str:
    target = f" -> {change.moved_to}" if change.moved_to else ""
    why = REASONS.get(change.reason or "")
    if why and change.paths:
        why = f"{why}: {', '.join(change.paths)}"
    return f"{target}{f' ({why})' if why else ''}"


def read_plan_document(document: Any) -> Plan:
    """The plan a ``show -json PLANFILE`` document describes."""
    plan = Plan(read_from="the plan file")
    if not isinstance(document, dict):
        return plan
    _take_document(plan, document)
    outputs = document.get("output_changes")
    if isinstance(outputs, dict):
        plan.outputs_change = any(
            isinstance(o, dict) and (o.get("actions") or ["no-op"]) != ["no-op"]
            for o in outputs.values()
        )
    return plan


def _take_document(plan: Plan, document: dict[str, Any]) -> None:
    for resource in document.get("resource_changes") or []:
        _resource_change(plan, resource)
    for resource in document.get("resource_drift") or []:
        if isinstance(resource, dict) and isinstance(resource.get("address"), str):
            actions = (resource.get("change") or {}).get("actions") or []
            if actions and actions != ["no-op"]:
                plan.drift[resource["address"]] = "delete" if "delete" in actions else "update"


def _resource_change(plan: Plan, resource: Any) -> None:
    if not isinstance(resource, dict) or not isinstance(resource.get("address"), str):
        return
    change = resource.get("change") or {}
    actions = change.get("actions") or []
    reason = _REASON_CODES.get(str(resource.get("action_reason")))
    if "delete" in actions and "create" in actions:
        paths = [
            ".".join(str(step) for step in path)
            for path in change.get("replace_paths") or []
            if isinstance(path, list)
        ]
        plan.changes[resource["address"]] = ResourceChange("replace", reason, paths)
        return
    if actions in (["no-op"], []):
        if resource.get("previous_address"):
            plan.changes[resource["previous_address"]] = ResourceChange(
                "move", moved_to=resource["address"]
            )
        elif change.get("importing"):
            plan.changes[resource["address"]] = ResourceChange("import")
        return
    action = _JSON_ACTIONS.get(str(actions[0]))
    if action:
        plan.changes[resource["address"]] = ResourceChange(action, reason)


@define
class PlanReader:
    """Reads a plan out of output fed in chunks; :meth:`plan` or :meth:`summary` once it is
    all in."""

    _plan: Plan = field(factory=Plan)
    _partial: bytearray = field(factory=bytearray)
    _lines: int = 0
    _too_long: bool = False
    _in_drift: bool = False
    _last: str | None = None
    """The address of the last change line (its ``# (because ...)`` line follows it)."""

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
        stripped = text.strip()
        if STALE in text:
            self._plan.stale = True
            return
        if _DRIFT_START.match(stripped):
            self._in_drift = True
            return
        if self._in_drift and stripped.startswith(_DRIFT_END):
            self._in_drift = False
        if "#" in text and self._comment(text):
            return
        if found := _PLAN_LINE.match(stripped):
            self._plan.stated = found.group(1)

    def _comment(self, text: str) -> bool:
        """Take a line with a ``#``: a change, drift, a reason; False when it is none."""
        changes = self._plan.changes
        if self._in_drift:
            if found := _TEXT_DRIFT.match(text):
                self._plan.drift[found.group(1)] = "delete" if "deleted" in text else "update"
                return True
            return False
        for pattern, action, reason in _TEXT_ACTIONS:
            if found := pattern.match(text):
                address = found.group(1)
                moved_to = found.group(2) if action == "move" else None
                changes[address] = ResourceChange(action, reason, moved_to=moved_to)
                self._last = address
                return True
        last = changes.get(self._last or "")
        if last is None:
            return False
        for pattern, reason in _BECAUSE:
            if pattern.match(text):
                last.reason = reason
                return True
        if last.action == "replace" and (found := _FORCES.match(text)):
            last.paths.append(found.group(1))
            return True
        return False

    def _json(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind in ("planned_change", "resource_drift"):
            change = message.get("change") or {}
            address = (change.get("resource") or {}).get("addr")
            action = _JSON_ACTIONS.get(str(change.get("action")))
            if not isinstance(address, str) or not action:
                return
            if kind == "resource_drift":
                self._plan.drift[address] = "delete" if action == "delete" else "update"
            else:
                self._plan.changes[address] = ResourceChange(
                    action, _REASON_CODES.get(str(change.get("reason")))
                )
        elif kind == "change_summary" and isinstance(message.get("@message"), str):
            self._plan.stated = message["@message"]
        elif STALE in str(message.get("@message")):
            self._plan.stale = True
        elif isinstance(message.get("resource_changes"), list):
            _take_document(self._plan, message)

    def plan(self) -> Plan:
        """What was read (the last line too, if it had no newline)."""
        if self._partial:
            self._line(bytes(self._partial))
            self._partial.clear()
        self._plan.read_from = f"all {self._lines} lines of output"
        return self._plan

    def summary(self) -> str | None:
        """The summary text (:meth:`Plan.summary`), or None."""
        return self.plan().summary()
