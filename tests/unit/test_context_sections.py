"""The system prompt's parts: git status lines, the instruction files' order, the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from iaccode.context import SessionContext
from iaccode.context.environment import describe_status, gather, git_state
from iaccode.context.instructions import Instructions, candidates, folders
from iaccode.context.sections import SECTIONS, Section, SessionFacts, build


@pytest.mark.parametrize(
    ("porcelain", "line"),
    [
        ("## main...origin/main\n", "branch main, clean"),
        ("## main...origin/main [ahead 2]\n M a.tf\n?? b.tf\n", "branch main, 2 changed files"),
        ("## feature\n M a.tf\n", "branch feature, 1 changed file"),
        ("## No commits yet on trunk\n?? x\n", "branch trunk (no commits yet), 1 changed file"),
        ("## HEAD (no branch)\n", "detached HEAD, clean"),
    ],
)
def test_describe_status(porcelain: str, line: str) -> None:
    assert describe_status(porcelain) == line


def test_no_git_installed_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    state = git_state(tmp_path)
    assert state.root == tmp_path
    assert "git is not installed" in state.status


def test_not_a_repository(tmp_path: Path) -> None:
    assert gather(tmp_path).git.status == "not a git repository"


def test_folders_from_the_root_down(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b"
    assert folders(deep, tmp_path) == [tmp_path, tmp_path / "a", deep]
    assert folders(deep, None) == [deep]
    assert candidates(deep, None, tmp_path / "home")[-1] == tmp_path / "home" / "AGENTS.md"


def facts(tmp_path: Path) -> SessionFacts:
    return SessionFacts(
        cwd=tmp_path, home=tmp_path, environment=gather(tmp_path), instructions=Instructions([])
    )


def test_sections_in_order_by_audience_and_a_failing_one_is_left_out(tmp_path: Path) -> None:
    def broken(_: SessionFacts) -> str:
        raise RuntimeError("bug")

    sections = [
        *SECTIONS,
        Section("late", lambda f: "LATE", 95),
        Section("early_main_only", lambda f: "EARLY", 5, subagent=False),
        Section("silent", lambda f: None, 40),
        Section("broken", broken, 41),
    ]
    prompt = build(facts(tmp_path), sections)
    assert prompt.main.startswith("EARLY") and prompt.main.endswith("LATE")
    assert "EARLY" not in prompt.subagent and prompt.subagent.endswith("LATE")
    assert "silent" not in prompt.sections and "broken" not in prompt.sections
    assert list(prompt.sections)[:3] == ["early_main_only", "identity", "subagent_identity"]


async def test_rebuilt_only_when_an_instruction_file_changes(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # a repository root, for the folder chain
    context = SessionContext(tmp_path, tmp_path / "home")
    first = await context.refresh()
    assert await context.refresh() is first and context.builds == 1
    (tmp_path / "AGENTS.md").write_text("NEW RULE\n")
    second = await context.refresh()
    assert context.builds == 2 and "NEW RULE" in second.main
    (tmp_path / "notes.txt").write_text("not an instruction file")
    assert await context.refresh() is second
