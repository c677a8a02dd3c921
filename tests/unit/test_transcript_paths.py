"""Mapping a recording's paths onto a replay's scratch folders (iaccode/transcript/paths.py)."""

from __future__ import annotations

import json

import pytest
from acp_conformance.script import ToolUse, reply

from iaccode.transcript.format import TranscriptError
from iaccode.transcript.paths import PathMap, check_inside, map_model_events, tool_inputs

PATHS = PathMap(
    [
        ("/rec/proj", "/scratch/project"),
        ("/rec", "/scratch/user-home"),
        ("/rec/.iac-code", "/scratch/home"),
    ]
)


def test_whole_paths_only_the_longest_first_and_back() -> None:
    assert PATHS.text("/rec/proj/main.tf /rec/projects /rec/.iac-code/x /rec") == (
        "/scratch/project/main.tf /scratch/user-home/projects /scratch/home/x /scratch/user-home"
    )
    value = {"/rec/proj/a": ["cd /rec/proj && ls", 3, None]}
    assert PATHS.reversed()(PATHS(value)) == value


def test_a_tool_input_split_mid_path_is_joined_then_mapped() -> None:
    events = reply(
        tool_uses=[
            ToolUse("toolu_1", "read_file", {"path": "/rec/proj/" + "deep/" * 20 + "main.tf"})
        ],
        text="Reading /rec/proj/main.tf",
    )["events"]
    pieces = [e for e in events if e.get("delta", {}).get("type") == "input_json_delta"]
    assert len(pieces) > 1 and not any(
        "/rec/proj/" in p["delta"]["partial_json"] for p in pieces[1:]
    )  # the path is split
    mapped = map_model_events(events, PATHS)
    [(call_id, name, value)] = tool_inputs(mapped)
    assert (call_id, name) == ("toolu_1", "read_file")
    assert value["path"] == "/scratch/project/" + "deep/" * 20 + "main.tf"
    assert "Reading /scratch/project/main.tf" in json.dumps(mapped)
    assert "/rec/" not in json.dumps(mapped)


@pytest.mark.parametrize(
    ("raw", "inside"),
    [
        ("main.tf", True),
        ("/scratch/project/a/b", True),
        ("/scratch/home/sessions", True),
        ("../home/x", True),
        ("/scratch/projectx", False),
        ("../../etc", False),
        ("/etc", False),
        ("~/.ssh", False),
        ("/scratch/project/../../etc", False),
    ],
)
def test_check_inside(raw: str, inside: bool) -> None:
    roots = ["/scratch/project", "/scratch/home"]
    if inside:
        check_inside("call", raw, "/scratch/project", roots, "/scratch/user-home")
    else:
        with pytest.raises(TranscriptError, match="outside the recorded project folder"):
            check_inside("call", raw, "/scratch/project", roots, "/scratch/user-home")
