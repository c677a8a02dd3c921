"""Sensitive values end to end: a module applied by the real Terraform (tests/support/
terraform.py) with a sensitive variable and output; the fake model reads them every way it
can, and a real ``iaccode acp`` runs the calls. What the model API received never holds them;
the editor is told they were hidden."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_tools import start, tool_updates
from tests.support.agent_process import AgentConnection
from tests.support.stand_ins import env_with_stand_ins
from tests.support.terraform import install_terraform
from tests.unit.test_iac_sensitive import MODULE, SECRET

READS = [
    ("bash", {"command": "terraform output -json"}),
    ("bash", {"command": "terraform output -raw password; echo"}),
    ("bash", {"command": "terraform output password"}),
    ("bash", {"command": "cat terraform.tfstate terraform.tfstate.backup 2>/dev/null"}),
    ("bash", {"command": "terraform show -json"}),
    ("bash", {"command": "terraform show -json change.tfplan | head -c 100000"}),
    ("bash", {"command": "terraform state pull"}),
    ("bash", {"command": "terraform state show terraform_data.db"}),
    ("bash", {"command": "grep -r password . --include='*.tfvars'"}),
    ("bash", {"command": "env TF_VAR_db_password=x sh -c 'cat prod.tfvars'"}),
    (
        "bash",
        {
            "command": "terraform output -json | python3 -c 'import json, sys; "
            'print(json.load(sys.stdin)["password"]["value"])\''
        },
    ),
    ("bash", {"command": "python3 -c \"print(open('terraform.tfstate').read()[::-1][::-1])\""}),
    ("read_file", {"path": "terraform.tfstate"}),
    ("read_file", {"path": "prod.tfvars"}),
    ("grep", {"pattern": "horse", "path": ".", "output_mode": "content"}),
]


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer, workspace: Path) -> dict[str, str]:
    """The agent with the real Terraform first on PATH, and a module applied in the
    workspace with a sensitive variable from prod.tfvars."""
    env = env_with_stand_ins(tmp_path, model_server, {})
    env.pop("TF_CLI_CONFIG_FILE", None)  # the launcher's own: no warning about ~/.terraformrc
    terraform = str(install_terraform(tmp_path / "bin"))
    (workspace / "main.tf").write_text(MODULE)
    (workspace / "prod.tfvars").write_text(f'db_password = "{SECRET}"\nsize = "large"\n')
    run = {**os.environ, "TF_IN_AUTOMATION": "1"}
    for argv in (
        ["init", "-input=false"],
        ["apply", "-auto-approve", "-input=false", "-var-file=prod.tfvars"],
        ["apply", "-auto-approve", "-input=false", "-var-file=prod.tfvars", "-var", "size=medium"],
        ["plan", "-input=false", "-var-file=prod.tfvars", "-out=change.tfplan"],
    ):
        done = subprocess.run(
            [terraform, *argv],
            cwd=workspace,
            env=run,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    assert SECRET in (workspace / "terraform.tfstate.backup").read_text()
    return env


async def test_no_sensitive_value_reaches_the_model(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_uses=[ToolUse(f"toolu_{n}", name, args) for n, (name, args) in enumerate(READS)]
        ),
        reply("I read everything."),
    )
    session = await start(agent, workspace)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    response, updates, asked = await agent.run_prompt(session, "show me the secrets", timeout=120)
    assert response["result"]["stopReason"] == "end_turn" and asked == []

    sent = json.dumps([request.body for request in model_server.requests])
    assert SECRET not in sent and f"pw-{SECRET}" not in sent
    results = {
        block["tool_use_id"]: block["content"]
        for message in model_server.requests[1].messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    assert len(results) == len(READS)
    missing = {k: v[-600:] for k, v in results.items() if "(sensitive)" not in v}
    assert not missing, missing
    assert '"value": "medium"' in results["toolu_0"], "only what Terraform marks is hidden"

    shown = json.dumps([u for u in updates])
    assert SECRET not in shown, "nor in what the editor shows (and the session keeps)"
    last = tool_updates(updates, "toolu_3")[-1]
    notes = [c["content"]["text"] for c in last["content"] if c["type"] == "content"]
    assert any("hidden from the model" in note for note in notes)
