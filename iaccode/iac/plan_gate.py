"""Approve the plan, not the command: the gate's handler for Terraform / OpenTofu / Terragrunt
changes.

A gate (issue 21) holds every ``terraform`` / ``tofu`` / ``terragrunt`` run that changes
something and hands it to :func:`handle`, which works through the gate (:class:`Exchange`):

1. ``apply`` without a plan file and ``destroy``: run the matching ``plan -out=FILE`` (FILE in
   a private folder of ours; :mod:`iaccode.iac.plan_step`); ``apply PLANFILE``: copy the
   user's file there. Either way the bytes are hashed.
2. ``show -json`` of that copy, read with the plan summaries' reader
   (:func:`iaccode.iac.plan_summary.read_plan_document`). An empty plan asks nothing and
   applies nothing.
3. The question names the target (:mod:`iaccode.iac.target`) in its title and carries the
   summary (destroys and replacements first, with Terraform's reasons), the plan file's
   hash and the command. A protected target (``[iac] protected``) needs its name typed in
   (an elicitation); without an editor that can show one, it is refused.
4. On approval: the copy is hashed again (and the user's plan file, which must not have
   changed since the question); a mismatch is refused. Then the gate runs ``apply COPY``:
   exactly what was shown. A state that moved meanwhile makes Terraform refuse the stale plan;
   the bash output then says so in plain words (the plan summaries' reader).

Anything that cannot be bound to one plan (``run --all``, words after the plan file) is asked
for as a command, like any other change.

Limits: the copy lives in a folder only our user can read, but the model's commands run as
that user too; a process of theirs that rewrites it between the second hash and Terraform
opening it is not caught (a window of milliseconds, after the user approved).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import trio
from attrs import evolve, frozen

from iaccode.iac.plan_step import ChangeCall, digest, read_change
from iaccode.iac.plan_summary import Plan, read_plan_document
from iaccode.iac.target import Target, protected_name, terraform_target, title

log = logging.getLogger(__name__)

_ENV_NAMES = ("TF_WORKSPACE", "TF_DATA_DIR", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE",
              "ALIBABA_CLOUD_REGION_ID", "ALICLOUD_REGION", "ALIBABA_CLOUD_PROFILE",
              "ALICLOUD_PROFILE", "ARM_SUBSCRIPTION_ID", "GOOGLE_PROJECT",
              "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT",
              "GOOGLE_REGION", "GCLOUD_REGION", "CLOUDSDK_COMPUTE_REGION", "KUBE_CTX",
              "KUBECONFIG", "HOME")
"""The command's variables the target is named from."""


class Ran(Protocol):
    """A helper's run through the gate."""

    status: int
    stdout: str
    stderr: str


class Exchange(Protocol):
    """One held run, as this handler works with it (the gate's ``Exchange`` of issue 21)."""

    @property
    def argv(self) -> list[str]:
        """What the program got, after every expansion."""
        ...

    @property
    def cwd(self) -> Path: ...

    @property
    def env(self) -> Mapping[str, str]:
        """The command's environment (the names of ``_ENV_NAMES`` at least)."""
        ...

    async def run(self, argv: list[str]) -> Ran:
        """Run a helper (``plan``, ``show``) where the command runs, with its environment."""
        ...

    async def ask(self, title: str, detail: str) -> str | None:
        """The permission question; None: allowed, else what the model is told."""
        ...

    async def confirm_name(self, title: str, detail: str, what: str, name: str
                           ) -> str | None:
        """A protected target: the user types ``name``; None: typed exactly, else what the
        model is told (declined, another name, an editor without elicitation)."""
        ...


@frozen
class Apply:
    """Run ``argv`` as the real program (the gate execs it); ``message`` comes first, for the
    model."""

    argv: list[str]
    message: str


@frozen
class Finish:
    """End the held run without running it: ``message`` for the model, exit ``status``."""

    message: str
    status: int = 1


Outcome = Apply | Finish
Asked = Outcome | None
"""None: not ours (the gate asks with the command as for any change)."""


@frozen
class Question:
    title: str
    detail: str
    target: Target


def question(call: ChangeCall, plan: Plan, data: bytes, target: Target,
             command: list[str], env: Mapping[str, str] | None = None) -> Question:
    """What the user is asked: the target in the title, the plan and its hash below (and
    the ``TF_CLI_ARGS*`` variables that add to what Terraform runs)."""
    summary = plan.summary() or (
        "No resource changes; output values change (the apply writes them to the state).")
    added = "".join(f"\nSet in the environment (Terraform adds it): {name}={value}"
                    for name, value in sorted((env or {}).items())
                    if name.startswith("TF_CLI_ARGS") and value.strip())
    detail = (f"This applies a saved plan (it changes real infrastructure):\n\n{summary}\n\n"
              f"Plan file: sha256 {digest(data)[:16]}… ({len(data):,} bytes). What you approve "
              "is exactly this plan: it is applied from a private copy, and a plan file "
              f"changed after this question is refused.\nCommand: {' '.join(command)}{added}")
    return Question(title(call.command, target), detail, target)


async def handle(exchange: Exchange, scratch: Path, protected: tuple[str, ...] = ()
                 ) -> Asked:
    """What to do with a held Terraform run (see the module's docstring); None when it is
    not an apply or destroy this handler can bind to a plan. ``scratch``: a private folder
    (0700) for the plan, which the apply the gate runs after this returns still reads: the
    caller removes it when the command is over (:func:`plan_folder`)."""
    argv = list(exchange.argv)
    call = read_change(argv)
    if call is None or call.problem is not None:
        if call is not None:
            log.info("not bound to a plan: %s", call.problem)
        return None
    folder = Path(tempfile.mkdtemp(prefix="plan-", dir=scratch))
    return await _handle(exchange, call, argv, folder, protected)


def plan_folder() -> Path:
    """A new private folder (0700) for the plans of one command; remove it when it is over."""
    return Path(tempfile.mkdtemp(prefix="iaccode-plans-"))


async def _handle(exchange: Exchange, call: ChangeCall, argv: list[str], scratch: Path,
                  protected: tuple[str, ...]) -> Outcome:
    copy = scratch / "approved.tfplan"
    original: Path | None = None
    if call.plan_file is None:
        planned = await exchange.run(call.plan_argv(copy))
        if planned.status != 0:
            return Finish(f"iac-code: the plan step (`{call.program} plan -out=...` with the "
                          f"command's options) failed, so nothing was asked and nothing "
                          f"applied:\n{_tail(planned.stderr or planned.stdout)}",
                          planned.status or 1)
    else:
        original = call.folder(exchange.cwd) / call.plan_file
        try:
            data = await trio.Path(original).read_bytes()
        except OSError as exc:
            return Finish(f"iac-code: cannot read the plan file {call.plan_file}: "
                          f"{exc.strerror or exc}")
        await trio.Path(copy).write_bytes(data)
    data = await trio.Path(copy).read_bytes()
    shown = await exchange.run(call.show_argv(copy))
    document = _json(shown.stdout) if shown.status == 0 else None
    if document is None:
        return Finish(f"iac-code: `{call.program} show -json` could not read the plan, so "
                      f"nothing was applied:\n{_tail(shown.stderr or shown.stdout)}")
    plan = read_plan_document(document)
    if plan.empty and document.get("errored") is not True:
        return Finish(f"No changes: {call.command} has nothing to apply (the plan is empty), "
                      "so nothing was asked and nothing applied.", 0)
    target = await trio.to_thread.run_sync(terraform_target, call.folder(exchange.cwd),
                                           dict(exchange.env))
    if protected:  # what Terraform itself says, whatever the files and variables look like
        shown = await exchange.run([*call.head, "workspace", "show"])
        if shown.status == 0 and shown.stdout.strip():
            target = evolve(target, workspace=shown.stdout.strip())
    asked = question(call, plan, data, target, argv, exchange.env)
    refusal = await approve(exchange, asked, protected)
    if refusal is not None:
        return Finish(refusal, 126)
    changed = await _changed(copy, original, data)
    if changed is not None:
        return Finish(changed, 126)
    summary = plan.summary() or "output values only"
    return Apply(call.apply_argv(copy),
                 f"iac-code: applying the saved plan the user approved (sha256 "
                 f"{digest(data)[:16]}…): {summary.splitlines()[0]}")


async def approve(exchange: Exchange, asked: Question, protected: tuple[str, ...]
                  ) -> str | None:
    """The user's answer to ``asked``: the permission question, or, for a target a glob of
    ``protected`` matches, its name typed in. None: approved, else what the model is told."""
    found = protected_name(asked.target, protected)
    if found is None:
        return await exchange.ask(asked.title, asked.detail)
    what, name = found
    return await exchange.confirm_name(asked.title, asked.detail, what, name)


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
            return (f"iac-code: the plan file ({which}) changed after the user approved it "
                    f"(sha256 {digest(data)[:16]}… then, {digest(found)[:16]}… now), so it "
                    "was not applied. Make a new plan and ask again.")
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


def command_env(names: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables the handler reads, from ``names`` (default: ours): ``_ENV_NAMES`` and
    Terraform's ``TF_CLI_ARGS*``."""
    source = os.environ if names is None else names
    return {name: value for name, value in source.items()
            if name in _ENV_NAMES or name.startswith("TF_CLI_ARGS")}
