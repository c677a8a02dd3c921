"""Plan summaries end to end: a stand-in ``terraform`` first on PATH prints a long plan, and a
real ``iaccode acp`` puts the summary before the output, for the editor and the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_tools import choose, result_for, start, tool_updates
from tests.support.agent_process import AgentConnection
from tests.support.stand_ins import env_with_stand_ins

BLOCK = (
    '  # aws_s3_bucket.b{n} will be created\n  + resource "aws_s3_bucket" "b{n}" {{\n'
    '      + bucket = "bucket-{n}"\n    }}\n\n'
)


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer) -> dict[str, str]:
    """A stand-in terraform whose ``plan`` prints a 3 MB plan with one destroy in the middle."""
    plan = tmp_path / "plan.txt"
    with plan.open("w") as out:
        out.write("Terraform will perform the following actions:\n\n")
        out.writelines(BLOCK.format(n=n) for n in range(15_000))
        out.write(
            "  # aws_db_instance.main will be destroyed\n"
            '  - resource "aws_db_instance" "main" {\n      - id = "db-1" -> null\n'
            "    }\n\n"
        )
        out.writelines(BLOCK.format(n=n) for n in range(15_000, 30_000))
        out.write("Plan: 30000 to add, 0 to change, 1 to destroy.\n")
    return env_with_stand_ins(
        tmp_path,
        model_server,
        {"terraform": f'#!/bin/sh\n[ "$1" = plan ] && exec cat {plan}\necho "unexpected: $*"\n'},
    )


async def test_a_destroy_in_the_middle_of_a_long_plan_leads_the_summary(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_plan", "bash", {"command": "terraform plan"})]),
        reply("One database would be destroyed."),
    )
    session = await start(agent, workspace)
    _, updates, _ = await agent.run_prompt(session, "plan", choose("allow_once"), timeout=60)
    seen = result_for(model_server, 1, "toolu_plan")["content"]
    assert seen.startswith("Plan summary: 30000 to add, 0 to change, 1 to destroy, 0 to replace")
    lines = seen.splitlines()
    assert lines[1] == "Terraform says: Plan: 30000 to add, 0 to change, 1 to destroy."
    assert lines[2] == "    - destroy  aws_db_instance.main"
    assert "characters cut" in seen  # the model's text was cut ...
    done = tool_updates(updates, "toolu_plan")[-1]
    assert "bytes of output dropped from the middle" in done["rawOutput"]["output"]
    assert "aws_db_instance.main" not in done["rawOutput"]["output"]  # ... and so was the raw
    assert done["rawOutput"]["plan_summary"].splitlines()[2] == lines[2]
    shown = done["content"][0]["content"]["text"]
    assert shown.splitlines()[:3] == lines[:3]
