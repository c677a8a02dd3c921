"""Stand-in programs (a fake ``terraform``, say) first on the agent's PATH, so tests never
depend on, or run, the real ones a machine may have."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from acp_conformance.fakes.messages import FakeModelServer

from tests.support.environment import agent_environment


def env_with_stand_ins(
    tmp_path: Path, model_server: FakeModelServer, programs: dict[str, str]
) -> dict[str, str]:
    """The usual test agent's environment, with ``programs`` (name -> script text) written
    to ``tmp_path/bin`` and that folder first on PATH."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, text in programs.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return agent_environment(
        tmp_path / "home",
        {
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": model_server.base_url,
            "IAC_CODE_MAX_RETRIES": "2",
            "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
        },
    )


LOGGING_CLI = """#!/bin/sh
# A stand-in infrastructure CLI: it changes nothing, it logs that it ran and with what.
printf '%s %s\\n' {name} "$*" >> {log}
# The plan step of the gate's Terraform handler (iaccode/gate/terraform.py): a plan file in
# its private folder, and show -json of it one change, so that it asks.
for word in "$@"; do
  case "$word" in -out=*/iaccode-plans-*) echo "stand-in plan" > "${{word#-out=}}";; esac
done
case "$*" in
  *"show -json -no-color "*/iaccode-plans-*)
    echo '{PLAN}'; exit 0;;
esac
echo "stand-in {name} ran: $*"
if [ -n "$AWS_SECRET_ACCESS_KEY" ]; then echo "{name} got AWS_SECRET_ACCESS_KEY"; fi
"""


STAND_IN_PLAN = json.dumps(
    {
        "format_version": "1.2",
        "resource_changes": [
            {
                "address": "terraform_data.stand_in",
                "type": "terraform_data",
                "name": "stand_in",
                "change": {"actions": ["update"]},
            }
        ],
    }
)
"""What a stand-in's ``show -json`` of a plan the handler made says: one update."""


def logging_clis(names: Iterable[str], log: Path) -> dict[str, str]:
    """Stand-ins for ``names`` (``terraform``, ``kubectl``...) that log each run to ``log``,
    one line each: the name, then the arguments."""
    return {
        name: LOGGING_CLI.format(
            name=shlex.quote(name), log=shlex.quote(str(log)), PLAN=STAND_IN_PLAN
        )
        for name in names
    }


def runs(log: Path) -> list[str]:
    """What the stand-ins of :func:`logging_clis` ran, in order."""
    return log.read_text().splitlines() if log.exists() else []


_HANDLER_READ = re.compile(
    r"^\S+ (?:\S+ )*?(?:plan -input=false -no-color -out=|show -json -no-color )\S*/iaccode-plans-"
    r"|^pulumi (?:\S+ )*?(?:preview|destroy --preview-only) --json --non-interactive"
)
_APPROVED_PLAN = re.compile(r"\S*/iaccode-plans-[^/\s]+/plan-[^/\s]+/approved\.tfplan")


def command_runs(log: Path) -> list[str]:
    """:func:`runs` without the reads the gate's handlers ran themselves to word their
    question (the plan step's ``plan -out`` and ``show -json`` of its own file, Pulumi's
    preview): what the commands got to run. The plan-bound apply's private plan file reads
    ``<the approved plan>``."""
    return [
        _APPROVED_PLAN.sub("<the approved plan>", line)
        for line in runs(log)
        if not _HANDLER_READ.search(line)
    ]
