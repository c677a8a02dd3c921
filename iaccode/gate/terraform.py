"""Approve the plan, not the command: the gate's handler for Terraform / OpenTofu / Terragrunt
changes (registered for ``terraform``, ``tofu`` and ``terragrunt``).

A gate (:mod:`iaccode.gate`) holds every ``terraform`` / ``tofu`` / ``terragrunt`` run that
changes something and hands it to :func:`handle`, which works through the gate's
:class:`~iaccode.gate.handlers.Exchange` (helpers run in the command's own folder and
environment):

1. ``apply`` without a plan file and ``destroy``: run the matching ``plan -out=FILE`` (FILE in
   a private folder of ours; :mod:`iaccode.iac.plan_step`); ``apply PLANFILE``: copy the
   user's file there. Either way the bytes are hashed.
2. ``show -json`` of that copy, read with the plan summaries' reader
   (:func:`iaccode.iac.plan_summary.read_plan_document`). An empty plan asks nothing and
   applies nothing.
3. The gate's question (:mod:`iaccode.turn.gate_questions`) names the target
   (:mod:`iaccode.iac.target`) in its title and carries the summary (destroys and
   replacements first, with Terraform's reasons) and the plan file's hash. A protected target
   (``[iac] protected``) needs its name typed in (an elicitation); without an editor that can
   show one, it is refused.
4. On approval: the copy is hashed again (and the user's plan file, which must not have
   changed since the question); a mismatch is refused. Then the gate execs ``apply COPY``:
   exactly what was shown. A state that moved meanwhile makes Terraform refuse the stale plan;
   the bash output then says so in plain words (the plan summaries' reader).

Anything that cannot be bound to one plan (``run --all``, words after the plan file, ``import``,
``state rm``) is asked for as a command, like any other change.

Limits: the copy lives in a folder only our user can read, but the model's commands run as
that user too; a process of theirs that rewrites it between the second hash and Terraform
opening it is not caught (a window of milliseconds, after the user approved). The plan files
are removed when the agent exits (they hold the plan's values, sensitive ones too).
"""

from __future__ import annotations

import atexit
import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio
from attrs import evolve, frozen

from iaccode.gate import handlers
from iaccode.gate.handlers import Exchange, Op
from iaccode.host.scratch import process_folder, remove_folder
from iaccode.iac.plan_step import ChangeCall, digest, read_change
from iaccode.iac.plan_summary import Plan, read_plan_document
from iaccode.iac.target import Target, protected_name, terraform_target, title

log = logging.getLogger(__name__)

PROGRAMS = ("terraform", "tofu", "terragrunt")
_ENV_NAMES = (
    "TF_WORKSPACE",
    "TF_DATA_DIR",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "ALIBABA_CLOUD_REGION_ID",
    "ALICLOUD_REGION",
    "ALIBABA_CLOUD_PROFILE",
    "ALICLOUD_PROFILE",
    "ARM_SUBSCRIPTION_ID",
    "GOOGLE_PROJECT",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
    "GOOGLE_REGION",
    "GCLOUD_REGION",
    "CLOUDSDK_COMPUTE_REGION",
    "KUBE_CTX",
    "KUBECONFIG",
    "HELM_KUBECONTEXT",
    "PULUMI_STACK",
    "HOME",
)
"""The command's variables the target is named from."""


@frozen
class Question:
    """What the gate's question shows: the target in ``title``, the plan in ``detail``."""

    title: str
    detail: str
    target: Target


def question(
    call: ChangeCall, plan: Plan, data: bytes, target: Target, env: Mapping[str, str] | None = None
) -> Question:
    """The target in the title, the plan and its hash below (and the ``TF_CLI_ARGS*``
    variables that add to what Terraform runs)."""
    summary = plan.summary() or (
        "No resource changes; output values change (the apply writes them to the state)."
    )
    added = "".join(
        f"\nSet in the environment (Terraform adds it): {name}={value}"
        for name, value in sorted((env or {}).items())
        if name.startswith("TF_CLI_ARGS") and value.strip()
    )
    detail = (
        f"What runs on Allow once is this saved plan, and nothing else:\n\n{summary}\n\n"
        f"Plan file: sha256 {digest(data)[:16]}… ({len(data):,} bytes). It is applied "
        "from a private copy; a plan file changed after this question is refused."
        f"{added}"
    )
    return Question(title(call.command, target), detail, target)


async def handle(exchange: Exchange) -> Op:
    """The gate's op for a held Terraform run (see the module's docstring): anything this
    handler cannot bind to a plan is asked for as a command."""
    call = read_change(exchange.request.argv)
    if call is None or call.problem is not None:
        if call is not None:
            log.info("not bound to a plan: %s", call.problem)
        return await handlers.ask_then_exec(exchange)
    folder = Path(tempfile.mkdtemp(prefix="plan-", dir=plans_folder()))
    return await _handle(exchange, call, folder)


async def _handle(exchange: Exchange, call: ChangeCall, scratch: Path) -> Op:
    copy = scratch / "approved.tfplan"
    cwd = Path(exchange.request.cwd)
    original: Path | None = None
    if call.plan_file is None:
        planned = await exchange.run(call.plan_argv(copy))
        if planned.status != 0:
            return exchange.refuse(
                f"iac-code: the plan step (`{call.program} plan -out=...` with the command's "
                f"options) failed, so nothing was asked and nothing applied:\n"
                f"{_tail(planned.stderr or planned.stdout)}",
                planned.status or 1,
            )
    else:
        original = call.folder(cwd) / call.plan_file
        try:
            data = await trio.Path(original).read_bytes()
        except OSError as exc:
            return exchange.refuse(
                f"iac-code: cannot read the plan file {call.plan_file}: {exc.strerror or exc}", 1
            )
        await trio.Path(copy).write_bytes(data)
    try:
        data = await trio.Path(copy).read_bytes()
    except OSError as exc:
        return exchange.refuse(
            f"iac-code: the plan step (`{call.program} plan -out=...`) made "
            f"no plan file ({exc.strerror or exc}), so nothing was asked and "
            "nothing applied.",
            1,
        )
    shown = await exchange.run(call.show_argv(copy))
    document = _json(shown.stdout) if shown.status == 0 else None
    if document is None:
        return exchange.refuse(
            f"iac-code: `{call.program} show -json` could not read the "
            f"plan, so nothing was applied:\n"
            f"{_tail(shown.stderr or shown.stdout)}",
            1,
        )
    plan = read_plan_document(document)
    if plan.empty and document.get("errored") is not True:
        return exchange.refuse(
            f"No changes: {call.command} has nothing to apply (the plan is "
            "empty), so nothing was asked and nothing applied.",
            0,
        )
    env = await command_env(exchange)
    target = await trio.to_thread.run_sync(terraform_target, call.folder(cwd), env)
    if exchange.protected:  # what Terraform itself says, whatever the files and variables say
        named = await exchange.run([*call.head, "workspace", "show"])
        if named.status == 0 and named.stdout.strip():
            target = evolve(target, workspace=named.stdout.strip())
    asked = question(call, plan, data, target, env)
    refusal = await ask(exchange, asked)
    if refusal is not None:
        return exchange.refuse(refusal)
    changed = await _changed(copy, original, data)
    if changed is not None:
        return exchange.refuse(changed)
    summary = plan.summary() or "output values only"
    return exchange.exec(
        call.apply_argv(copy),
        f"iac-code: applying the saved plan the user approved (sha256 "
        f"{digest(data)[:16]}…): {summary.splitlines()[0]}",
    )


async def ask(exchange: Exchange, asked: Question) -> str | None:
    """The gate's question for ``asked``; for a target a glob of ``[iac] protected`` matches,
    its name typed in. None: approved, else what the model is told."""
    return await exchange.ask(
        asked.detail, title=asked.title, confirm=protected_name(asked.target, exchange.protected)
    )


async def command_env(exchange: Exchange) -> dict[str, str]:
    """The variables of the command's environment the target is named from (``env -0`` run
    through the gate: the command may have set them itself); empty when ``env`` fails."""
    ran = await exchange.run(["env", "-0"])
    if ran.status != 0:
        log.info("env -0 through the gate failed (%s): the target from the files only", ran.status)
        return {}
    found = dict(item.split("=", 1) for item in ran.stdout.split("\0") if "=" in item)
    return {
        name: value
        for name, value in found.items()
        if name in _ENV_NAMES or name.startswith("TF_CLI_ARGS")
    }


_plans: Path | None = None


def plans_folder() -> Path:
    """This agent's private folder (0700) for the plans it applies: the apply the gate execs
    reads its plan after the handler returned, so the files stay until the agent exits."""
    global _plans
    if _plans is None:
        _plans = process_folder("plans")
        atexit.register(remove_folder, _plans)
    return _plans


async def _changed(copy: Path, original: Path | None, data: bytes) -> str | None:
    """Why the approved plan can no longer be applied, or None: our copy and the user's file
    must hold the bytes shown."""
    try:
        now = await trio.Path(copy).read_bytes()
        theirs = await trio.Path(original).read_bytes() if original is not None else data
    except OSError as exc:
        return f"iac-code: the approved plan file cannot be read again ({exc}); nothing applied."
    for which, found in ((original, theirs), ("the private copy", now)):
        if digest(found) != digest(data):
            return (
                f"iac-code: the plan file ({which}) changed after the user approved it "
                f"(sha256 {digest(data)[:16]}… then, {digest(found)[:16]}… now), so it "
                "was not applied. Make a new plan and ask again."
            )
    return None


def _json(text: str) -> dict[str, Any] | None:
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _tail(text: str, lines: int = 20) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join(kept)


for _program in PROGRAMS:
    handlers.register(_program, handle)
