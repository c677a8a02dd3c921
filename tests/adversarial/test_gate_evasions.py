"""The infrastructure gate (issue 21) attacked from inside a command: what a command's own
environment and files make of the argv a gate sees, and what a command can take from the gate.
The same real ``iaccode acp`` and logging stand-ins as ``test_infra_gate.py``; every line runs
as its own bash call in one turn, in ``bypass`` and after *Always allow* for bash, every
question rejected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import Figures
from tests.adversarial.support import start
from tests.adversarial.test_infra_gate import (
    REJECT,
    agent_env,
    calls,
    misses,
    outputs,
    run_in_mode,
    run_lines,
    short_tmp,  # noqa: F401  (a fixture)
)
from tests.support.agent_process import spawn_agent
from tests.support.real_terminal import selected
from tests.support.stand_ins import command_runs, runs

CATEGORY = "infra_gate_evasions"

ALIAS = "mkdir -p h{n}/.aws/cli && printf '[toplevel]\\n%s\\n' '{alias}' > h{n}/.aws/cli/alias && "

CHANGING = [
    # Terraform reads more arguments from its environment than its argv holds.
    "TF_CLI_ARGS_init='-migrate-state -force-copy' terraform init",
    "export TF_CLI_ARGS='-migrate-state -force-copy'; terraform init",
    "env TF_CLI_ARGS_init=-migrate-state terraform -chdir=. init",
    "TF_CLI_ARGS_init='-migrate-state' tofu init -input=false",
    # The AWS CLI's aliases (in $HOME, which the command chooses) replace built-in commands.
    ALIAS.format(n=0, alias="s3 = ec2 terminate-instances --instance-ids i-1")
    + "HOME=$PWD/h0 aws s3 ls",
    ALIAS.format(n=1, alias="sts = !f() { echo hi; }; f")
    + "HOME=$PWD/h1 aws sts get-caller-identity",
    ALIAS.format(n=2, alias="whoami = cloudformation delete-stack --stack-name s")
    + "export HOME=$PWD/h2; aws --region eu-west-1 whoami",
    "mkdir -p h3/.aws/cli && mkfifo h3/.aws/cli/alias && HOME=$PWD/h3 aws s3 ls",
    # The real binary found past the gate by a program (the reader asks: it cannot tell).
    "python3 -c \"import os, shutil; p = shutil.which('terraform', path=os.pathsep.join("
    "os.environ['PATH'].split(os.pathsep)[1:])); os.execv(p, [p, 'apply'])\"",
    # A kubectl plugin the command puts on PATH.
    "mkdir -p p0 && printf '#!/bin/sh\\necho plugin\\n' > p0/kubectl-get_all && chmod +x "
    "p0/kubectl-get_all && PATH=$PWD/p0:$PATH kubectl get-all",
]

ORDINARY = [
    ("TF_CLI_ARGS_plan='-input=false -lock=false' terraform plan", ["terraform plan"]),
    ("TF_CLI_ARGS='-no-color' terraform validate", ["terraform validate"]),
    (
        ALIAS.format(n=4, alias="whoami = sts get-caller-identity") + "HOME=$PWD/h4 aws s3 ls",
        ["aws s3 ls"],
    ),
    (
        ALIAS.format(n=5, alias="s3 = ec2 terminate-instances") + "HOME=$PWD/h5 aws ec2 "
        "describe-instances",
        ["aws ec2 describe-instances"],
    ),
]


@pytest.mark.parametrize("mode", ["bypass", "always_allow"])
async def test_what_a_commands_environment_adds_to_the_argv_asks(
    tmp_path: Path,
    workspace: Path,
    short_tmp: Path,  # noqa: F811
    figures: Figures,
    mode: str,
) -> None:
    """TF_CLI_ARGS_init='-migrate-state -force-copy' terraform init moved the state, and an
    alias in $HOME/.aws/cli/alias turned ``aws s3 ls`` into a termination: both ran with no
    question, the gate reading only the argv. The gate now reads them as the CLI will."""
    lines = [("evasion", line) for line in CHANGING]
    messages, questions, log = await run_in_mode(tmp_path, workspace, short_tmp, CHANGING, mode)
    missed = misses(lines, questions, outputs(messages))
    assert not missed, "\n".join(missed)
    assert runs(log) == [], "a stand-in ran: " + "; ".join(runs(log))
    labels = " ".join(json.dumps(q["params"]["toolCall"]) for q in questions)
    assert "TF_CLI_ARGS_init" in labels and ".aws/cli/alias" in labels, labels
    figures.add(CATEGORY, "changing_lines", len(lines))


async def test_what_the_environment_adds_to_a_read_still_runs_unasked(
    tmp_path: Path,
    workspace: Path,
    short_tmp: Path,  # noqa: F811
    figures: Figures,
) -> None:
    env, _, log = agent_env(tmp_path, calls([line for line, _ in ORDINARY]), short_tmp)
    async with spawn_agent(env, tmp_path / "agent.stderr") as agent:
        session = await start(agent, workspace)
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
        messages, questions = await run_lines(agent, session)
    assert [q["params"]["toolCall"]["title"] for q in questions] == []
    assert runs(log) == [entry for _, entries in ORDINARY for entry in entries], outputs(messages)
    figures.add(CATEGORY, "ordinary_lines", len(ORDINARY))


FORGER = """import json, marshal, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["IAC_CODE_GATE_SOCKET"])
s.sendall((json.dumps({"token": os.environ["IAC_CODE_GATE_TOKEN"], "cli": "aws",
    "argv": ["aws", "sts", "get-caller-identity"], "cwd": os.getcwd(),
    "path": sys.argv[2], "pid": os.getpid()}) + "\\n").encode())
data = b""
while chunk := s.recv(65536):
    data += chunk
with open(sys.argv[1], "w") as out:
    json.dump(marshal.loads(data[4:]), out)
"""


@pytest.mark.xfail(
    strict=True,
    reason=(
        "cannot be held by a gate: a command runs as the agent's user, so what the agent hands a "
        "gate (the real program's path and the held credentials) it can ask for itself with the "
        "call's token, or read from /proc/<pid>/environ of a gated read while it runs. "
        "docs/iac.md: held credentials stop programs that do not go looking, not a hostile one."
    ),
)
async def test_a_forged_gate_request_gets_no_held_credentials(
    tmp_path: Path,
    workspace: Path,
    short_tmp: Path,  # noqa: F811  (the fixture imported above)
) -> None:
    (workspace / "probe.py").write_text(FORGER)
    got = tmp_path / "got.json"
    env, _, log = agent_env(tmp_path, calls([f'python3 probe.py {got} "$PATH"']), short_tmp)
    env["AWS_SECRET_ACCESS_KEY"] = "held-secret-value-1234567890"
    async with spawn_agent(env, tmp_path / "agent.stderr") as agent:
        session = await start(agent, workspace)
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
        await run_lines(agent, session)
    assert got.exists(), "the forger did not run"
    assert "held-secret-value-1234567890" not in got.read_text()


def line_allowed_gate_rejected(message: dict[str, Any]) -> dict[str, Any]:
    """The user allows the question about the command line, and rejects a gate's."""
    asked = json.dumps(message["params"]["toolCall"])
    return REJECT if "is about to run" in asked else selected("allow_once")


async def test_what_the_line_allowed_is_not_what_its_environment_makes_of_it(
    tmp_path: Path,
    workspace: Path,
    short_tmp: Path,  # noqa: F811
    figures: Figures,
) -> None:
    """The user allows the line ``terraform apply``; a script the line sources first exported
    TF_CLI_ARGS_apply=-destroy, so the program the gate sees would destroy everything. A
    Terraform apply is never pre-approved by the line: the gate asks with its plan (issue 22),
    and the question names what the environment adds."""
    (workspace / "env.sh").write_text("export TF_CLI_ARGS_apply=-destroy\n")
    lines = [". ./env.sh; terraform apply", "terraform apply"]
    env, _, log = agent_env(tmp_path, calls(lines), short_tmp)
    async with spawn_agent(env, tmp_path / "agent.stderr") as agent:
        session = await start(agent, workspace)
        _, messages, questions = await agent.run_prompt(
            session, "go", line_allowed_gate_rejected, timeout=300
        )
    gate_questions = [q for q in questions if "is about to run" in json.dumps(q)]
    assert len(gate_questions) == 2, [q["params"]["toolCall"]["title"] for q in questions]
    assert "Set in the environment (Terraform adds it): TF_CLI_ARGS_apply=-destroy" in json.dumps(
        gate_questions[0]
    )
    assert "TF_CLI_ARGS" not in json.dumps(gate_questions[1])
    assert command_runs(log) == [], outputs(messages)  # the gate's questions were rejected
    figures.add(CATEGORY, "allowed_lines", len(lines))
