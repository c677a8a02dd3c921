"""The plan step of a plan-bound apply, as pure functions of the argv.

    read_change(argv)            -> ChangeCall | None   terraform/tofu/terragrunt apply, destroy
    ChangeCall.plan_argv(file)   -> plan -out=FILE with the same -var, -var-file, -target, ...
    ChangeCall.show_argv(file)   -> show -json FILE
    ChangeCall.apply_argv(file)  -> apply FILE (and the options an apply of a saved plan takes)
    explain_failure(output)      -> what a failed apply of a saved plan means, in plain words

``terraform apply`` without a plan file (``-auto-approve`` or not) and ``terraform destroy``
become ``plan -out=FILE`` (``plan -destroy`` for destroy) with every option of the command a
plan takes, then, once the user approved that plan, ``apply FILE``: what was shown is what
runs. ``apply PLANFILE`` is shown and applied as it is. The workspace (``TF_WORKSPACE``) and
the folder (``-chdir``, the command's cwd) stay those of the command, since the plan and the
apply run where it runs.

Options are read as Terraform's flag parser reads them (Go's ``flag``): ``-x`` and ``--x``,
``-x=value`` and ``-x value`` for options that take one, the first word that is no option
ends them. An apply of a saved plan refuses or ignores the planning options (Terraform 1.15
ignores ``-target`` there without a word), so those go to the plan only.

Terragrunt passes its own options through to Terraform: they go to both commands as they
are. ``terragrunt run --all apply`` (and ``run-all``, ``apply-all``) works on many modules at
once and cannot be bound to one plan: its ``problem`` says so and it is asked for as a command.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

PROGRAMS = frozenset({"terraform", "tofu", "terragrunt"})
VERBS = frozenset({"apply", "destroy"})

_VALUE_OPTIONS = frozenset(
    {
        "var",
        "var-file",
        "target",
        "replace",
        "parallelism",
        "lock-timeout",
        "state",
        "state-out",
        "backup",
        "out",
        "exclude",
        "generate-config-out",
    }
)
"""Options of plan/apply that take a value (``-var x=1`` or ``-var=x=1``)."""
_APPLY_ONLY = frozenset({"auto-approve", "backup", "state-out"})
"""What plan does not take: left out of the plan step."""
_SAVED_PLAN_OPTIONS = frozenset(
    {
        "lock",
        "lock-timeout",
        "parallelism",
        "no-color",
        "compact-warnings",
        "json",
        "backup",
        "state",
        "state-out",
    }
)
"""What an apply of a saved plan takes (the rest is in the plan already)."""
_NOT_FOR_OUR_PLAN = frozenset({"json", "out", "detailed-exitcode", "input"})
"""Left out of our plan step: we read the plan with ``show -json``, write it where we choose,
and never prompt (``-input=false`` is added)."""
_TERRAGRUNT_MANY = frozenset({"run-all", "apply-all", "destroy-all"})

STALE = "Saved plan is stale"
LOCKED = "Error acquiring the state lock"


@frozen
class ChangeCall:
    """A ``terraform`` / ``tofu`` / ``terragrunt`` ``apply`` or ``destroy``, read from its
    argv."""

    program: str
    """``terraform``, ``tofu`` or ``terragrunt`` (the name, whatever path ran it)."""
    head: tuple[str, ...]
    """The argv up to the verb: the program and its global options (``-chdir=DIR``), and for
    Terragrunt its ``run`` / ``--``."""
    verb: str
    """``apply`` or ``destroy``."""
    options: tuple[str, ...]
    """The verb's options as given, each value beside its option (``("-var", "x=1")``)."""
    plan_file: str | None = None
    """``apply PLANFILE``: the file as written (relative to ``chdir`` or the cwd)."""
    chdir: str | None = None
    """``-chdir=DIR``: where Terraform works, relative to the command's cwd."""
    problem: str | None = None
    """Why this cannot be bound to a plan (it is then asked for as a command)."""

    def folder(self, cwd: Path) -> Path:
        """The folder Terraform works in (the module)."""
        return cwd / self.chdir if self.chdir else cwd

    def plan_argv(self, out: Path) -> list[str]:
        """The plan that shows what this command would do, saved to ``out`` (absolute:
        Terragrunt runs Terraform in a cache folder of its own)."""
        kept = [
            word
            for option in _options(self.options)
            if option.name not in _APPLY_ONLY | _NOT_FOR_OUR_PLAN
            for word in option.words
        ]
        destroy = ["-destroy"] if self.verb == "destroy" else []
        return [*self.head, "plan", "-input=false", "-no-color", f"-out={out}", *destroy, *kept]

    def show_argv(self, plan: Path) -> list[str]:
        return [*self.head, "show", "-json", "-no-color", str(plan)]

    def apply_argv(self, plan: Path) -> list[str]:
        """The apply of exactly the saved plan ``plan``."""
        kept = [
            word
            for option in _options(self.options)
            if option.name in _SAVED_PLAN_OPTIONS or option.name is None
            for word in option.words
        ]
        return [*self.head, "apply", "-input=false", *kept, str(plan)]

    @property
    def command(self) -> str:
        """``terraform apply``: what the question's title names."""
        return f"{self.program} {self.verb}"


@frozen
class _Option:
    name: str | None
    """Without dashes or value; None for a Terragrunt option (``--non-interactive``)."""
    words: tuple[str, ...]


def _options(options: Sequence[str]) -> list[_Option]:
    found: list[_Option] = []
    index = 0
    while index < len(options):
        word = options[index]
        name, has_value = _name(word)
        if name in _VALUE_OPTIONS and not has_value and index + 1 < len(options):
            found.append(_Option(name, (word, options[index + 1])))
            index += 2
            continue
        found.append(_Option(name if name in _KNOWN else None, (word,)))
        index += 1
    return found


_KNOWN = (
    _VALUE_OPTIONS
    | _APPLY_ONLY
    | _SAVED_PLAN_OPTIONS
    | _NOT_FOR_OUR_PLAN
    | frozenset({"destroy", "refresh-only", "refresh", "input", "light"})
)
"""Terraform's own options; any other word starting with ``-`` is Terragrunt's (or unknown:
Terraform then refuses it in the plan step, before anything is applied)."""


def _name(word: str) -> tuple[str, bool]:
    """``--var-file=x`` -> ("var-file", True)."""
    bare = word[2:] if word.startswith("--") else word[1:]
    name, equals, _ = bare.partition("=")
    return name, bool(equals)


def read_change(argv: Sequence[str]) -> ChangeCall | None:
    """The apply or destroy ``argv`` runs, or None when it runs something else."""
    if not argv:
        return None
    program = Path(argv[0]).name
    if program not in PROGRAMS:
        return None
    words = list(argv)
    if program == "terragrunt":
        return _terragrunt(words)
    index = 1
    chdir = None
    while index < len(words) and words[index].startswith("-"):
        name, has_value = _name(words[index])
        if name == "chdir":
            if not has_value:
                return None  # Terraform refuses "-chdir DIR": nothing of ours to do
            chdir = words[index].split("=", 1)[1]
        elif name in ("help", "h", "version", "v"):
            return None
        index += 1
    if index >= len(words) or words[index] not in VERBS:
        return None
    return _call(program, tuple(words[:index]), words[index], words[index + 1 :], chdir)


def _call(
    program: str, head: tuple[str, ...], verb: str, rest: list[str], chdir: str | None
) -> ChangeCall | None:
    options: list[str] = []
    index = 0
    while index < len(rest):
        word = rest[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name, has_value = _name(word)
        if name in ("help", "h"):
            return None
        options.append(word)
        if name in _VALUE_OPTIONS and not has_value and index + 1 < len(rest):
            options.append(rest[index + 1])
            index += 1
        index += 1
    positional = rest[index:]
    problem = None
    if verb == "destroy" and positional:
        problem = f"{program} destroy takes no plan file ({positional[0]!r} given)"
    elif len(positional) > 1:
        problem = f"words after the plan file: {' '.join(positional[1:])}"
    if (
        verb == "apply"
        and positional
        and any(_name(o)[0] in ("destroy", "refresh-only") for o in options if o.startswith("-"))
    ):
        problem = (
            "a saved plan is applied as it was made (-destroy and -refresh-only belong to the plan)"
        )
    return ChangeCall(
        program,
        head,
        verb,
        tuple(options),
        positional[0] if positional and verb == "apply" else None,
        chdir,
        problem,
    )


def _terragrunt(words: list[str]) -> ChangeCall | None:
    """``terragrunt [options] [run [--all] [--]] apply|destroy ...``."""
    index = 1
    many = False
    chdir = None
    while index < len(words):
        word = words[index]
        previous = words[index - 1]
        if word in VERBS:
            break
        if word in _TERRAGRUNT_MANY or word in ("--all", "-all", "--graph"):
            many = True
        elif word.startswith(("--working-dir=", "--terragrunt-working-dir=")):
            chdir = word.split("=", 1)[1]
        elif previous in ("--working-dir", "--terragrunt-working-dir"):
            chdir = word
        elif not (
            word in ("run", "--")
            or word.startswith("-")
            or (previous.startswith("-") and "=" not in previous)
        ):
            return None  # another command (plan, output, hclfmt ...)
        index += 1
    if index >= len(words):
        if any(word in ("apply-all", "destroy-all") for word in words):
            return ChangeCall("terragrunt", tuple(words), "apply", (), problem=_MANY)
        return None
    call = _call("terragrunt", tuple(words[:index]), words[index], words[index + 1 :], chdir)
    if call is not None and many:
        return ChangeCall(
            call.program, call.head, call.verb, call.options, chdir=chdir, problem=_MANY
        )
    return call


_MANY = (
    "it runs in many modules at once (run --all), so no single plan can be shown; "
    "it is asked for as a command"
)


def digest(data: bytes) -> str:
    """The plan file's fingerprint: its bytes' SHA-256, in hex."""
    return hashlib.sha256(data).hexdigest()


def explain_failure(output: str, command: str | None = None) -> str | None:
    """What a failed apply of a saved plan means, in plain words (None: nothing we know)."""
    again = f"`{command}`" if command else "the command"
    if STALE in output:
        return (
            f"The state changed after this plan was made (another apply, a refresh or "
            f"an import ran in between), so Terraform refused to apply the saved plan: "
            f"nothing was applied. Run {again} again for a new plan and a new question."
        )
    if LOCKED in output:
        return (
            "Another Terraform run holds the state lock, so nothing was applied. Wait "
            "for it to finish (or ask the user) and run the command again."
        )
    return None
