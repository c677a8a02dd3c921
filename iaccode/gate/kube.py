"""kubectl / oc / helm changes held by the gate: the question names the kube context (and the
namespace), and a protected context (``[iac] protected``) needs its name typed in (the gate's
handler for ``kubectl``, ``oc`` and ``helm``; on approval the command runs as it is).

The context is the one the command gives (``--context``, helm's ``--kube-context`` and
``HELM_KUBECONTEXT``), else the kubeconfig's ``current-context``; with protected globs set,
``kubectl config current-context`` (through the gate, in the command's environment, with its
``--kubeconfig``) has the last word, whatever the files the agent can read say.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import trio
from attrs import evolve

from iaccode.gate import handlers
from iaccode.gate.handlers import Exchange, Op
from iaccode.gate.terraform import Question, ask, command_env
from iaccode.iac.target import kube_target, title

PROGRAMS = frozenset({"kubectl", "oc", "helm"})
_VALUE_OPTIONS = frozenset(
    {
        "-n",
        "--namespace",
        "--context",
        "--kube-context",
        "--kubeconfig",
        "--cluster",
        "--user",
        "-s",
        "--server",
        "--as",
        "-v",
    }
)


def _command(argv: list[str]) -> str:
    """``kubectl delete``: the program and its verb, past the global options."""
    skip = False
    for word in argv[1:]:
        if skip:
            skip = False
        elif word in _VALUE_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            return f"{Path(argv[0]).name} {word}"
    return Path(argv[0]).name


async def handle(exchange: Exchange) -> Op:
    argv = list(exchange.request.argv)
    name = Path(argv[0]).name if argv else ""
    env = await command_env(exchange)
    target = await trio.to_thread.run_sync(kube_target, argv, env)
    explicit = any(word.startswith(("--context", "--kube-context")) for word in argv) or (
        name == "helm" and env.get("HELM_KUBECONTEXT")
    )
    if exchange.protected and not explicit:
        kubeconfig = [
            w
            for i, w in enumerate(argv)
            if w.startswith("--kubeconfig") or (i and argv[i - 1] == "--kubeconfig")
        ]
        current = await exchange.run(
            ["oc" if name == "oc" else "kubectl", "config", "current-context", *kubeconfig]
        )
        if current.status == 0 and current.stdout.strip():
            target = evolve(target, kube_context=current.stdout.strip())
    asked = Question(
        title(_command(argv), target), f"What runs on Allow once: `{shlex.join(argv)}`.", target
    )
    refusal = await ask(exchange, asked)
    return exchange.exec() if refusal is None else exchange.refuse(refusal)


for _program in PROGRAMS:
    handlers.register(_program, handle)
