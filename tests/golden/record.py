"""Record the golden transcripts (and the demo's) through the real server.

    python -m tests.golden.record            # rewrites tests/golden/*.jsonl and the demo

Each scenario runs `iaccode acp --record` driven by the official ACP Python SDK client, with
the fake Messages API server as the model, in a fresh project folder and data dir. CI replays
the results (tests/e2e/test_transcripts.py); `iaccode replay --update` refreshes one after an
intended change.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import acp
from acp.schema import AllowedOutcome
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, reply

GOLDEN = Path(__file__).parent
DEMO = Path(__file__).parents[2] / "iaccode" / "transcript" / "demo-terraform.jsonl"

MAIN_TF = """variable "region" {
  type    = string
  default = "us-east-1"
}

resource "aws_s3_bucket" "logs" {
  bucket = "acme-logs"
}
"""
VARIABLES_TF = """variable "environment" {
  type = string
}
"""

DEMO_PLAN = """
Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
  ~ update in-place

Terraform will perform the following actions:

  # aws_s3_bucket.logs will be updated in-place
  ~ resource "aws_s3_bucket" "logs" {
        id     = "acme-logs"
      ~ tags   = {
          + "Environment" = "staging"
        }
        # (9 unchanged attributes hidden)
    }

Plan: 0 to add, 1 to change, 0 to destroy.
"""
STAND_IN_TERRAFORM = f"""#!{sys.executable}
# A stand-in terraform for the demo's recording: its plan, and a clean fmt.
import sys
if sys.argv[1:2] == ["plan"]:
    print({DEMO_PLAN!r}, end="")
elif sys.argv[1:2] != ["fmt"]:
    sys.exit("the demo's stand-in terraform only plans")
"""


def stand_in_bin(root: Path) -> Path:
    """A folder holding the stand-in terraform, to put first on the agent's PATH."""
    folder = root / "bin"
    folder.mkdir(exist_ok=True)
    (folder / "terraform").write_text(STAND_IN_TERRAFORM)
    (folder / "terraform").chmod(0o755)
    return folder


class Editor(acp.Client):
    """Answers permission questions from a list of option kinds, in order."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.tool_started = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if (
            getattr(update, "session_update", "") == "tool_call_update"
            and getattr(update, "status", None) == "in_progress"
        ):
            self.tool_started.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        kind = self.answers.pop(0)
        chosen = next(o for o in options if o.kind == kind)
        return acp.RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=chosen.option_id, outcome="selected")
        )


Scenario = Callable[[Any, Editor, Path], Awaitable[None]]


async def _record(
    out: Path,
    exchanges: list[dict[str, Any]],
    scenario: Scenario,
    answers: list[str],
    *,
    home: Path | None = None,
    project: Path | None = None,
) -> None:
    root = Path(tempfile.mkdtemp(prefix="iaccode-golden-"))
    project = project or root / "infra"
    home = home or root / "home"
    if not project.exists():
        project.mkdir()
        (project / "main.tf").write_text(MAIN_TF)
        (project / "variables.tf").write_text(VARIABLES_TF)
    try:
        with FakeModelServer() as server:
            server.enqueue(*exchanges)
            env = {
                k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))
            }
            env.update(
                ANTHROPIC_API_KEY="recording-key",
                ANTHROPIC_BASE_URL=server.base_url,
                IAC_CODE_HOME=str(home),
                IAC_CODE_LOG_LEVEL="WARNING",
            )
            # A stand-in terraform first on PATH: the checks after a write must not depend on
            # whether the recording machine has a real one (a replay leaves such programs out).
            env["PATH"] = f"{stand_in_bin(root)}{os.pathsep}{env.get('PATH', '')}"
            editor = Editor(answers)
            async with acp.spawn_agent_process(
                editor,
                sys.executable,
                "-m",
                "iaccode",
                "acp",
                "--record",
                str(out),
                env=env,
                cwd=str(project),
            ) as (conn, _process):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                await scenario(conn, editor, project)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"recorded {out}")


async def new_session(conn: Any, project: Path) -> str:
    session = await conn.new_session(cwd=str(project), mcp_servers=[])
    return str(session.session_id)


def one_prompt(text: str) -> Scenario:
    async def scenario(conn: Any, editor: Editor, project: Path) -> None:
        session = await new_session(conn, project)
        await conn.prompt(session_id=session, prompt=[acp.text_block(text)])

    return scenario


async def cancel_mid_command(conn: Any, editor: Editor, project: Path) -> None:
    session = await new_session(conn, project)
    prompt = asyncio.create_task(
        conn.prompt(session_id=session, prompt=[acp.text_block("Run the slow plan")])
    )
    await editor.tool_started.wait()
    await asyncio.sleep(0.3)
    await conn.cancel(session_id=session)
    await prompt


async def main() -> None:
    await _record(
        GOLDEN / "plain-answer.jsonl",
        [
            reply(
                ["This is a Terraform ", "module with an S3 bucket ", "for logs."],
                thinking=["The user asks about the project. ", "I can answer briefly."],
            ),
        ],
        one_prompt("What is this project?"),
        [],
    )

    await _record(
        GOLDEN / "tool-permission-rejection.jsonl",
        [
            reply(
                "Let me read the module.",
                tool_uses=[ToolUse("toolu_read", "read_file", {"path": "main.tf"})],
            ),
            reply(
                "I will rename the bucket.",
                tool_uses=[
                    ToolUse(
                        "toolu_write",
                        "write_file",
                        {"path": "main.tf", "content": MAIN_TF.replace("acme", "corp")},
                    )
                ],
            ),
            reply("Understood, I left main.tf unchanged."),
        ],
        one_prompt("Rename the bucket to corp-logs"),
        ["reject_once"],
    )

    await _record(
        GOLDEN / "cancel-mid-command.jsonl",
        [
            reply(
                "Running the plan.",
                tool_uses=[ToolUse("toolu_plan", "bash", {"command": "sleep 30"})],
            ),
        ],
        cancel_mid_command,
        ["allow_once"],
    )

    await _record_load_after_crash()
    await _record_absolute_paths()
    await record_demo()


async def record_demo() -> None:
    """The demo: a diagnostic seen and fixed, a plan summarised, an apply asked and refused
    (terraform is a stand-in first on PATH; its results are recorded like any command's)."""
    await _record(
        DEMO,
        [
            reply(
                ["I'll start by reading ", "the module."],
                thinking=["To add a tag I need to see ", "how the bucket is declared."],
                tool_uses=[ToolUse("toolu_1", "read_file", {"path": "main.tf"})],
            ),
            reply(
                "Let me check which variables exist.",
                tool_uses=[
                    ToolUse("toolu_2", "grep", {"pattern": "variable", "output_mode": "content"})
                ],
            ),
            reply(
                ["There is an `environment` variable. ", "I'll tag the bucket with it."],
                tool_uses=[
                    ToolUse(
                        "toolu_3",
                        "edit_file",
                        {
                            "path": "main.tf",
                            "old_string": '  bucket = "acme-logs"\n',
                            "new_string": '  bucket = "acme-logs"\n\n  tags = {\n'
                            "    Environment = var.environment\n",
                        },
                    )
                ],
            ),
            reply(
                [
                    "The check says a block is not closed: ",
                    "the `tags` map lost its brace. ",
                    "Fixing it.",
                ],
                tool_uses=[
                    ToolUse(
                        "toolu_4",
                        "edit_file",
                        {
                            "path": "main.tf",
                            "old_string": "    Environment = var.environment\n}\n",
                            "new_string": "    Environment = var.environment\n  }\n}\n",
                        },
                    )
                ],
            ),
            reply(
                "The file checks clean. Now the plan.",
                tool_uses=[ToolUse("toolu_5", "bash", {"command": "terraform plan -no-color"})],
            ),
            reply(
                ["The plan changes one resource in place and destroys nothing. ", "Applying it."],
                tool_uses=[
                    ToolUse(
                        "toolu_6", "bash", {"command": "terraform apply -auto-approve -no-color"}
                    )
                ],
            ),
            reply(
                [
                    "You did not allow the apply, so nothing changed. ",
                    "`aws_s3_bucket.logs` is tagged with `Environment = var.environment` in "
                    "main.tf; the plan above is what `terraform apply` will do.",
                ]
            ),
        ],
        one_prompt("Tag the logs bucket with the environment and apply it"),
        ["allow_once", "allow_once", "allow_once", "reject_once"],
    )


async def _record_absolute_paths() -> None:
    """A model that names files by absolute path, as a real one does: its tool inputs, a
    command's output and its answer all hold the recording machine's project folder, which a
    replay (in another folder) must map to its own."""
    root = Path(tempfile.mkdtemp(prefix="iaccode-golden-abs-"))
    project = root / "infra"
    project.mkdir()
    (project / "main.tf").write_text(MAIN_TF)
    (project / "variables.tf").write_text(VARIABLES_TF)
    main = f"{project}/main.tf"
    await _record(
        GOLDEN / "absolute-paths.jsonl",
        [
            # One call an answer: read-only calls of one answer run side by side, in any order.
            reply(
                "Looking at the project.",
                tool_uses=[ToolUse("toolu_list", "list_files", {"path": str(project)})],
            ),
            reply(
                "Reading the module.",
                tool_uses=[ToolUse("toolu_read", "read_file", {"path": main})],
            ),
            reply(
                f"Tagging the bucket in {main}.",
                tool_uses=[
                    ToolUse(
                        "toolu_edit",
                        "edit_file",
                        {
                            "path": main,
                            "old_string": '  bucket = "acme-logs"\n',
                            "new_string": '  bucket = "acme-logs"\n  tags   = {}\n',
                        },
                    )
                ],
            ),
            reply(
                "Checking the result.",
                tool_uses=[
                    ToolUse("toolu_grep", "bash", {"command": f"grep -n tags {main} /dev/null"})
                ],
            ),
            reply(f"Done: {main} now has a tags block."),
        ],
        one_prompt(f"Tag the bucket in {project}"),
        ["allow_once", "allow_once"],
        project=project,
    )
    shutil.rmtree(root, ignore_errors=True)  # the replay must not need it


async def _record_load_after_crash() -> None:
    """A session killed mid-command (not recorded), then loaded in a new process (recorded)."""
    root = Path(tempfile.mkdtemp(prefix="iaccode-golden-crash-"))
    project, home = root / "infra", root / "home"
    project.mkdir()
    (project / "main.tf").write_text(MAIN_TF)
    with FakeModelServer() as server:
        server.enqueue(
            reply(
                "Checking.",
                tool_uses=[ToolUse("toolu_slow", "bash", {"command": "touch started; sleep 30"})],
            )
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IAC_CODE_"))}
        env.update(
            ANTHROPIC_API_KEY="k",
            ANTHROPIC_BASE_URL=server.base_url,
            IAC_CODE_HOME=str(home),
            IAC_CODE_LOG_LEVEL="WARNING",
        )
        editor = Editor(["allow_once"])
        async with acp.spawn_agent_process(
            editor, sys.executable, "-m", "iaccode", "acp", env=env, cwd=str(project)
        ) as (conn, process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await new_session(conn, project)
            asyncio.create_task(
                conn.prompt(session_id=session, prompt=[acp.text_block("Check the plan")])
            )
            while not (project / "started").exists():  # noqa: ASYNC110 - another process
                await asyncio.sleep(0.05)
            process.send_signal(signal.SIGKILL)
            await process.wait()
    (project / "started").unlink()

    async def load_and_continue(conn: Any, editor: Editor, project: Path) -> None:
        await conn.load_session(session_id=session, cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session, prompt=[acp.text_block("What happened?")])

    await _record(
        GOLDEN / "load-after-crash.jsonl",
        [
            reply("The previous command was interrupted; nothing was applied."),
        ],
        load_and_continue,
        [],
        home=home,
        project=project,
    )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
