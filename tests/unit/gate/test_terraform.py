"""The plan-bound apply (iaccode/gate/terraform.py) on the real Terraform of the tests, with its
questions put through the gate's question functions (iaccode/turn/gate_questions.py, the fake
editor answering). The gate's part is played here: helpers run in the module's folder with the
command's environment, and an Exec is run as the gate would exec it. Through the real gate and
a real agent: tests/e2e/test_plan_gate.py."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import pytest
import trio
from attrs import define, field

from iaccode.gate.channel import GateQuestion
from iaccode.gate.handlers import Exec, GateRequest, Refuse, RunResult
from iaccode.gate.terraform import handle
from iaccode.iac.clis import classify
from iaccode.iac.plan_summary import PlanReader
from iaccode.protocol.elicitation import ElicitationAnswer
from iaccode.protocol.tool_calls import ToolCallFields
from iaccode.turn.gate_questions import confirm_by_name, put
from iaccode.turn.permissions import Answer, gate_refusal
from tests.support.fake_editor import FakeEditor
from tests.support.terraform import install_terraform
from tests.unit.test_iac_plan_step import MODULE

CALL = ToolCallFields("toolu_1", "terraform apply", "execute", "pending", name="bash")


@define
class LocalExchange:
    """The gate's side, in this process (the gate's own runs are in tests/e2e/test_plan_gate.py):
    helpers run with ``subprocess`` in ``cwd`` and the command's ``env``, the questions go
    through the gate's question functions to the fake editor."""

    argv: list[str]
    cwd: Path
    editor: FakeEditor
    env: Mapping[str, str] = field(factory=dict)
    """The command's environment (the handler learns it through ``run``)."""
    on_question: Callable[[], Awaitable[None]] | None = None
    """Runs while the user is being asked (another apply, a plan file swapped)."""
    helpers: list[list[str]] = field(factory=list)
    protected: tuple[str, ...] = ()

    @property
    def request(self) -> GateRequest:
        cli = Path(self.argv[0]).name
        return GateRequest(
            cli, self.argv, str(self.cwd), self.argv[0], classify(cli, self.argv[1:])
        )

    async def run(self, argv: list[str], env: dict[str, str] | None = None) -> RunResult:
        self.helpers.append(argv)
        done = await trio.run_process(
            argv,
            cwd=self.cwd,
            env={**os.environ, **self.env, **(env or {})},
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        return RunResult(done.returncode, done.stdout.decode(), done.stderr.decode())

    async def ask(
        self,
        detail: str | None = None,
        *,
        title: str | None = None,
        confirm: tuple[str, str] | None = None,
    ) -> str | None:
        if self.on_question is not None:
            await self.on_question()
        question = GateQuestion(self.request, detail, title, confirm)
        if confirm is not None:
            return await confirm_by_name(self.editor, CALL, question, " ".join(self.argv))
        answer = await put(self.editor, CALL, question, " ".join(self.argv), {})
        return None if answer is Answer.ALLOW else gate_refusal(question, "refused by the user")

    def exec(self, argv: list[str] | None = None, message: str | None = None) -> Exec:
        return Exec(self.argv[0], argv, {}, message)

    def refuse(self, message: str, status: int = 126) -> Refuse:
        return Refuse(message, status)


@pytest.fixture
def module(tmp_path: Path) -> tuple[Path, str]:
    terraform = str(install_terraform(tmp_path / "bin"))
    folder = tmp_path / "module"
    folder.mkdir()
    (folder / "main.tf").write_text(MODULE)
    for argv in (["init", "-input=false"], ["apply", "-auto-approve", "-input=false"]):
        assert tf(terraform, folder, *argv).returncode == 0
    return folder, terraform


def tf(
    terraform: str, cwd: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [terraform, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def state(folder: Path, name: str, attribute: str, workspace: str | None = None) -> object:
    path = folder / (
        f"terraform.tfstate.d/{workspace}/terraform.tfstate" if workspace else "terraform.tfstate"
    )
    document = json.loads(path.read_text())
    resource = next(r for r in document["resources"] if r["name"] == name)
    value = resource["instances"][0]["attributes"][attribute]
    return value["value"] if isinstance(value, dict) else value


async def gate_runs(
    apply: Exec, cwd: Path, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """What the gate's exec of ``apply`` gives the command: its status and its output."""
    assert apply.argv is not None
    done = await trio.run_process(
        apply.argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return done.returncode, done.stdout.decode() + done.stderr.decode()


async def test_an_apply_without_a_plan_file_applies_the_plan_it_showed(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module
    editor = FakeEditor(["allow_once"])
    exchange = LocalExchange(
        [terraform, "apply", "-auto-approve", "-var", "size=big"], folder, editor
    )
    outcome = await handle(exchange)
    assert isinstance(outcome, Exec)
    ((asked, options),) = editor.questions
    assert asked.title == ("terraform apply · workspace default · local terraform.tfstate")
    shown = asked.content[0].content.text  # type: ignore[index, union-attr]
    lines = shown.splitlines()
    assert lines[2] == "What runs on Allow once is this saved plan, and nothing else:"
    assert lines[4] == (
        "Plan summary: 0 to add, 1 to change, 0 to destroy, 1 to replace (read from the plan file)."
    )
    assert lines[5:7] == [
        "  -/+ replace  terraform_data.disk (cannot be updated in place: triggers_replace)",
        "    ~ update   terraform_data.server",
    ], "the replacement comes first"
    assert "Plan file: sha256 " in shown and "terraform apply -auto-approve" in shown
    assert [o.kind for o in options] == ["allow_once", "reject_once", "reject_always"]
    assert exchange.helpers[0][1:3] == ["plan", "-input=false"]
    assert outcome.argv is not None
    assert outcome.argv[1:3] == ["apply", "-input=false"] and "-var" not in outcome.argv
    assert state(folder, "server", "input") == "small", "nothing applied before the gate runs"

    status, _ = await gate_runs(outcome, folder)
    assert status == 0
    assert state(folder, "server", "input") == "big"
    assert state(folder, "disk", "triggers_replace") == "big"


async def test_a_rejected_plan_is_never_applied(module: tuple[Path, str], tmp_path: Path) -> None:
    folder, terraform = module
    outcome = await handle(
        LocalExchange([terraform, "destroy", "-auto-approve"], folder, FakeEditor(["reject_once"]))
    )
    assert isinstance(outcome, Refuse) and outcome.status == 126
    assert outcome.message.endswith(
        "was not run: refused by the user. It changes real "
        "infrastructure; ask the user, or describe the change "
        "instead."
    )
    assert state(folder, "server", "input") == "small"


async def test_an_empty_plan_asks_nothing_and_applies_nothing(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module
    editor = FakeEditor([])
    outcome = await handle(LocalExchange([terraform, "apply"], folder, editor))
    assert isinstance(outcome, Refuse) and outcome.status == 0
    assert outcome.message.startswith("No changes: terraform apply has nothing to apply")
    assert editor.questions == []


async def test_a_plan_file_changed_after_the_question_is_refused(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module
    assert tf(terraform, folder, "plan", "-var", "size=medium", "-out=mine.tfplan").returncode == 0

    async def swap() -> None:  # while the user reads the plan, another one takes its place
        assert tf(terraform, folder, "plan", "-destroy", "-out=mine.tfplan").returncode == 0

    editor = FakeEditor(["allow_once"])
    outcome = await handle(
        LocalExchange([terraform, "apply", "mine.tfplan"], folder, editor, on_question=swap)
    )
    assert isinstance(outcome, Refuse) and outcome.status == 126
    assert "changed after the user approved it" in outcome.message
    assert "1 to change" in editor.questions[0][0].content[0].content.text  # type: ignore
    assert state(folder, "server", "input") == "small"


async def test_a_saved_plan_is_shown_and_applied_from_the_private_copy(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module
    assert tf(terraform, folder, "plan", "-var", "size=medium", "-out=mine.tfplan").returncode == 0
    outcome = await handle(
        LocalExchange([terraform, "apply", "mine.tfplan"], folder, FakeEditor(["allow_once"]))
    )
    assert isinstance(outcome, Exec) and outcome.argv is not None
    copy = Path(outcome.argv[-1])
    assert copy.name != "mine.tfplan" and copy.parent.parent.name.startswith("iaccode-plans-")
    status, _ = await gate_runs(outcome, folder)
    assert status == 0 and state(folder, "server", "input") == "medium"


async def test_a_stale_plan_is_explained_in_plain_words(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module

    async def someone_else_applies() -> None:
        assert tf(terraform, folder, "apply", "-auto-approve", "-var", "size=other").returncode == 0

    outcome = await handle(
        LocalExchange(
            [terraform, "apply", "-var", "size=big"],
            folder,
            FakeEditor(["allow_once"]),
            on_question=someone_else_applies,
        )
    )
    assert isinstance(outcome, Exec)
    status, output = await gate_runs(outcome, folder)
    assert status == 1 and state(folder, "server", "input") == "other"
    reader = PlanReader()
    reader.feed(output.encode())
    summary = reader.summary()
    assert summary is not None and summary.startswith(
        "Not applied: The state changed after this plan was made"
    )


async def test_a_protected_workspace_needs_its_name_typed(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module
    workspace = {"TF_WORKSPACE": "prod-eu"}
    assert tf(terraform, folder, "workspace", "new", "prod-eu").returncode == 0
    assert tf(terraform, folder, "apply", "-auto-approve", env=workspace).returncode == 0
    argv = [terraform, "destroy", "-auto-approve"]
    answers: list[ElicitationAnswer | str | None] = [
        ElicitationAnswer("accept", {"confirm": "prod"}),
        ElicitationAnswer("decline"),
        ElicitationAnswer("accept", {"confirm": "prod-eu"}),
    ]
    editor = FakeEditor([], elicitations=answers, elicitation_modes=frozenset({"form"}))
    for expected in ("did not match", "declined"):
        outcome = await handle(
            LocalExchange(argv, folder, editor, env=workspace, protected=("prod*",))
        )
        assert isinstance(outcome, Refuse) and expected in outcome.message
    outcome = await handle(LocalExchange(argv, folder, editor, env=workspace, protected=("prod*",)))
    assert isinstance(outcome, Exec) and editor.questions == []
    asked = editor.elicitations[-1]
    assert asked.tool_call_id == "toolu_1" and asked.mode == "form"
    assert asked.message.startswith(
        "terraform destroy · workspace prod-eu · local "
        "terraform.tfstate.d/prod-eu/terraform.tfstate"
    )
    assert "    - destroy  terraform_data.disk" in asked.message
    assert asked.message.endswith(
        "Type its name, prod-eu, to go ahead; anything else stops the change."
    )
    status, _ = await gate_runs(outcome, folder, workspace)
    assert status == 0
    assert (
        json.loads((folder / "terraform.tfstate.d/prod-eu/terraform.tfstate").read_text())[
            "resources"
        ]
        == []
    )
    assert state(folder, "server", "input") == "small", "the default workspace is untouched"


async def test_without_elicitation_a_protected_change_is_refused(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module
    editor = FakeEditor([])
    outcome = await handle(
        LocalExchange([terraform, "destroy"], folder, editor, protected=("default",))
    )
    assert isinstance(outcome, Refuse) and outcome.status == 126
    assert "the workspace default is protected" in outcome.message
    assert "run the command themselves" in outcome.message
    assert editor.elicitations == [] and editor.questions == [], "nothing the editor can't show"


async def test_protection_goes_by_the_workspace_terraform_says(module: tuple[Path, str]) -> None:
    """TF_WORKSPACE set by the command itself (the agent's environment does not have it): the
    handler learns it through the gate, and Terraform's own answer decides."""
    folder, terraform = module
    assert tf(terraform, folder, "workspace", "new", "production").returncode == 0
    assert tf(terraform, folder, "apply", "-auto-approve", "-input=false").returncode == 0
    assert tf(terraform, folder, "workspace", "select", "default").returncode == 0

    exchange = LocalExchange(
        [terraform, "destroy"],
        folder,
        FakeEditor([]),
        env={"TF_WORKSPACE": "production"},
        protected=("production",),
    )
    outcome = await handle(exchange)
    assert (
        isinstance(outcome, Refuse) and "the workspace production is protected" in outcome.message
    )


async def test_apply_destroy_and_tf_cli_args_are_in_the_question(
    module: tuple[Path, str], tmp_path: Path
) -> None:
    folder, terraform = module
    editor = FakeEditor(["reject_once"])
    env = {"TF_CLI_ARGS_apply": "-parallelism=1"}
    outcome = await handle(LocalExchange([terraform, "apply", "-destroy"], folder, editor, env=env))
    assert isinstance(outcome, Refuse)
    shown = editor.questions[0][0].content[0].content.text  # type: ignore[index, union-attr]
    assert "    - destroy  terraform_data.disk" in shown
    assert "Set in the environment (Terraform adds it): TF_CLI_ARGS_apply=-parallelism=1" in shown
