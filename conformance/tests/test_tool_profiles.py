"""Tool profiles (``--tools``): the built-in ones and those read from a JSON file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp_conformance.scenarios import (
    PROFILES,
    ProfileError,
    load_profile,
    profile_for,
    tools_option,
)

SPEC = {
    "name": "my-agent",
    "write": {"tool": "put", "arguments": {"file": "{path}", "text": "{content}", "mode": 1}},
    "read": {"tool": "get", "arguments": {"file": "{path}"}},
    "shell": {"tool": "sh", "arguments": {"cmd": "{command}", "env": {"A": "{path}"}}},
}


def test_a_profile_file_fills_its_placeholders(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(SPEC))
    profile = load_profile(path)
    assert profile.name == "my-agent"
    assert profile.write(Path("/w/a.txt"), "hi") == (
        "put",
        {"file": "/w/a.txt", "text": "hi", "mode": 1},
    )
    assert profile.read(Path("/w/a.txt")) == ("get", {"file": "/w/a.txt"})
    # only a whole value is a placeholder: nested ones are sent as written
    assert profile.shell("ls") == ("sh", {"cmd": "ls", "env": {"A": "{path}"}})


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ([], "not a JSON object"),
        ({**SPEC, "read": {"tool": "get"}}, '"read" needs "tool"'),
        ({**SPEC, "shell": {"tool": "sh", "arguments": {"cmd": "ls"}}}, "never uses ['{command}']"),
    ],
)
def test_a_bad_profile_file_says_what_is_wrong(tmp_path: Path, spec: object, problem: str) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(ProfileError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        load_profile(path)


def test_the_choices(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(SPEC))
    from_file = tools_option("tools.json", tmp_path)
    assert not isinstance(from_file, str)
    assert profile_for(from_file, {}) is from_file
    assert profile_for(tools_option("none", tmp_path), {"agentInfo": {"name": "x"}}) is None
    claude = {"agentInfo": {"name": "@zed-industries/claude-agent-acp"}}
    assert profile_for(tools_option("auto", tmp_path), claude) is PROFILES["claude-code"]
    assert profile_for("auto", {"agentInfo": {"name": "unknown"}}) is None
    assert profile_for("claude-code", {}) is PROFILES["claude-code"]
