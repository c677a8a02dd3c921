"""Checks after a write, end to end: the model writes a broken Terraform file, sees the problem
in its tool result (the editor sees it in the tool call), and fixes it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

from tests.e2e.test_tools import choose, result_for, start, tool_updates
from tests.support.agent_process import AgentConnection
from tests.support.stand_ins import env_with_stand_ins

STAND_IN = f"""#!{sys.executable}
import pathlib, sys
with open(pathlib.Path(__file__).with_name("calls.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
"""

BROKEN = (
    'resource "aws_s3_bucket" "logs" {\n  bucket = "acme-logs"\n\n  tags = {\n    Env = \n  }\n}\n'
)


@pytest.fixture
def agent_env(tmp_path: Path, model_server: FakeModelServer) -> dict[str, str]:
    """A stand-in terraform (its fmt finds nothing) first on the agent's PATH."""
    return env_with_stand_ins(tmp_path, model_server, {"terraform": STAND_IN})


async def test_a_diagnostic_is_seen_and_fixed(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    model_server.enqueue(
        reply(
            tool_uses=[ToolUse("toolu_write", "write_file", {"path": "main.tf", "content": BROKEN})]
        ),
        reply(
            tool_uses=[
                ToolUse(
                    "toolu_fix",
                    "edit_file",
                    {
                        "path": "main.tf",
                        "old_string": "    Env = \n",
                        "new_string": '    Env = "prod"\n',
                    },
                )
            ]
        ),
        reply("Fixed."),
    )
    session = await start(agent, workspace)
    _, updates, _ = await agent.run_prompt(session, "tag it", choose("allow_once"))

    seen = result_for(model_server, 1, "toolu_write")
    assert seen["is_error"] is False, "the write stands; only the check found a problem"
    assert seen["content"].splitlines()[-2:] == [
        "IaC check of main.tf (Terraform) found 1 problem:",
        "- line 5, column 11: syntax error: unexpected end of line; expected a value or expression",
    ]
    assert (workspace / "main.tf").read_text().startswith('resource "aws_s3_bucket"')
    done = tool_updates(updates, "toolu_write")[-1]
    assert done["status"] == "completed"
    assert [c["type"] for c in done["content"]] == ["diff", "content"]
    assert done["content"][1]["content"]["text"].startswith(
        "IaC check of main.tf (Terraform) found 1 problem:"
    )

    fixed = result_for(model_server, 2, "toolu_fix")["content"]
    assert fixed.endswith("\n\nIaC check of main.tf (Terraform): no problems.")
    # One fmt: for the fixed file; the broken one did not parse, so fmt was not asked. It
    # works in the file's folder, started outside it (diagnostics.py says why).
    assert (tmp_path / "bin" / "calls.log").read_text() == (
        f"-chdir={workspace} fmt -check -diff -no-color main.tf\n"
    )


async def test_an_unclosed_block_is_shown_where_it_opens(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    """The editor's diagnostic names the line of the block that lacks its "}", not the end of
    the file (where python-hcl2 finds out)."""
    unclosed = (
        'variable "region" {\n  default = "us-east-1"\n}\n\n'
        'resource "aws_s3_bucket" "logs" {\n  bucket = "acme-logs"\n  tags = {\n'
        '    Env = "prod"\n  }\n\noutput "bucket" {\n  value = "acme-logs"\n}\n'
    )
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_write", "write_file", {"path": "main.tf", "content": unclosed})
            ]
        ),
        reply("Written."),
    )
    session = await start(agent, workspace)
    _, updates, _ = await agent.run_prompt(session, "add the bucket", choose("allow_once"))
    shown = tool_updates(updates, "toolu_write")[-1]["content"][1]["content"]["text"]
    assert shown.splitlines()[1].startswith(
        '- line 5, column 33: syntax error: unexpected end of file at line 14; expected "}"'
    ), shown
