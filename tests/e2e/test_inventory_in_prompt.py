"""The IaC inventory end to end: a real `iaccode acp` in a project with Terraform, ROS and
Kubernetes files puts what they declare in the system prompt the model gets, and a changed
file reaches the next prompt."""

from __future__ import annotations

import shutil
from pathlib import Path

from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import reply

from tests.e2e.test_tools import start
from tests.support.agent_process import AgentConnection

FIXTURE = Path(__file__).parents[1] / "fixtures" / "iac" / "project"


def system_text(server: FakeModelServer, index: int) -> str:
    system = server.requests[index].body.get("system") or ""
    if isinstance(system, list):
        return "".join(block.get("text", "") for block in system)
    return str(system)


def add_resource(path: Path) -> None:
    path.write_text(path.read_text() + '\nresource "aws_eip" "nat" {\n  domain = "vpc"\n}\n')


async def test_the_inventory_is_in_the_system_prompt_and_follows_the_files(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    shutil.copytree(FIXTURE, workspace, dirs_exist_ok=True)
    model_server.enqueue(reply("It has a network module."), reply("Now an EIP too."))
    session = await start(agent, workspace)
    await agent.run_prompt(session, "What does this project declare?")
    first = system_text(model_server, 0)
    assert "# Infrastructure as code in this project" in first
    for shown in (
        "network/ (Terraform module, 4 files)",
        "aws_vpc.main",
        "providers: aws (hashicorp/aws ~> 5.40)",
        "Vpc: ALIYUN::ECS::VPC",
        "Deployment/web, Service/web",
        "chart/ (Helm chart worker 0.3.1)",
    ):
        assert shown in first
    assert "cached_module_copy" not in first  # .terraform/ is skipped

    add_resource(workspace / "network" / "main.tf")
    await agent.run_prompt(session, "And now?")
    assert "aws_eip.nat" in system_text(model_server, 1)
