"""The infra-change guard end to end: a stand-in ``terraform`` first on PATH records every run,
and a real ``iaccode acp`` decides whether it may run. A Terraform apply or destroy is asked for
at the gate, with its plan (the stand-in makes one: tests/support/stand_ins.py); the real
Terraform's plan-bound applies are in tests/e2e/test_plan_gate.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_tools import choose, result_for, start, tool_updates
from tests.support.agent_process import AgentConnection, spawn_agent
from tests.support.stand_ins import command_runs, env_with_stand_ins, logging_clis


@pytest.fixture
def terraform_log(tmp_path: Path) -> Path:
    """Where the stand-in terraform writes each command line it ran."""
    return tmp_path / "terraform-runs.log"


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer, terraform_log: Path) -> dict[str, str]:
    """The usual test agent, with a stand-in terraform first on its PATH."""
    return env_with_stand_ins(tmp_path, model_server, logging_clis(["terraform"], terraform_log))


def bash(call_id: str, command: str) -> dict:
    return reply(tool_uses=[ToolUse(call_id, "bash", {"command": command})])


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def runs(log: Path) -> list[str]:
    """What the commands ran of the stand-in terraform (not the plan step's own reads)."""
    return [line.removeprefix("terraform ") for line in command_runs(log)]


APPLY = "cd . && TF_IN_AUTOMATION=1 terraform apply -auto-approve"


async def test_asked_after_always_allow_and_never_run_when_rejected(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, terraform_log: Path
) -> None:
    model_server.enqueue(
        bash("toolu_validate", "terraform validate"),
        reply("valid"),
        bash("toolu_apply", APPLY),
        reply("not applied"),
        bash("toolu_plan", "terraform plan"),
        reply("planned"),
    )
    session = await start(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "validate", choose("allow_always"))
    assert len(asked) == 1 and runs(terraform_log) == ["validate"]

    _, updates, asked = await agent.run_prompt(session, "apply", choose("reject_once"))
    assert len(asked) == 1, "Always allow for bash must not cover an infrastructure change"
    question = asked[0]["params"]
    assert question["toolCall"]["title"] == (
        "terraform apply · workspace default · local terraform.tfstate"
    ), "asked with the plan"
    shown = question["toolCall"]["content"][0]["content"]["text"]
    assert "changes real infrastructure (terraform apply)" in shown and APPLY in shown
    assert "    ~ update   terraform_data.stand_in" in shown
    assert [o["kind"] for o in question["options"]] == [
        "allow_once",
        "reject_once",
        "reject_always",
    ]
    assert runs(terraform_log) == ["validate"], "a rejected apply must never run"
    assert tool_updates(updates, "toolu_apply")[-1]["status"] == "failed"
    assert (
        "`terraform apply -auto-approve` was not run: refused by the user"
        in result_for(model_server, 3, "toolu_apply")["content"]
    )

    _, _, asked = await agent.run_prompt(session, "plan")
    assert asked == [], "a plan is an ordinary command, covered by Always allow"
    assert runs(terraform_log) == ["validate", "plan"]


async def test_asked_in_bypass_mode_and_run_once_allowed(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, terraform_log: Path
) -> None:
    model_server.enqueue(
        bash("toolu_fmt", "terraform fmt -check"),
        reply("formatted"),
        bash("toolu_destroy", "env TF_LOG=1 terraform destroy -auto-approve"),
        reply("destroyed"),
    )
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    _, _, asked = await agent.run_prompt(session, "fmt")
    assert asked == [] and runs(terraform_log) == ["fmt -check"]

    _, _, asked = await agent.run_prompt(session, "destroy", choose("allow_once"))
    assert len(asked) == 1, "bypass must still ask before an infrastructure change"
    assert "terraform destroy" in asked[0]["params"]["toolCall"]["content"][0]["content"]["text"]
    assert runs(terraform_log) == ["fmt -check", "apply -input=false <the approved plan>"], (
        "the destroy plan the question showed is what runs"
    )
    assert (
        "stand-in terraform ran: apply -input=false"
        in result_for(model_server, 3, "toolu_destroy")["content"]
    )


async def test_plan_mode_refuses_an_infrastructure_change(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, terraform_log: Path
) -> None:
    model_server.enqueue(bash("toolu_apply", "bash -c 'terraform apply'"), reply("refused"))
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "plan"})
    _, _, asked = await agent.run_prompt(session, "apply")
    assert asked == [] and runs(terraform_log) == []
    told = result_for(model_server, 1, "toolu_apply")["content"]
    assert "Plan mode" in told and "terraform apply" in told


async def test_confirm_infra_changes_false_makes_it_an_ordinary_command(
    tmp_path: Path,
    model_server: FakeModelServer,
    workspace: Path,
    terraform_log: Path,
    agent_env: dict[str, str],
) -> None:
    write_config(
        Path(agent_env["IAC_CODE_HOME"]),
        'mode = "bypass"\n\n[iac]\nconfirm_infra_changes = false\n',
    )
    model_server.enqueue(bash("toolu_apply", "terraform apply -auto-approve"), reply("applied"))
    async with spawn_agent(agent_env, tmp_path / "stderr") as agent:
        session = await start(agent, workspace)
        _, _, asked = await agent.run_prompt(session, "apply")
    assert asked == [] and runs(terraform_log) == ["apply -auto-approve"]
