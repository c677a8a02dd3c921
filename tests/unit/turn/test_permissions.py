"""``permissions.decide`` across the modes and the remembered answers, and ``ask`` turning the
editor's answer into what the runner does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from iaccode.mcp.tool import MCP_ALWAYS_ASKS, mcp_may_change_infrastructure
from iaccode.protocol.convert import tool_input
from iaccode.protocol.tool_calls import ToolCallFields
from iaccode.tools.base import Tool
from iaccode.tools.registry import builtin_tools
from iaccode.turn import permissions
from iaccode.turn.permissions import Answer, Decision
from tests.support.fake_editor import FakeEditor

TOOLS = builtin_tools()


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = Path(os.path.realpath(tmp_path)) / "project"
    path.mkdir()
    return path


GATES = Path("/nonexistent/iaccode-gates/bin")
"""The commands' gates folder (a path only: the reader tells a path into it from a real CLI)."""


def decide(
    cwd: Path,
    name: str,
    mode: str,
    *,
    remembered: dict[str, bool] | None = None,
    ours: Path | None = None,
    confirm_infra_changes: bool = True,
    gates: Path | None = GATES,
    **args: Any,
) -> permissions.Verdict:
    tool: Tool = TOOLS[name]
    return permissions.decide(
        tool,
        tool_input(args, tool.input_type),
        mode=mode,
        cwd=cwd,
        remembered=remembered or {},
        ours=ours,
        confirm_infra_changes=confirm_infra_changes,
        gates=gates,
    )


Call = tuple[str, dict[str, Any]]
"""A tool call: the tool's name and its input."""

READ_INSIDE: Call = ("read_file", {"path": "main.tf"})
READ_OUTSIDE: Call = ("read_file", {"path": "/etc/hostname"})
EDIT_INSIDE: Call = ("write_file", {"path": "main.tf", "content": "x"})
EDIT_OUTSIDE: Call = ("write_file", {"path": "../elsewhere.tf", "content": "x"})
COMMAND: Call = ("bash", {"command": "ls"})
INFRA: Call = ("bash", {"command": "aws cloudformation delete-stack --stack-name shop"})
"""A change whose CLI has no handler of its own: the line's question asks for it."""
PLAN_BOUND: Call = ("bash", {"command": "cd infra && terraform apply -auto-approve"})
"""A change the gate asks for itself, with the plan (iaccode/gate/terraform.py)."""

R, A, X = Decision.RUN, Decision.ASK, Decision.REFUSE


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # call            default accept_edits plan bypass
        (READ_INSIDE, (R, R, R, R)),
        (READ_OUTSIDE, (A, A, A, R)),
        (EDIT_INSIDE, (A, R, X, R)),
        (EDIT_OUTSIDE, (A, A, X, R)),
        (COMMAND, (A, A, X, R)),
        (INFRA, (A, A, X, A)),  # a real infrastructure change asks even in bypass
    ],
    ids=["read-inside", "read-outside", "edit-inside", "edit-outside", "command", "infra"],
)
def test_the_modes(
    cwd: Path, call: tuple[str, dict[str, Any]], expected: tuple[Decision, ...]
) -> None:
    name, args = call
    got = tuple(
        decide(cwd, name, mode, **args).decision
        for mode in ("default", "accept_edits", "plan", "bypass")
    )
    assert got == expected


def test_plan_mode_says_why_it_refuses(cwd: Path) -> None:
    verdict = decide(cwd, "bash", "plan", command="ls")
    assert verdict.reason.startswith("Plan mode is on")
    infra = decide(cwd, "bash", "plan", **INFRA[1])
    assert "aws cloudformation delete-stack" in infra.reason
    assert "real infrastructure" in infra.reason
    plan_bound = decide(cwd, "bash", "plan", **PLAN_BOUND[1])
    assert "terraform apply" in plan_bound.reason and "real infrastructure" in plan_bound.reason


def test_remembered_answers_hold_for_the_tool(cwd: Path) -> None:
    assert decide(cwd, "bash", "default", remembered={"bash": True}, command="ls").decision is R
    refused = decide(cwd, "bash", "bypass", remembered={"bash": False}, command="ls")
    assert refused.decision is X and refused.reason == permissions.DENIED
    # An infrastructure change asks again whatever was allowed before...
    infra = decide(cwd, "bash", "default", remembered={"bash": True}, **INFRA[1])
    assert infra.decision is A and infra.infra_change == "aws cloudformation delete-stack"
    # ...and an "Always reject" still holds for it.
    assert decide(cwd, "bash", "default", remembered={"bash": False}, **INFRA[1]).decision is X


def test_infra_changes_are_ordinary_commands_when_the_check_is_off(cwd: Path) -> None:
    verdict = decide(cwd, "bash", "bypass", confirm_infra_changes=False, **INFRA[1])
    assert verdict.decision is R and verdict.infra_change is None


def test_reads_of_our_own_saved_output_run_without_asking(cwd: Path, tmp_path: Path) -> None:
    ours = Path(os.path.realpath(tmp_path)) / "saved"
    ours.mkdir()
    (ours / "call.txt").write_text("long output")
    args: dict[str, Any] = {"path": str(ours / "call.txt")}
    assert decide(cwd, "read_file", "default", **args).decision is A
    assert decide(cwd, "read_file", "default", ours=ours, **args).decision is R


def test_a_symlink_out_of_the_project_is_judged_by_its_real_path(cwd: Path) -> None:
    (cwd / "escape").symlink_to("/etc")
    assert decide(cwd, "read_file", "default", path="escape/hostname").decision is A


FIELDS = ToolCallFields("t1", "Write main.tf", "edit", "pending", name="write_file")


@pytest.mark.parametrize(
    ("choice", "answer", "remembered"),
    [
        ("allow_once", Answer.ALLOW, {}),
        ("allow_always", Answer.ALLOW, {"write_file": True}),
        ("reject_once", Answer.REJECT, {}),
        ("reject_always", Answer.REJECT, {"write_file": False}),
        ("cancelled", Answer.CANCELLED, {}),
        (None, Answer.REJECT, {}),  # no answer to go by: the tool does not run
    ],
)
async def test_ask_turns_the_choice_into_an_answer(
    choice: str | None, answer: Answer, remembered: dict[str, bool]
) -> None:
    editor = FakeEditor([choice])
    memory: dict[str, bool] = {}
    assert await permissions.ask(editor, FIELDS, "write_file", memory) is answer
    assert memory == remembered
    [(asked, options)] = editor.questions
    assert asked == FIELDS and options == permissions.OPTIONS


def test_added_folders_count_as_the_project_by_their_real_paths(cwd: Path, tmp_path: Path) -> None:
    added, outside = tmp_path / "added", tmp_path / "outside"
    added.mkdir()
    outside.mkdir()
    (added / "out").symlink_to(outside)
    tool = TOOLS["read_file"]

    def verdict(path: Path, *folders: Path) -> Decision:
        return permissions.decide(
            tool,
            tool_input({"path": str(path)}, tool.input_type),
            mode="default",
            cwd=cwd,
            remembered={},
            additional=folders,
        ).decision

    assert verdict(added / "a.tf") is A
    assert verdict(added / "a.tf", added) is R
    assert verdict(added / "out" / "a.tf", added) is A  # a link out of it is outside
    assert verdict(tmp_path / "added-not" / "a.tf", added) is A  # a prefix is not a folder
    edit = TOOLS["write_file"]
    args: Any = tool_input({"path": str(added / "a.tf"), "content": ""}, edit.input_type)
    assert (
        permissions.decide(
            edit, args, mode="accept_edits", cwd=cwd, remembered={}, additional=(added,)
        ).decision
        is R
    )


def test_what_the_line_names_for_the_gates_is_approved_with_it(cwd: Path) -> None:
    verdict = decide(
        cwd,
        "bash",
        "bypass",
        command="aws ec2 terminate-instances --instance-ids i-1 && "
        "/usr/local/bin/kubectl delete ns x && "
        "aws s3 rb s3://$BUCKET",
    )
    assert verdict.decision is A
    # exactly what the line spells out; the gate does not see the path, and $BUCKET is
    # not known until the shell expands it
    assert verdict.approved_changes == {
        ("aws", "ec2", "terminate-instances", "--instance-ids", "i-1")
    }
    assert verdict.infra_change == "aws ec2 terminate-instances; kubectl delete; aws s3 rb"


def test_a_change_the_gate_asks_for_with_its_plan_is_left_to_the_gate(cwd: Path) -> None:
    """terraform / tofu / terragrunt, pulumi, kubectl / oc / helm have handlers that ask at
    the gate (with the plan, the preview, the target): one question, that one. Never
    pre-approved by the line, so Always allow and bypass cannot skip it."""
    for mode, remembered in (("bypass", {}), ("default", {"bash": True})):
        verdict = decide(cwd, "bash", mode, remembered=remembered, **PLAN_BOUND[1])
        assert verdict.decision is R and verdict.approved_changes == frozenset()
    mixed = decide(
        cwd,
        "bash",
        "bypass",
        command="terraform apply && /usr/local/bin/terraform destroy && helm "
        "uninstall web && aws s3 rb s3://b",
    )
    assert mixed.decision is A
    assert mixed.infra_change == "terraform destroy; aws s3 rb", (
        "a CLI run by its path is asked for on the line (no gate sees it)"
    )
    assert mixed.approved_changes == {("aws", "s3", "rb", "s3://b")}
    # A CLI that may start after the call ended (the gate would find it gone and refuse
    # unseen): the line asks as well, and pre-approves nothing for the gate.
    for line in (
        "setsid terraform apply",
        "terraform destroy &",
        "nohup tofu apply",
        "flock -c 'terraform destroy' /tmp/lock",
        "terraform apply & sleep 1",
    ):
        verdict = decide(cwd, "bash", "bypass", command=line)
        assert verdict.decision is A, line
        assert verdict.approved_changes == frozenset(), line
    assert (
        decide(
            cwd, "bash", "bypass", command="terraform apply -no-color 2>&1 && echo done"
        ).decision
        is R
    )
    # A replay plays bash back: no gate stands, so the line asks for all of it.
    replayed = decide(cwd, "bash", "bypass", gates=None, **PLAN_BOUND[1])
    assert replayed.decision is A and replayed.infra_change == "terraform apply"


class _Destructive(Tool):
    name, description, kind, read_only = "mcp__tf__apply", "apply", "other", False
    input_type, input_schema = dict, {"type": "object"}
    always_asks = MCP_ALWAYS_ASKS

    def title(self, args: Any) -> str:
        return "apply (tf MCP server)"

    async def run(self, args: Any, ctx: Any) -> Any:
        raise AssertionError


@pytest.mark.parametrize(
    ("annotations", "asks"),
    [
        ({}, True),
        ({"destructiveHint": True}, True),
        ({"readOnlyHint": False}, True),
        ({"readOnlyHint": True}, False),
        ({"destructiveHint": False}, False),
    ],
)
def test_an_mcp_tool_may_change_infrastructure_unless_its_server_says_otherwise(
    annotations: dict[str, Any], asks: bool
) -> None:
    assert mcp_may_change_infrastructure(annotations) is asks


def test_a_tool_that_always_asks_asks_in_every_mode(cwd: Path) -> None:
    tool = _Destructive()
    verdicts = [
        permissions.decide(tool, {}, mode=mode, cwd=cwd, remembered={"x": True, tool.name: True})
        for mode in ("default", "bypass", "plan")
    ]
    assert [v.decision for v in verdicts] == [A, A, X]
    assert "does not mark it read-only" in (verdicts[0].infra_change or "")
    off = permissions.decide(
        tool, {}, mode="bypass", cwd=cwd, remembered={}, confirm_infra_changes=False
    )
    assert off.decision is R
    question = permissions.infra_question(
        ToolCallFields("t", "apply (tf MCP server)"), verdicts[0].infra_change or "", ""
    )
    assert question.title == "May change real infrastructure: apply (tf MCP server)"


def test_a_reader_that_fails_asks(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise IndexError("a bug")

    monkeypatch.setattr(permissions, "infra_changes", broken)
    verdict = decide(cwd, "bash", "bypass", command="ls")
    assert verdict.decision is A and verdict.approved_changes == frozenset()
    assert verdict.infra_change == "iac-code could not read this command line"
