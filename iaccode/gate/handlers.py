"""What the agent does with a change a gate reports: a small registry of handlers per CLI.

A gate that runs a read execs the real program at once; a change (:func:`iaccode.iac.clis.
classify`) goes to the handler registered for its CLI, or to :func:`ask_then_exec`. A handler
is an async function of an :class:`Exchange` that returns the op the gate carries out::

    from iaccode.gate import handlers

    async def plan_bound_apply(exchange: handlers.Exchange) -> handlers.Op:
        argv = exchange.request.argv                    # what the program really got
        plan = await exchange.run(["terraform", "plan", "-out=.iac/p"])   # in the gate's
        shown = await exchange.run(["terraform", "show", "-json", ".iac/p"])  # cwd and env
        refusal = await exchange.ask(detail=summary_of(shown.stdout))
        if refusal is not None:
            return exchange.refuse(refusal)
        return exchange.exec(["terraform", "apply", ".iac/p"])

    handlers.register("terraform", plan_bound_apply)

and the module is named in :data:`HANDLER_MODULES` (imported on the first change a gate
reports). ``exchange.run`` runs a helper through the gate, in the command's folder and
environment (the held credentials included), and returns its exit status and output;
``exchange.ask`` puts the permission question (on the running bash call; it says what changes
and shows the argv, and answers None when the user allowed it, else the line the model reads;
``title`` names the target, ``confirm`` asks a protected target's name typed instead);
``exchange.exec`` runs the real program (``argv`` replaces the one the gate got; argv[0] is
looked up like the gate's own CLI); ``exchange.refuse`` ends the gate with a message.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Protocol

from attrs import field, frozen

from iaccode.iac.argv import Change


@frozen
class GateRequest:
    """A run of an infrastructure CLI, as its gate saw it."""

    cli: str
    """The CLI of the gate ("terraform"), whatever name the gate was run by."""
    argv: list[str]
    """The argv the program got, after every expansion (argv[0] is ``cli``)."""
    cwd: str
    program: str
    """The real program the gate would run (an absolute path)."""
    change: Change | None
    """What it changes, as the CLI's table reads ``argv`` (never None for a handler)."""
    started_by: str | None = None
    """The command line of the process that ran it, when that was not the call's own shell
    (``make apply``, ``xargs terraform``, ``python3 deploy.py``)."""
    path: str = ""
    """The command's PATH (the gates first): where ``exec`` and ``run`` look programs up."""
    env: dict[str, str] = field(factory=dict)
    """The variables of the program's environment that change what its argv does
    (:data:`iaccode.iac.cli_env.REPORTED`: ``TF_CLI_ARGS*``, ``HOME``)."""


@frozen
class Exec:
    program: str
    argv: list[str] | None = None
    env: dict[str, str] = field(factory=dict)
    message: str | None = None


@frozen
class Refuse:
    message: str
    status: int = 126


@frozen
class Run:
    program: str
    argv: list[str]
    env: dict[str, str] = field(factory=dict)


@frozen
class RunResult:
    status: int
    stdout: str
    stderr: str
    truncated: bool = False


Op = Exec | Refuse


class Exchange(Protocol):
    """One gate's conversation with the agent, as a handler sees it."""

    @property
    def request(self) -> GateRequest: ...

    @property
    def protected(self) -> tuple[str, ...]:
        """``[iac] protected``: the globs of targets whose changes need their name typed."""
        ...

    async def ask(
        self,
        detail: str | None = None,
        *,
        title: str | None = None,
        confirm: tuple[str, str] | None = None,
    ) -> str | None:
        """The permission question for ``request``; None: allowed, else the refusal.
        ``title`` names the target (else the argv does); ``confirm`` = (what, name): a
        protected target, whose name the user types in an elicitation form instead."""
        ...

    async def run(self, argv: list[str], env: dict[str, str] | None = None) -> RunResult:
        """Run ``argv`` (argv[0] a CLI name or a path) through the gate; raises
        GateGone when the gate went away meanwhile."""
        ...

    def exec(self, argv: list[str] | None = None, message: str | None = None) -> Exec:
        """The op that runs the real program (with the held credentials)."""
        ...

    def refuse(self, message: str, status: int = 126) -> Refuse: ...


class GateGone(Exception):
    """The gate closed its end (the command was killed, or the call ended)."""


Handler = Callable[[Exchange], Awaitable[Op]]


async def ask_then_exec(exchange: Exchange) -> Op:
    """The default: ask with the argv; run it on *Allow once*, else refuse."""
    refusal = await exchange.ask()
    return exchange.exec() if refusal is None else exchange.refuse(refusal)


HANDLER_MODULES: tuple[str, ...] = (
    "iaccode.gate.terraform",
    "iaccode.gate.pulumi",
    "iaccode.gate.kube",
)
"""Modules that register handlers, imported before the first change is handled: the
plan-bound apply (terraform, tofu, terragrunt), Pulumi's preview, the kube context."""

_handlers: dict[str, Handler] = {}
_loaded = False


def register(cli: str, handler: Handler) -> None:
    """Handle the changes of ``cli`` (a name of :data:`iaccode.iac.clis.CLIS`) with
    ``handler``; a later registration for the same CLI replaces an earlier one."""
    _handlers[cli] = handler


def handler_for(cli: str) -> Handler:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in HANDLER_MODULES:
            importlib.import_module(module)
    return _handlers.get(cli, ask_then_exec)


def asks_itself(cli: str) -> bool:
    """Whether the changes of ``cli`` have a handler of their own, which asks at the gate
    with what it learns there (a plan, a preview, the target): the question about the command
    line then leaves them to it."""
    return handler_for(cli) is not ask_then_exec
