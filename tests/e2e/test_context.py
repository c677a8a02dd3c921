"""The system prompt reaches the model with every section: environment, instructions, guidance.

A real ``iaccode acp`` talks to the fake Messages API; the tests read the ``system`` the API
received, as the model would.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from iaccode.context.instructions import CAP_CHARS
from tests.support.agent_process import AgentConnection


def system_text(body: dict) -> str:
    """The system prompt of a request, whether a string or a list of text blocks."""
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "".join(block["text"] for block in system or [])


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


async def ask(
    agent: AgentConnection, model_server: FakeModelServer, cwd: Path, count: int = 1
) -> list[str]:
    """Open a session in ``cwd``, send ``count`` prompts; the system prompt of each request."""
    model_server.enqueue(*[reply("ok") for _ in range(count)])
    await agent.initialize()
    session = await agent.new_session(cwd)
    for _ in range(count):
        response, _ = await agent.prompt(session, "hi")
        assert response["result"]["stopReason"] == "end_turn"
    return [system_text(r.body) for r in model_server.requests]


async def test_environment_section_outside_git(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    [system] = await ask(agent, model_server, workspace)
    assert f"Working directory: {real(workspace)}" in system
    assert f"Today's date: {datetime.date.today().isoformat()}" in system
    expected_platform = {"Linux": "Linux", "Darwin": "macOS"}[platform.system()]
    assert f"Platform: {expected_platform}" in system
    assert "Shell: " in system
    assert "Git: not a git repository" in system
    # identity and tool guidance are there too, the sub-agent's identity is not
    assert "You are iac-code" in system and "Permission denied." in system
    assert "sub-agent of iac-code" not in system


async def test_git_branch_and_status(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    git(workspace, "init", "-q", "-b", "feature-x")
    (workspace / "main.tf").write_text("x\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-q", "-m", "one")
    (workspace / "main.tf").write_text("y\n")
    (workspace / "new.tf").write_text("z\n")
    sub = workspace / "modules" / "net"
    sub.mkdir(parents=True)
    [system] = await ask(agent, model_server, sub)
    assert "Git: branch feature-x, 2 changed files" in system  # main.tf and new.tf
    assert f"repository root: {real(workspace)}" in system


async def test_clean_repository(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a").write_text("a")
    git(workspace, "add", ".")
    git(workspace, "commit", "-q", "-m", "one")
    [system] = await ask(agent, model_server, workspace)
    assert "Git: branch main, clean" in system


async def test_agents_md_nesting_precedence_and_the_users_own(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    git(workspace, "init", "-q")
    sub = workspace / "envs" / "prod"
    sub.mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("ROOT RULE: use tofu.\n")
    (workspace / "CLAUDE.md").write_text("ROOT CLAUDE: ignored, AGENTS.md exists.\n")
    (workspace / "envs" / "CLAUDE.md").write_text("ENVS CLAUDE: read, no AGENTS.md here.\n")
    (sub / "AGENTS.md").write_text("PROD RULE: never apply.\n")
    (sub / "IAC-CODE.md").write_text("PROD IAC-CODE: tag everything.\n")
    (workspace.parent / "AGENTS.md").write_text("ABOVE THE REPO: not read.\n")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "AGENTS.md").write_text("USER RULE: answer in English.\n")
    [system] = await ask(agent, model_server, sub)
    order = ["ROOT RULE", "ENVS CLAUDE", "PROD RULE", "PROD IAC-CODE", "USER RULE"]
    positions = [system.index(marker) for marker in order]
    assert positions == sorted(positions), system
    assert "ROOT CLAUDE" not in system and "ABOVE THE REPO" not in system
    root = real(workspace)
    assert f"## {root / 'envs' / 'prod' / 'AGENTS.md'}" in system
    assert f"## {home / 'AGENTS.md'}" in system
    assert "the later one wins" in system


async def test_instructions_are_capped_with_a_marker(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    git(workspace, "init", "-q")
    sub = workspace / "deep"
    sub.mkdir()
    (workspace / "AGENTS.md").write_text("A" * (CAP_CHARS - 100) + "\n")
    (sub / "AGENTS.md").write_text("B" * 5000 + "\n")
    (sub / "IAC-CODE.md").write_text("C" * 10 + "\n")
    [system] = await ask(agent, model_server, sub)
    assert "A" * (CAP_CHARS - 100) in system
    assert "B" * 100 in system and "B" * 101 not in system
    assert "C" * 10 not in system
    deep = real(sub)
    assert f"cut short: {deep / 'AGENTS.md'} (4900 of 5000 characters)" in system
    assert f"left out: {deep / 'IAC-CODE.md'}" in system


async def test_prompt_is_stable_and_rebuilt_only_when_instructions_change(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text("FIRST VERSION\n")
    (workspace / "notes.md").write_text("x\n")  # neither instructions nor IaC
    model_server.enqueue(reply("a"), reply("b"), reply("c"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    await agent.prompt(session, "one")
    (workspace / "notes.md").write_text("changed, but not an instruction file\n")
    await agent.prompt(session, "two")
    agents_md = workspace / "AGENTS.md"
    agents_md.write_text("SECOND VERSION\n")
    stamp = agents_md.stat().st_mtime_ns + 1_000_000_000  # a coarse-mtime filesystem
    os.utime(agents_md, ns=(stamp, stamp))
    await agent.prompt(session, "three")
    first, second, third = (system_text(r.body) for r in model_server.requests)
    assert first == second and "FIRST VERSION" in first
    assert "SECOND VERSION" in third and "FIRST VERSION" not in third


async def test_sub_agent_gets_environment_and_instructions_with_its_own_identity(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text("PROJECT RULE\n")
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_sub", "agent", {"prompt": "look around"})]),
        reply("sub-agent's answer"),
        reply("done"),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    response, _, _ = await agent.run_prompt(
        session,
        "delegate",
        lambda m: {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
    )
    assert response["result"]["stopReason"] == "end_turn"
    main, sub, _ = (system_text(r.body) for r in model_server.requests)
    assert "You are iac-code" in main and "sub-agent of iac-code" not in main
    assert "sub-agent of iac-code" in sub and "You are iac-code," not in sub
    for system in (main, sub):
        assert f"Working directory: {real(workspace)}" in system
        assert "PROJECT RULE" in system
