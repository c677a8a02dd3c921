"""Pulumi up / destroy with the preview's summary in the question (iaccode/gate/pulumi.py).
No real Pulumi runs offline: a stand-in ``pulumi`` prints a preview in the shape ``pulumi preview
--json`` prints (steps with op, urn and replaceReasons) and logs its argv."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iaccode.gate.handlers import Exec, Refuse
from iaccode.gate.pulumi import PREVIEW_SECONDS, handle, preview_argv, read_preview
from iaccode.protocol.elicitation import ElicitationAnswer
from tests.support.fake_editor import FakeEditor
from tests.unit.gate.test_terraform import LocalExchange

PREVIEW = {
    "steps": [
        {"op": "same", "urn": "urn:pulumi:prod::shop::pulumi:pulumi:Stack::shop-prod"},
        {"op": "create", "urn": "urn:pulumi:prod::shop::aws:s3/bucket:Bucket::logs"},
        {
            "op": "replace",
            "urn": "urn:pulumi:prod::shop::aws:rds/instance:Instance::db",
            "replaceReasons": ["engineVersion"],
        },
        {"op": "create-replacement", "urn": "urn:pulumi:prod::shop::aws:rds/instance:Instance::db"},
        {"op": "delete", "urn": "urn:pulumi:prod::shop::aws:sqs/queue:Queue::old"},
    ],
    "changeSummary": {"create": 1, "replace": 1, "delete": 1, "same": 1},
}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["pulumi", "up", "--yes", "-s", "prod", "--target", "urn:x", "--skip-preview"],
            (
                "up",
                [
                    "pulumi",
                    "preview",
                    "--json",
                    "--non-interactive",
                    "-s",
                    "prod",
                    "--target",
                    "urn:x",
                ],
            ),
        ),
        (
            ["pulumi", "--color", "never", "destroy", "-y", "--stack=dev"],
            (
                "destroy",
                [
                    "pulumi",
                    "--color",
                    "never",
                    "destroy",
                    "--preview-only",
                    "--json",
                    "--non-interactive",
                    "--stack=dev",
                ],
            ),
        ),
        (["pulumi", "stack", "ls"], None),
        (["pulumi", "preview"], None),
    ],
)
def test_the_preview_of_a_command(argv: list[str], expected: object) -> None:
    assert preview_argv(argv) == expected


def test_a_preview_read_as_a_plan() -> None:
    summary = read_preview(PREVIEW).summary()
    assert summary is not None and summary.splitlines() == [
        "Plan summary: 1 to add, 0 to change, 1 to destroy, 1 to replace (read from pulumi "
        "preview).",
        "    - destroy  aws:sqs/queue:Queue old",
        "  -/+ replace  aws:rds/instance:Instance db (cannot be updated in place: engineVersion)",
        "    + create   aws:s3/bucket:Bucket logs",
    ]


def stand_in(folder: Path, preview: object, sleep: float = 0) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "pulumi"
    program.write_text(
        f'#!/bin/sh\necho "$*" >> {folder}/runs.log\nsleep {sleep}\n'
        f"cat <<'EOF'\n{json.dumps(preview)}\nEOF\n"
    )
    program.chmod(0o755)
    return str(program)


async def test_up_asks_with_the_preview_and_runs_the_command(tmp_path: Path) -> None:
    pulumi = stand_in(tmp_path / "bin", PREVIEW)
    editor = FakeEditor(["allow_once"])
    argv = [pulumi, "up", "--yes", "-s", "staging"]
    outcome = await handle(LocalExchange(argv, tmp_path, editor))
    assert outcome == Exec(
        pulumi,
        None,
        {},
        "iac-code: running what the user approved after "
        "the preview: Plan summary: 1 to add, 0 to change, 1 to destroy, 1 "
        "to replace (read from pulumi preview).",
    )
    ((asked, _),) = editor.questions
    assert asked.title == "pulumi up · stack staging"
    assert "Pulumi cannot bind the update to it" in asked.content[0].content.text  # type: ignore
    assert (tmp_path / "bin" / "runs.log").read_text() == (
        "preview --json --non-interactive -s staging\n"
    )


async def test_a_protected_stack_needs_its_name_and_an_empty_preview_asks_nothing(
    tmp_path: Path,
) -> None:
    pulumi = stand_in(tmp_path / "bin", PREVIEW)
    editor = FakeEditor(
        [],
        elicitations=[ElicitationAnswer("accept", {"confirm": "prod"})],
        elicitation_modes=frozenset({"form"}),
    )
    outcome = await handle(
        LocalExchange([pulumi, "destroy", "-s", "prod"], tmp_path, editor, protected=("prod",))
    )
    assert isinstance(outcome, Exec)
    assert editor.elicitations[0].message.startswith("pulumi destroy · stack prod")
    empty = stand_in(tmp_path / "empty", {"steps": [PREVIEW["steps"][0]]})  # type: ignore
    outcome = await handle(LocalExchange([empty, "up"], tmp_path, FakeEditor([])))
    assert isinstance(outcome, Refuse) and outcome.status == 0


async def test_a_preview_that_fails_or_is_slow_leaves_the_plain_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken" / "pulumi"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'error: no stack selected' >&2\nexit 255\n")
    broken.chmod(0o755)
    editor = FakeEditor(["allow_once", "reject_once"])
    assert await handle(LocalExchange([str(broken), "up"], tmp_path, editor)) == Exec(
        str(broken), None, {}, None
    )
    assert "Plan summary" not in editor.questions[0][0].content[0].content.text  # type: ignore
    talks = stand_in(tmp_path / "talks", "not a preview")  # exit 0, no steps: not "empty"
    outcome = await handle(LocalExchange([talks, "up"], tmp_path, FakeEditor(["reject_once"])))
    assert isinstance(outcome, Refuse) and "refused by the user" in outcome.message
    monkeypatch.setattr("iaccode.gate.pulumi.PREVIEW_SECONDS", 0.2)
    slow = stand_in(tmp_path / "slow", PREVIEW, sleep=5)
    assert PREVIEW_SECONDS > 0.2
    outcome = await handle(LocalExchange([slow, "up"], tmp_path, editor))
    assert isinstance(outcome, Refuse) and "refused by the user" in outcome.message
    assert len(editor.questions) == 2


async def test_a_protected_stack_needs_its_name_even_without_a_preview(tmp_path: Path) -> None:
    editor = FakeEditor([])
    outcome = await handle(
        LocalExchange(
            ["pulumi", "stack", "rm", "-s", "prod", "--yes"], tmp_path, editor, protected=("prod",)
        )
    )
    assert isinstance(outcome, Refuse) and "the stack prod is protected" in outcome.message
