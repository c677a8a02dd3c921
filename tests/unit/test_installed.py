"""Programs the agent starts on its own come from PATH's folders outside the project
(iaccode/installed.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iaccode.installed import forget_imports_from, inside, outside, which


def program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_only_absolute_folders_outside_the_project_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, user = tmp_path / "proj", tmp_path / "usr-bin"
    program(project / "bin", "git")
    program(project / "node_modules" / ".bin", "git")
    real = program(user, "git")
    monkeypatch.chdir(project)  # where a relative folder would be found
    path = os.pathsep.join(["", "bin", "./node_modules/.bin", str(project / "bin"), str(user)])
    assert which("git", [project], path) == str(real)
    assert which("git", [], os.pathsep.join(["bin", str(user)])) == str(real)  # relative: never
    assert which("git", [project], os.pathsep.join(["bin", str(project / "bin")])) is None


def test_a_folder_that_leads_into_the_project_is_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    program(project / "tools", "terraform")
    (tmp_path / "link").symlink_to(project / "tools")
    assert which("terraform", [project], str(tmp_path / "link")) is None
    assert inside(tmp_path / "link" / "terraform", [project])
    assert which("terraform", [], str(tmp_path / "link")) == str(tmp_path / "link" / "terraform")


def test_a_name_with_a_slash_is_the_callers_choice(tmp_path: Path) -> None:
    assert which("./server.py", [tmp_path], "") == "./server.py"
    assert which("nothing-by-this-name", [], str(tmp_path)) is None


def test_a_path_keeps_only_its_folders_outside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    value = os.pathsep.join(["", ".", "src", str(project / "src"), "/usr/bin", str(tmp_path)])
    assert outside(value, [project]) == os.pathsep.join(["/usr/bin", str(tmp_path)])


def test_the_agent_forgets_the_import_folders_inside_a_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    project = Path(os.path.realpath(tmp_path)) / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "yaml_of_the_repository.py").write_text("raise SystemExit('ran')\n")
    monkeypatch.setattr(sys, "path", [str(project / "src"), *sys.path])
    monkeypatch.setattr(sys, "prefix", str(project / ".venv"))  # a venv inside: it stays
    monkeypatch.syspath_prepend(str(project / ".venv" / "lib"))
    assert forget_imports_from(project) == [str(project / "src")]
    assert str(project / ".venv" / "lib") in sys.path and str(project / "src") not in sys.path
    with pytest.raises(ModuleNotFoundError):
        __import__("yaml_of_the_repository")
