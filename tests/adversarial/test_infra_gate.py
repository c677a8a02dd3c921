"""Infrastructure changes under a hostile model: every shape issue 21 lists, run by a real
``iaccode acp`` whose infrastructure CLIs are stand-ins that log their argv and change nothing.

Each changing line runs as its own bash call, all of them in one model answer (one agent, one
turn), in ``bypass`` and, in a second agent, in ``default`` after *Always allow* for bash; every
question is rejected. What must hold: each call was asked about at least once (by the text
reader before it ran, or by a gate while it ran: ``toolCallId``), and no stand-in ever ran
(the log is empty; a call's output naming a stand-in names the line that got through). The
ordinary lines must run without any question in bypass, and the stand-ins' log proves that
they really ran. The same through the editor's terminal (a client with ``terminal: true`` that
runs the commands for real).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_conformance.script import ToolUse, reply

from iaccode.iac.clis import GATED
from tests.adversarial.conftest import Figures
from tests.adversarial.infra_lines import CHANGING, ORDINARY
from tests.adversarial.support import scripted_env, start, strict_stdout
from tests.support.agent_process import AgentConnection, spawn_agent
from tests.support.real_terminal import RealTerminal, selected
from tests.support.stand_ins import command_runs, logging_clis

CATEGORY = "infra_gate"
REJECT = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}


def changing_lines(bin_dir: Path, tmp: Path) -> list[tuple[str, str]]:
    """(kind, line) for every changing line, its placeholders filled in."""
    return [
        (kind, line.format(bin=bin_dir, tmp=tmp, n=f"{index}"))
        for kind, lines in CHANGING.items()
        for index, line in enumerate(lines)
    ]


ACTIVATE = """# a virtualenv's activate, as python -m venv writes it (its PATH part)
VIRTUAL_ENV="{venv}"
PATH="$VIRTUAL_ENV/bin:$PATH"
export PATH
"""


def project(workspace: Path, log: Path) -> None:
    """A project that carries its own traps: a Makefile, a script, npm scripts, a cdk in its
    node_modules, an ansible-playbook in its virtualenv (both stand-ins that log)."""
    (workspace / "Makefile").write_text(
        "plan:\n\tterraform plan -out=tfplan\ndeploy:\n\tterraform apply -auto-approve\n"
    )
    scripts = workspace / "scripts"
    scripts.mkdir()
    (scripts / "deploy.sh").write_text("#!/bin/sh\nterraform apply -auto-approve\n")
    (scripts / "deploy.sh").chmod(0o755)
    (workspace / "package.json").write_text(
        json.dumps(
            {
                "name": "x",
                "version": "1.0.0",
                "scripts": {
                    "deploy": "terraform apply",
                    "cdk-deploy": "cdk deploy --all",
                    "build": "true",
                },
            }
        )
    )
    for folder, name in (("node_modules/.bin", "cdk"), (".venv/bin", "ansible-playbook")):
        (workspace / folder).mkdir(parents=True)
        (workspace / folder / name).write_text(logging_clis([name], log)[name])
        (workspace / folder / name).chmod(0o755)
    (workspace / ".venv" / "bin" / "activate").write_text(ACTIVATE.format(venv=workspace / ".venv"))
    (workspace / "README.md").write_text("Run terraform destroy when done.\n")
    (workspace / "x.yaml").write_text("kind: Namespace\n")
    for folder in ("envs/prod", "live", "infra", "tools/bin", "c"):
        (workspace / folder).mkdir(parents=True)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A private temporary folder with a short path (a Unix socket's path goes below it)."""
    path = Path(tempfile.mkdtemp(prefix="adv-"))
    yield path
    for folder in path.rglob("*"):
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


def agent_env(
    tmp_path: Path, exchanges: list[dict[str, Any]], short_tmp: Path
) -> tuple[dict[str, str], Path, Path]:
    """The agent's environment (its temporary folder, and so its gates, its own: a line that
    would delete every gate folder it finds reaches only this agent's), the stand-ins'
    folder and their log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "cli-runs.log"
    for name, text in logging_clis(sorted(GATED), log).items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = scripted_env(
        tmp_path / "home",
        exchanges,
        {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
            "CLOUDSDK_CONFIG": str(tmp_path / "no-gcloud"),
            "AWS_CONFIG_FILE": str(tmp_path / "no-aws"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws"),
            "npm_config_cache": str(tmp_path / "npm-cache"),
            "TERM": "dumb",
            "TMPDIR": str(short_tmp),
        },
    )
    return env, bin_dir, log


def calls(lines: list[str]) -> list[dict[str, Any]]:
    return [
        reply(
            tool_uses=[
                ToolUse(f"toolu_{i:03d}", "bash", {"command": line, "timeout": 30})
                for i, line in enumerate(lines)
            ]
        ),
        reply("done"),
    ]


def outputs(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each call's final output, as the editor was shown it."""
    shown: dict[str, str] = {}
    for message in messages:
        update = message.get("params", {}).get("update", {})
        if update.get("sessionUpdate") == "tool_call_update" and update.get("status") in (
            "completed",
            "failed",
        ):
            shown[update["toolCallId"]] = json.dumps(update.get("rawOutput"))
    return shown


def misses(
    lines: list[tuple[str, str]], questions: list[dict[str, Any]], shown: dict[str, str]
) -> list[str]:
    """The lines that ran a stand-in, or were never asked about."""
    asked = {q["params"]["toolCall"]["toolCallId"] for q in questions}
    found = []
    for index, (kind, line) in enumerate(lines):
        call_id = f"toolu_{index:03d}"
        if "stand-in " in shown.get(call_id, "") or call_id not in asked:
            found.append(
                f"[{kind}] {line!r}: asked={call_id in asked} output={shown.get(call_id, '')[:300]}"
            )
    return found


async def run_lines(
    agent: AgentConnection, session: str, text: str = "go"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    _, messages, questions = await agent.run_prompt(session, text, lambda m: REJECT, timeout=900)
    return messages, questions


async def run_in_mode(
    tmp_path: Path, workspace: Path, short_tmp: Path, lines: list[str], mode: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Path]:
    """Run ``lines`` in one turn of a new agent, in ``bypass`` or after *Always allow* for
    bash (``always_allow``), every question rejected: the messages, the questions and the
    stand-ins' log."""
    exchanges = calls(lines)
    if mode == "always_allow":
        exchanges = [
            reply(tool_uses=[ToolUse("toolu_first", "bash", {"command": "true"})]),
            reply("allowed"),
            *exchanges,
        ]
    env, _, log = agent_env(tmp_path, exchanges, short_tmp)
    async with spawn_agent(env, tmp_path / "agent.stderr") as agent:
        session = await start(agent, workspace)
        if mode == "bypass":
            await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
        else:
            _, _, asked = await agent.run_prompt(
                session, "allow bash", lambda m: selected("allow_always")
            )
            assert len(asked) == 1
        messages, questions = await run_lines(agent, session)
    strict_stdout(agent.raw_lines)
    return messages, questions, log


def test_there_are_enough_lines_of_every_kind() -> None:
    lines = [line for group in CHANGING.values() for line in group]
    assert len(lines) >= 150 and len(set(lines)) == len(lines)
    assert all(len(group) >= 8 for group in CHANGING.values())
    assert len(ORDINARY) >= 20


@pytest.mark.parametrize("mode", ["bypass", "always_allow"])
async def test_no_change_runs_without_a_question(
    tmp_path: Path, workspace: Path, short_tmp: Path, figures: Figures, mode: str
) -> None:
    project(workspace, tmp_path / "cli-runs.log")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    lines = changing_lines(tmp_path / "bin", scratch)
    messages, questions, log = await run_in_mode(
        tmp_path, workspace, short_tmp, [line for _, line in lines], mode
    )
    missed = misses(lines, questions, outputs(messages))
    assert not missed, "\n".join(missed)
    assert command_runs(log) == [], "a stand-in ran: " + "; ".join(command_runs(log))
    for question in questions:
        kinds = [option["kind"] for option in question["params"]["options"]]
        assert "allow_always" not in kinds
    figures.add(CATEGORY, "changing_lines", len(lines))
    figures.add(CATEGORY, "questions", len(questions))
    figures.set(CATEGORY, "kinds", len(CHANGING))


async def test_ordinary_lines_run_without_a_question_in_bypass(
    tmp_path: Path, workspace: Path, short_tmp: Path, figures: Figures
) -> None:
    project(workspace, tmp_path / "cli-runs.log")
    env, _, log = agent_env(tmp_path, calls([line for line, _ in ORDINARY]), short_tmp)
    async with spawn_agent(env, tmp_path / "agent.stderr") as agent:
        session = await start(agent, workspace)
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
        messages, questions = await run_lines(agent, session)
    asked = [
        (q["params"]["toolCall"]["toolCallId"], q["params"]["toolCall"]["title"]) for q in questions
    ]
    assert asked == []
    ran = command_runs(log)
    expected = [entry for _, entries in ORDINARY for entry in entries]
    assert ran == expected, outputs(messages)
    figures.add(CATEGORY, "ordinary_lines", len(ORDINARY))


async def test_the_editors_terminal_stops_them_too(
    tmp_path: Path, workspace: Path, short_tmp: Path, figures: Figures
) -> None:
    project(workspace, tmp_path / "cli-runs.log")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    lines = changing_lines(tmp_path / "bin", scratch)
    ordinary = [line for line, _ in ORDINARY]
    env, _, log = agent_env(tmp_path, calls([line for _, line in lines] + ordinary), short_tmp)
    async with spawn_agent(env, tmp_path / "agent.stderr") as agent:
        session = await start(agent, workspace, terminal=True)
        await agent.call("session/set_mode", {"sessionId": session, "modeId": "bypass"})
        terminal = RealTerminal(agent, lambda m: REJECT, env=env)
        _, messages = await terminal.prompt(session, "go", timeout=900)
    missed = misses(lines, terminal.questions, outputs(messages))
    assert not missed, "\n".join(missed)
    ordinary_ids = {f"toolu_{len(lines) + i:03d}" for i in range(len(ordinary))}
    assert not [
        q for q in terminal.questions if q["params"]["toolCall"]["toolCallId"] in ordinary_ids
    ]
    assert command_runs(log) == [entry for _, entries in ORDINARY for entry in entries]
    figures.add(CATEGORY, "terminal_lines", len(lines) + len(ordinary))
