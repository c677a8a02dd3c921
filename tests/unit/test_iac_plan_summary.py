"""Plan summaries on real-shaped Terraform output: text (with colour codes), ``plan -json``
lines, ``show -json`` documents, fed in arbitrary chunks.

The fixtures under tests/fixtures/iac/plans/ were written by Terraform 1.11 for one plan that
updates ``terraform_data.a``, destroys ``.b``, creates ``.c`` and replaces ``.r``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iaccode.iac.plan_summary import PlanReader, read_plan_document, runs_plan
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent, TerminalContent
from iaccode.tools.base import ExitStatus, TerminalOutput
from iaccode.tools.bash import _terminal_result

PLANS = Path(__file__).parents[1] / "fixtures" / "iac" / "plans"

EXPECTED_LINES = [
    "    - destroy  terraform_data.b (not in the configuration)",
    "  -/+ replace  terraform_data.r (cannot be updated in place)",
    "    + create   terraform_data.c",
    "    ~ update   terraform_data.a",
]
"""Each address with its action and Terraform's reason, destroys and replacements first."""


def summarise(data: bytes, chunk: int = 4096) -> str | None:
    reader = PlanReader()
    for start in range(0, len(data), chunk):
        reader.feed(data[start : start + chunk])
    return reader.summary()


@pytest.mark.parametrize(
    "name", ["plan-color.txt", "show-plan.txt", "plan-json-lines.txt", "show.json"]
)
def test_every_shape_gives_the_same_summary(name: str) -> None:
    summary = summarise((PLANS / name).read_bytes())
    assert summary is not None
    lines = summary.splitlines()
    assert lines[0].startswith(
        "Plan summary: 1 to add, 1 to change, 1 to destroy, 1 to replace (read from all "
    )
    expected = list(EXPECTED_LINES)
    if name == "show.json":  # the document names the argument that forces the replacement
        expected[1] = expected[1].replace("place)", "place: triggers_replace)")
    assert [line for line in lines if line.startswith("  ")] == expected
    if name != "show.json":  # the document has no count line of its own
        assert "Terraform says: Plan: 2 to add, 1 to change, 2 to destroy." in lines


@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=40))
def test_chunk_boundaries_do_not_matter(cuts: list[int]) -> None:
    data = (PLANS / "plan-color.txt").read_bytes()
    reader = PlanReader()
    position = 0
    for size in cuts:
        reader.feed(data[position : position + size])
        position += size
    reader.feed(data[position:])
    assert reader.summary() == summarise(data)


def test_a_destroy_in_the_middle_of_a_very_long_plan_is_first() -> None:
    block = (
        '  # aws_s3_bucket.b{n} will be created\n  + resource "aws_s3_bucket" "b{n}" {{\n'
        '      + bucket = "bucket-{n}"\n      + id     = (known after apply)\n    }}\n\n'
    )
    before = "".join(block.format(n=n) for n in range(20_000))
    victim = (
        "  # aws_db_instance.main will be destroyed\n"
        '  - resource "aws_db_instance" "main" {\n      - id = "db-1" -> null\n    }\n\n'
    )
    after = "".join(block.format(n=n) for n in range(20_000, 40_000))
    text = (
        "Terraform will perform the following actions:\n\n"
        + before
        + victim
        + after
        + "Plan: 40000 to add, 0 to change, 1 to destroy.\n"
    )
    assert len(text) > 5_000_000
    summary = summarise(text.encode(), chunk=65536)
    assert summary is not None
    lines = summary.splitlines()
    assert lines[0].startswith(
        "Plan summary: 40000 to add, 0 to change, 1 to destroy, 0 to replace"
    )
    assert lines[2] == "    - destroy  aws_db_instance.main"
    assert lines[3] == "    + create   aws_s3_bucket.b0"
    assert len(lines) == 3 + 40_000


def test_moves_imports_and_reads_in_text() -> None:
    text = """
  # data.aws_iam_policy_document.p will be read during apply
  # (config refers to values not yet known)
 <= data "aws_iam_policy_document" "p" {
  # aws_s3_bucket.old has moved to aws_s3_bucket.new
  # aws_s3_bucket.existing will be imported
  # aws_instance.web is tainted, so must be replaced
  # module.net.aws_subnet.a["x"] will be updated in-place
Plan: 1 to import, 1 to add, 1 to change, 1 to destroy.
"""
    summary = summarise(text.encode())
    assert summary is not None
    assert summary.splitlines()[2:] == [
        "  -/+ replace  aws_instance.web (tainted)",
        '    ~ update   module.net.aws_subnet.a["x"]',
        "   <= read     data.aws_iam_policy_document.p",
        "   -> move     aws_s3_bucket.old -> aws_s3_bucket.new",
        "   <- import   aws_s3_bucket.existing",
    ]


def test_show_json_replacements_moves_and_no_ops() -> None:
    document = {
        "format_version": "1.2",
        "resource_changes": [
            {"address": "aws_instance.a", "change": {"actions": ["create", "delete"]}},
            {"address": "aws_instance.b", "change": {"actions": ["no-op"]}},
            {
                "address": "aws_s3_bucket.new",
                "previous_address": "aws_s3_bucket.old",
                "change": {"actions": ["no-op"]},
            },
            {
                "address": "aws_s3_bucket.x",
                "change": {"actions": ["no-op"], "importing": {"id": "x"}},
            },
            {"address": "aws_s3_bucket.y", "change": {"actions": ["delete"]}},
        ],
    }
    summary = summarise(json.dumps(document).encode(), chunk=7)
    assert summary is not None
    assert summary.splitlines()[1:] == [
        "    - destroy  aws_s3_bucket.y",
        "  -/+ replace  aws_instance.a",
        "   -> move     aws_s3_bucket.old -> aws_s3_bucket.new",
        "   <- import   aws_s3_bucket.x",
    ]


def test_no_summary_without_a_resource_to_change() -> None:
    assert summarise(b"No changes. Your infrastructure matches the configuration.\n") is None
    assert summarise(b"Plan: 1 to add, 0 to change, 0 to destroy.\n") is None  # start cut off
    assert summarise(b"Error: Invalid reference\n  on main.tf line 3\n") is None
    assert summarise(b'{"format_version": "1.0", "values": {}}') is None  # show of a state


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("terraform plan", True),
        ("tofu plan -out=tfplan", True),
        ("cd infra && terraform plan -no-color | tee plan.log", True),
        ("terraform show -json tfplan", True),
        ("terraform -chdir=x show tfplan", True),
        ("TF_LOG=1 terraform apply -auto-approve", True),
        ("bash -c 'tofu plan'", True),
        ("terraform validate", False),
        ("echo terraform plan", False),
        ("ls", False),
    ],
)
def test_runs_plan(command: str, expected: bool) -> None:
    assert runs_plan(command) is expected


def test_a_plan_run_in_the_editors_terminal_is_summarised_too() -> None:
    output = (PLANS / "show-plan.txt").read_text()
    result = _terminal_result(
        "term-1", TerminalOutput(output, exit_status=ExitStatus(0)), None, False, 120.0, plan=True
    )
    summary = summarise(output.encode())
    assert summary is not None
    assert result.text.startswith(summary + "\n\n")
    assert result.raw_output["plan_summary"] == summary
    assert result.content is not None
    first, terminal = result.content
    assert isinstance(first, ContentToolCallContent) and isinstance(terminal, TerminalContent)
    assert first.content == TextContent(summary) and terminal.terminal_id == "term-1"
    plain = _terminal_result("term-2", TerminalOutput(output), None, False, 120.0)
    assert "plan_summary" not in plain.raw_output and not plain.text.startswith("Plan")


DRIFT_TEXT = """\
aws_s3_bucket.demo: Refreshing state... [id=demo]

Note: Objects have changed outside of Terraform

Terraform detected the following changes made outside of Terraform since the
last "terraform apply" which may have affected this plan:

  # aws_s3_bucket.demo has changed
  ~ resource "aws_s3_bucket" "demo" {
        id   = "demo"
      ~ tags = {
          + "AddedManually" = "via-console"
        }
        # (1 unchanged attribute hidden)
    }

  # aws_instance.gone has been deleted
  - resource "aws_instance" "gone" {
      - id = "i-1" -> null
    }


Unless you have made equivalent changes to your configuration, or ignored the
relevant attributes using ignore_changes, the following plan may include
actions to undo or respond to these changes.

Terraform will perform the following actions:

  # aws_instance.gone will be created
  + resource "aws_instance" "gone" {
    }

  # aws_instance.web will be replaced, as requested
  # aws_instance.db must be replaced
-/+ resource "aws_instance" "db" {
      ~ ami = "ami-1" -> "ami-2" # forces replacement
    }

Plan: 3 to add, 0 to change, 2 to destroy.
"""


def test_drift_is_listed_apart_from_the_changes() -> None:
    summary = summarise(DRIFT_TEXT.encode(), chunk=17)
    assert summary is not None
    assert summary.splitlines()[2:] == [
        "  -/+ replace  aws_instance.web (requested with -replace)",
        "  -/+ replace  aws_instance.db (cannot be updated in place: ami)",
        "    + create   aws_instance.gone",
        "Changed outside of Terraform (drift): 2",
        "    ~ changed  aws_s3_bucket.demo",
        "    - deleted  aws_instance.gone",
    ]


def test_a_refresh_only_plan_has_a_summary_of_its_drift_alone() -> None:
    text = DRIFT_TEXT.split("Unless you have")[0] + (
        "This is a refresh-only plan, so Terraform will not take any actions to undo\nthese.\n"
    )
    summary = summarise(text.replace("OpenTofu", "Terraform").encode())
    assert summary is not None and summary.splitlines()[1:] == [
        "Changed outside of Terraform (drift): 2",
        "    ~ changed  aws_s3_bucket.demo",
        "    - deleted  aws_instance.gone",
    ]
    opentofu = summarise(text.replace("outside of Terraform", "outside of OpenTofu").encode())
    assert opentofu == summary


def test_drift_in_plan_json_and_show_json() -> None:
    lines = [
        {
            "type": "resource_drift",
            "change": {"resource": {"addr": "aws_s3_bucket.demo"}, "action": "update"},
        },
        {
            "type": "resource_drift",
            "change": {"resource": {"addr": "aws_instance.gone"}, "action": "delete"},
        },
        {
            "type": "planned_change",
            "change": {
                "resource": {"addr": "aws_instance.web"},
                "action": "replace",
                "reason": "requested",
            },
        },
    ]
    streamed = summarise("\n".join(json.dumps(line) for line in lines).encode())
    document = {
        "resource_drift": [
            {"address": "aws_s3_bucket.demo", "change": {"actions": ["update"]}},
            {"address": "aws_instance.gone", "change": {"actions": ["delete"]}},
        ],
        "resource_changes": [
            {
                "address": "aws_instance.web",
                "action_reason": "replace_by_request",
                "change": {"actions": ["create", "delete"]},
            }
        ],
    }
    shown = read_plan_document(document).summary()
    assert streamed is not None and shown is not None
    assert (
        streamed.splitlines()[1:]
        == shown.splitlines()[1:]
        == [
            "  -/+ replace  aws_instance.web (requested with -replace)",
            "Changed outside of Terraform (drift): 2",
            "    ~ changed  aws_s3_bucket.demo",
            "    - deleted  aws_instance.gone",
        ]
    )


@pytest.mark.parametrize(
    "output",
    [
        "\x1b[31m╷\x1b[0m\n\x1b[31m│\x1b[0m \x1b[1m\x1b[31mError: \x1b[0m\x1b[1mSaved plan is stale"
        "\x1b[0m\n│ The given plan file can no longer be applied because the state was changed\n",
        '{"@level":"error","@message":"Error: Saved plan is stale","type":"diagnostic"}\n',
    ],
)
def test_a_stale_plan_is_explained_in_plain_words(output: str) -> None:
    summary = summarise(output.encode())
    assert summary is not None and summary.startswith("Not applied: The state changed after")
    assert "nothing was applied" in summary
