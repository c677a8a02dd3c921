"""The gates end to end: a real ``iaccode acp`` runs bash commands whose infrastructure CLIs are
stand-ins that log every run; what the gate lets through is what the log shows. The changes
here are of CLIs without a handler of their own (helmfile, aws): the default question, then
the program. Terraform's plan-bound apply through the gate: tests/e2e/test_plan_gate.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.driver import updates
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.processes import pid_alive, wait_until
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_infra_changes import write_config
from tests.e2e.test_tools import choose, result_for, start, tool_updates
from tests.support.agent_process import AgentConnection, spawn_agent
from tests.support.real_terminal import RealTerminal, selected
from tests.support.stand_ins import env_with_stand_ins, logging_clis, runs

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def cli_log(tmp_path: Path) -> Path:
    return tmp_path / "cli-runs.log"


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer, cli_log: Path) -> dict[str, str]:
    env = env_with_stand_ins(
        tmp_path,
        model_server,
        logging_clis(["terraform", "kubectl", "helm", "helmfile", "aws"], cli_log),
    )
    env["AWS_SECRET_ACCESS_KEY"] = SECRET
    return env


def bash(call_id: str, command: str) -> dict[str, Any]:
    return reply(tool_uses=[ToolUse(call_id, "bash", {"command": command})])


async def bypass(agent: AgentConnection, workspace: Path, **capabilities: Any) -> str:
    session = await start(agent, workspace, **capabilities)
    await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
    return session


async def test_a_change_the_line_hides_asks_on_the_running_call_in_bypass(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    command = "echo 'helmfile apply --skip-diff-on-install' | sh; echo status=$?"
    model_server.enqueue(bash("toolu_hidden", command), reply("refused"))
    session = await bypass(agent, workspace)
    _, updates, asked = await agent.run_prompt(session, "apply", choose("reject_once"))
    assert runs(cli_log) == [], "a rejected change never runs"
    assert len(asked) == 1
    question = asked[0]["params"]["toolCall"]
    assert question["toolCallId"] == "toolu_hidden", "the question is about the running call"
    assert question["title"] == (
        "Changes real infrastructure: helmfile apply --skip-diff-on-install"
    )
    text = question["content"][0]["content"]["text"]
    assert "it changes real infrastructure (helmfile apply)" in text
    assert f"from the command: {command}" in text and "started by: sh" in text
    assert [o["kind"] for o in asked[0]["params"]["options"]] == [
        "allow_once",
        "reject_once",
        "reject_always",
    ]
    told = result_for(model_server, 1, "toolu_hidden")["content"]
    assert "`helmfile apply --skip-diff-on-install` was not run: refused by the user" in told
    assert "status=126" in told
    # After the answer the card is the running command again, then it ends.
    states = tool_updates(updates, "toolu_hidden")
    assert states[-2]["status"] == "in_progress" and states[-2]["title"] == command
    assert states[-1]["status"] == "completed"


async def test_allowed_once_the_real_cli_runs_with_the_credentials_held_back_from_the_rest(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    command = (
        "echo 'helmfile apply --suppress-secrets' | sh; "
        "env | grep -c AWS_SECRET_ACCESS_KEY; python3 -c 'import os; "
        'print("python sees", os.environ.get("AWS_SECRET_ACCESS_KEY"))\''
    )
    model_server.enqueue(bash("toolu_apply", command), reply("applied"))
    session = await bypass(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "apply", choose("allow_once"))
    assert len(asked) == 1
    assert runs(cli_log) == ["helmfile apply --suppress-secrets"]
    told = result_for(model_server, 1, "toolu_apply")["content"]
    assert "helmfile got AWS_SECRET_ACCESS_KEY" in told, "the gate gives the CLI its keys"
    assert "\n0\n" in told and "python sees None" in told, "nothing else gets them"
    assert SECRET not in told


KEY_ID = "AKIAIOSFODNN7EXAMPLE"

CREDENTIAL_PRINTER = """#!/bin/sh
echo "aws $*: key ${AWS_ACCESS_KEY_ID:-none} secret ${AWS_SECRET_ACCESS_KEY:-none}"
"""


async def test_the_credentials_a_gate_hands_back_are_the_agents_secrets(
    tmp_path: Path,
    model_server: FakeModelServer,
    workspace: Path,
    agent_env: dict[str, str],
) -> None:
    """The gate's credential table is secret too (declared at start-up): not in the agent's
    /proc environ, and replaced in what the CLI the gate gave them to printed."""
    (tmp_path / "bin" / "aws").write_text(CREDENTIAL_PRINTER)
    (tmp_path / "bin" / "aws").chmod(0o755)
    agent_env["AWS_ACCESS_KEY_ID"] = KEY_ID  # no secret by the name rule: a credential
    command = (
        "aws sts get-caller-identity; "
        "tr '\\0' '\\n' < /proc/$PPID/environ "
        "| grep -c -e ^AWS_ACCESS_KEY_ID= -e ^AWS_SECRET_ACCESS_KEY= || true"
    )
    model_server.enqueue(bash("toolu_who", command), reply("it is you"))
    async with spawn_agent(agent_env, tmp_path / "stderr") as agent:
        session = await bypass(agent, workspace)
        _, _, asked = await agent.run_prompt(session, "who am I", choose("allow_once"))
    told = result_for(model_server, 1, "toolu_who")["content"]
    assert (
        "aws sts get-caller-identity: key [secret AWS_ACCESS_KEY_ID] secret "
        "[secret AWS_SECRET_ACCESS_KEY]"
    ) in told, told
    assert KEY_ID not in told and SECRET not in told
    assert told.rstrip().endswith("\n0"), "neither is left in the agent's environ"


async def test_a_cli_off_the_agents_path_gets_no_credentials_and_the_user_is_told(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    tmp_path: Path,
) -> None:
    """A terraform the command put behind the gates on its own PATH runs without the held
    credentials: the model reads why in the output, the user gets a notice."""
    tools = workspace / "tools"
    tools.mkdir()
    shutil.copy(tmp_path / "bin" / "terraform", tools / "terraform")
    command = 'PATH="${PATH%%:*}:$PWD/tools:$PATH" terraform version'
    model_server.enqueue(bash("toolu_v", command), reply("ok"))
    session = await bypass(agent, workspace, session={"notices": {}})
    _, live, _ = await agent.run_prompt(session, "version", choose("allow_once"))
    told = result_for(model_server, 1, "toolu_v")["content"]
    assert "stand-in terraform ran: version" in told
    assert "runs without the held cloud credentials" in told
    assert "got AWS_SECRET_ACCESS_KEY" not in told
    (notice,) = updates(live, session, "notice")
    assert (notice["severity"], notice["title"]) == ("warning", "Cloud credentials held back")
    assert notice["description"].startswith(f"{tools / 'terraform'} is not the terraform")
    assert notice["description"].endswith("(AWS_SECRET_ACCESS_KEY).")


async def test_the_gates_question_shows_no_secret_value(
    tmp_path: Path,
    model_server: FakeModelServer,
    workspace: Path,
    cli_log: Path,
    agent_env: dict[str, str],
) -> None:
    """The argv a gate reports is the expanded one: a value the agent holds as a secret is
    shown as ``[secret NAME]`` in the question, as in a tool's output."""
    token = "dtk-4f1c9a7e2b55"
    agent_env["DEPLOY_TOKEN"] = token
    (workspace / "token.txt").write_text(token)
    command = 'echo "helmfile apply --set token=$(cat token.txt)" | sh'
    model_server.enqueue(bash("toolu_tok", command), reply("refused"))
    async with spawn_agent(agent_env, tmp_path / "stderr") as agent:
        session = await bypass(agent, workspace)
        _, _, asked = await agent.run_prompt(session, "apply", choose("reject_once"))
    (question,) = [q["params"]["toolCall"] for q in asked]
    assert question["title"] == (
        "Changes real infrastructure: helmfile apply --set token=[secret DEPLOY_TOKEN]"
    )
    assert token not in str(question)
    assert runs(cli_log) == []


async def test_reads_pass_the_gate_without_a_question(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    (workspace / "Makefile").write_text("plan:\n\tterraform plan -out=tfplan\n")
    lines = [
        "A=plan; terraform $A",
        "echo 'terraform validate' | sh",
        "python3 -c \"import subprocess; subprocess.run(['terraform', 'fmt', '-check'])\"",
        "make plan",
        "kubectl get pods -A | head -1",
        "helm template web ./chart",
    ]
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse(f"toolu_{i}", "bash", {"command": line}) for i, line in enumerate(lines)
            ]
        ),
        reply("read"),
    )
    session = await bypass(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "read")
    assert asked == []
    assert runs(cli_log) == [
        "terraform plan",
        "terraform validate",
        "terraform fmt -check",
        "terraform plan -out=tfplan",
        "kubectl get pods -A",
        "helm template web ./chart",
    ]


async def test_the_question_about_the_line_covers_its_change_once(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    model_server.enqueue(bash("toolu_apply", "helmfile apply && aws s3 rb s3://old"), reply("done"))
    session = await start(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "apply", choose("allow_once"))
    # One question for both (the line's), none again from the gates.
    assert len(asked) == 1
    assert (
        "helmfile apply; aws s3 rb"
        in asked[0]["params"]["toolCall"]["content"][0]["content"]["text"]
    )
    assert runs(cli_log) == ["helmfile apply", "aws s3 rb s3://old"]


async def test_a_change_the_line_did_not_name_asks_again(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    """Allowing the line allows the argvs it spells out, exactly: the same verb with other
    arguments, from a script the line runs, asks again."""
    (workspace / "deploy.sh").write_text("helmfile -e prod apply\nhelmfile destroy\n")
    model_server.enqueue(
        bash("toolu_apply", "helmfile -e dev apply && sh deploy.sh"), reply("done")
    )
    session = await start(agent, workspace)
    answers = iter(["allow_once", "reject_once", "reject_once"])
    _, _, asked = await agent.run_prompt(session, "apply", lambda message: selected(next(answers)))
    assert [q["params"]["toolCall"]["title"] for q in asked] == [
        "Changes real infrastructure: helmfile -e dev apply && sh deploy.sh",
        "Changes real infrastructure: helmfile -e prod apply",
        "Changes real infrastructure: helmfile destroy",
    ]
    assert runs(cli_log) == ["helmfile -e dev apply"]


async def test_always_reject_holds_for_the_gates(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    model_server.enqueue(
        bash("toolu_1", "echo 'kubectl delete ns a' | sh"),
        reply("no"),
        bash("toolu_2", "X=kubectl; $X delete ns b; echo 'helm uninstall c' | sh"),
        reply("no again"),
    )
    session = await bypass(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "one", choose("reject_always"))
    assert len(asked) == 1
    _, _, asked = await agent.run_prompt(session, "two")
    assert asked == [], "Always reject holds: no question, no run"
    assert runs(cli_log) == []
    assert result_for(model_server, 3, "toolu_2")["content"] == "Permission denied."


async def test_a_cancel_ends_a_waiting_gate_and_its_question(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    # The shell ignores TERM (and so does the gate it starts): had the channel closed before
    # the command was ended, the refused gate would let "echo after" run at once.
    model_server.enqueue(
        bash(
            "toolu_wait",
            "trap '' TERM; echo $$ > shell.pid; "
            "echo 'helmfile destroy' | sh; "
            "echo after > after.txt",
        )
    )
    session = await bypass(agent, workspace)
    prompt_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "destroy"}]}
    )
    while (
        "method" not in (message := await agent.receive())
        or message["method"] != "session/request_permission"
    ):
        pass
    await agent.notify("session/cancel", {"sessionId": session})
    answer, _ = await agent.response(prompt_id)
    assert answer["result"]["stopReason"] == "cancelled"
    assert runs(cli_log) == [] and not (workspace / "after.txt").exists()
    shell = int((workspace / "shell.pid").read_text())
    await wait_until(lambda: not pid_alive(shell), 5)


async def test_gates_a_command_removes_are_put_back_and_it_is_told(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    model_server.enqueue(
        bash("toolu_rm", 'rm -f "$(command -v helmfile)"'),
        reply("gone?"),
        bash("toolu_apply", "echo 'helmfile apply' | sh"),
        reply("no"),
    )
    session = await bypass(agent, workspace)
    _, _, asked = await agent.run_prompt(session, "remove", choose("allow_once"))
    assert (
        "reaches for the gates" in asked[0]["params"]["toolCall"]["content"][0]["content"]["text"]
    )
    told = result_for(model_server, 1, "toolu_rm")
    assert "they were put back" in told["content"] and told["is_error"] is True
    _, _, asked = await agent.run_prompt(session, "apply", choose("reject_once"))
    assert [q["params"]["toolCall"]["title"] for q in asked] == [
        "Changes real infrastructure: helmfile apply"
    ], "the gate is back"
    assert runs(cli_log) == []


async def test_a_gate_without_its_channel_refuses(
    workspace: Path, cli_log: Path, agent_env: dict[str, str], tmp_path: Path
) -> None:
    """A gate run outside a command of the agent (its channel gone) runs nothing."""
    from iaccode.gate.folder import GateFolder

    folder = GateFolder.create(str(tmp_path))
    env = {**agent_env, "PATH": f"{folder.bin}{os.pathsep}{agent_env['PATH']}"}
    try:
        done = await trio.run_process(
            ["terraform", "apply"], env=env, capture_stderr=True, check=False
        )
        assert done.returncode == 126 and b"no channel to the agent" in done.stderr
        env.update(
            {"IAC_CODE_GATE_SOCKET": str(tmp_path / "gone.sock"), "IAC_CODE_GATE_TOKEN": "x"}
        )
        done = await trio.run_process(
            ["terraform", "apply"], env=env, capture_stderr=True, check=False
        )
        assert done.returncode == 126 and b"iac-code cannot be reached" in done.stderr
    finally:
        folder.remove()
    assert runs(cli_log) == []


@pytest.mark.skipif(not hasattr(os, "getppid"), reason="posix")
async def test_the_editors_terminal_has_the_gates_too(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    cli_log: Path,
    agent_env: dict[str, str],
) -> None:
    command = (
        "terraform version; echo 'helmfile destroy --concurrency 1' | sh; "
        "env | grep -c AWS_SECRET_ACCESS_KEY"
    )
    model_server.enqueue(bash("toolu_term", command), reply("done"))
    session = await bypass(agent, workspace, terminal=True)
    terminal = RealTerminal(agent, lambda message: selected("reject_once"), env=agent_env)
    answer, _ = await terminal.prompt(session, "destroy")
    assert answer["result"]["stopReason"] == "end_turn"
    assert runs(cli_log) == ["terraform version"]
    (question,) = terminal.questions
    assert question["params"]["toolCall"]["toolCallId"] == "toolu_term"
    assert question["params"]["toolCall"]["title"] == (
        "Changes real infrastructure: helmfile destroy --concurrency 1"
    )
    told = result_for(model_server, 1, "toolu_term")["content"]
    assert "terraform got AWS_SECRET_ACCESS_KEY" in told and "\n0\n" in told
    created = terminal.created[0]
    assert {item["name"] for item in created["env"]} >= {
        "IAC_CODE_GATE_SOCKET",
        "IAC_CODE_GATE_TOKEN",
    }


async def test_with_both_settings_off_there_are_no_gates(
    tmp_path: Path,
    model_server: FakeModelServer,
    workspace: Path,
    cli_log: Path,
    agent_env: dict[str, str],
) -> None:
    write_config(
        Path(agent_env["IAC_CODE_HOME"]),
        'mode = "bypass"\n\n[iac]\nconfirm_infra_changes = false\nhold_credentials = false\n',
    )
    model_server.enqueue(
        bash(
            "toolu_1",
            "echo 'terraform apply' | sh; type -P terraform; "
            "env | grep -c -e ^AWS_ACCESS_KEY_ID= "
            "-e ^AWS_SECRET_ACCESS_KEY= -e ^GITHUB_TOKEN=",
        ),
        reply("ran"),
    )
    agent_env["AWS_ACCESS_KEY_ID"] = "AKIAEXAMPLE"
    agent_env["GITHUB_TOKEN"] = "ghp_not-a-cloud-credential"
    async with spawn_agent(agent_env, tmp_path / "stderr") as agent:
        session = await start(agent, workspace)
        _, _, asked = await agent.run_prompt(session, "apply")
    assert asked == [] and runs(cli_log) == ["terraform apply"]
    told = result_for(model_server, 1, "toolu_1")["content"]
    # hold_credentials = false: every command gets the cloud credentials (a secret by the
    # name rule too), and still no other secret
    assert str(tmp_path / "bin" / "terraform") in told and "\n2\n" in told, told


def test_the_official_sdk_client_reads_the_gates_question(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, cli_log: Path
) -> None:
    """What an editor built on the official ACP Python SDK gets: a question its own models
    accept, on the running call, and the call's card back to running after the answer."""
    import asyncio
    import sys

    import acp

    from tests.e2e.test_official_sdk_client import RecordingClient

    command = "echo 'aws s3 rb s3://prod' | sh"
    model_server.enqueue(bash("toolu_sdk", command), reply("refused"))
    client = RecordingClient("reject_once")

    async def main() -> None:
        async with acp.spawn_agent_process(
            client, sys.executable, "-m", "iaccode", "acp", env=agent_env
        ) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.set_session_mode(session_id=session.session_id, mode_id="bypass")
            response = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("delete it")]
            )
            assert response.stop_reason == "end_turn"

    asyncio.run(asyncio.wait_for(main(), timeout=120))
    (question,) = client.questions
    assert question.tool_call_id == "toolu_sdk" and question.status == "in_progress"
    assert question.title == "Changes real infrastructure: aws s3 rb s3://prod"
    assert "aws s3 rb" in question.content[0].content.text
    assert runs(cli_log) == []
