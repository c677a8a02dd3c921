"""Pulumi ``up`` / ``destroy`` held by the gate: the question carries the preview's summary.

    preview_argv(argv)        (verb, pulumi preview --json ...; destroy: destroy --preview-only)
    read_preview(document)    the Plan a ``--json`` preview describes (plan_summary's Plan)
    await handle(exchange)    the gate's handler for ``pulumi``

Pulumi cannot apply a saved preview (its update plans are experimental), so unlike a
Terraform plan the preview shows what the command would do now, and the question says so.
The preview runs with the command's options (``--stack``, ``--cwd``, ``--target``,
``--config``, ...), without ``--yes`` / ``--skip-preview``, bounded by ``PREVIEW_SECONDS``:
when it fails or takes longer, the question shows the command as for any change. A protected
stack (``[iac] protected``) needs its name typed in, as a Terraform workspace does.
"""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path
from typing import Any

import trio

from iaccode.gate import handlers
from iaccode.gate.handlers import Exchange, Op
from iaccode.gate.terraform import Question, ask, command_env
from iaccode.iac.plan_summary import Plan, ResourceChange
from iaccode.iac.target import pulumi_target, title

log = logging.getLogger(__name__)

PREVIEW_SECONDS = 30.0
"""How long the question waits for the preview ("when the CLI can give it quickly")."""

_VERBS = {"up": "up", "update": "up", "destroy": "destroy"}
_DROPPED = frozenset(
    {
        "--yes",
        "-y",
        "--skip-preview",
        "-f",
        "--json",
        "-j",
        "--non-interactive",
        "--preview-only",
        "--refresh",
    }
)
_VALUE_OPTIONS = frozenset(
    {
        "-s",
        "--stack",
        "-C",
        "--cwd",
        "-t",
        "--target",
        "-c",
        "--config",
        "--config-file",
        "-m",
        "--message",
        "--parallel",
        "-p",
        "--replace",
        "--exclude",
        "--policy-pack",
        "--secrets-provider",
        "--color",
        "-v",
        "--verbose",
    }
)
_GLOBAL_VALUE_OPTIONS = frozenset(
    {"-C", "--cwd", "--color", "-v", "--verbose", "--profiling", "--tracing"}
)
_OPS = {
    "create": "create",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
    "read": "read",
    "import": "import",
    "import-replacement": "replace",
    "discard": "forget",
    "read-discard": "forget",
}


def _verb(argv: list[str]) -> tuple[int, str] | None:
    """Where the verb is and which (``up`` or ``destroy``), past the global options."""
    index = 1
    while index < len(argv):
        word = argv[index]
        if word.startswith("-"):
            index += 2 if word in _GLOBAL_VALUE_OPTIONS else 1
            continue
        return (index, _VERBS[word]) if word in _VERBS else None
    return None


def preview_argv(argv: list[str]) -> tuple[str, list[str]] | None:
    """(``up`` or ``destroy``, the preview of what ``argv`` (``pulumi up|update|destroy
    ...``) would do); None when it is not one of those."""
    found = _verb(argv)
    if found is None:
        return None
    index, verb = found
    kept: list[str] = []
    rest = argv[index + 1 :]
    skip = False
    for position, word in enumerate(rest):
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in _DROPPED:
            continue
        kept.append(word)
        if word in _VALUE_OPTIONS and position + 1 < len(rest):
            kept.append(rest[position + 1])
            skip = True
    head = argv[:index]
    if verb == "destroy":
        return verb, [*head, "destroy", "--preview-only", "--json", "--non-interactive", *kept]
    return verb, [*head, "preview", "--json", "--non-interactive", *kept]


def read_preview(document: Any) -> Plan:
    """The changes of a ``pulumi preview --json`` document, by resource (type and name)."""
    plan = Plan(read_from="pulumi preview")
    steps = document.get("steps") if isinstance(document, dict) else None
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict) or not isinstance(step.get("urn"), str):
            continue
        action = _OPS.get(str(step.get("op")))
        if action is None:
            continue
        parts = step["urn"].split("::")
        address = f"{parts[-2]} {parts[-1]}" if len(parts) >= 2 else step["urn"]
        reasons = [str(r) for r in step.get("replaceReasons") or [] if isinstance(r, str)]
        known = plan.changes.get(address)
        if known is not None and known.action == "replace":  # its create/delete halves
            known.paths.extend(r for r in reasons if r not in known.paths)
            known.reason = known.reason or ("cannot_update" if reasons else None)
        elif known is None or action == "replace":
            plan.changes[address] = ResourceChange(
                action, "cannot_update" if reasons else None, reasons
            )
    return plan


async def handle(exchange: Exchange) -> Op:
    """The question for a held Pulumi change, naming its stack; for ``up`` / ``destroy`` with
    the preview's summary when it comes in time (else the command, as for any change)."""
    argv = list(exchange.request.argv)
    found = preview_argv(argv)
    plan: Plan | None = None
    if found is not None:
        with trio.move_on_after(PREVIEW_SECONDS):
            ran = await exchange.run(found[1])
            document = _json(ran.stdout) if ran.status == 0 else None
            # No steps is no preview (not an empty one): an output we cannot read asks.
            readable = isinstance(document, dict) and isinstance(document.get("steps"), list)
            plan = read_preview(document) if readable else None
            if plan is None:
                log.info("pulumi preview failed (%s): %s", ran.status, ran.stderr[-500:])
    if found is not None and plan is not None and plan.empty:
        return exchange.refuse(
            f"No changes: pulumi {found[0]} has nothing to do (the preview "
            "is empty), so nothing was asked and nothing run.",
            0,
        )
    env = await command_env(exchange)
    target = await trio.to_thread.run_sync(pulumi_target, argv, Path(exchange.request.cwd), env)
    what = exchange.request.change.label if exchange.request.change else "pulumi"
    detail = f"What runs on Allow once: `{shlex.join(argv)}`."
    if plan is not None:
        detail += (
            " The preview shows what it would do now; Pulumi cannot bind the update to "
            f"it, so what runs is Pulumi's plan at that moment:\n\n{plan.summary()}"
        )
    refusal = await ask(
        exchange, Question(title(f"pulumi {found[0]}" if found else what, target), detail, target)
    )
    if refusal is not None:
        return exchange.refuse(refusal)
    if plan is None:
        return exchange.exec()
    return exchange.exec(
        message=f"iac-code: running what the user approved after the "
        f"preview: {(plan.summary() or '').splitlines()[0]}"
    )


def _json(text: str) -> Any:
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None


handlers.register("pulumi", handle)
