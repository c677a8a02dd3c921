"""One call's gate channel in-process: real gates (the shim, run by a real shell) talking to a
real channel, with stand-in CLIs that log their argv behind them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from iaccode.gate import handlers
from iaccode.gate.channel import CallChannel, GatePolicy, GateQuestion, open_channel
from iaccode.gate.folder import GateFolder, is_gate
from iaccode.iac.command_env import command_env
from tests.support.stand_ins import logging_clis, runs

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the peer check is Linux's")

NESTING_TERRAGRUNT = """#!/bin/sh
printf 'terragrunt %s\\n' "$*" >> {log}
terraform "$@"
"""


@pytest.fixture(autouse=True)
def plain_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The channel's own part: the stand-ins' changes go to the default handler (ask, then
    exec). The CLIs' own handlers (a plan-bound apply needs a real Terraform) are tested in
    test_terraform.py, test_kube.py and tests/e2e/test_plan_gate.py."""
    handlers.handler_for("terraform")  # the handler modules loaded, then replaced here
    for cli in ("terraform", "terragrunt", "kubectl"):
        monkeypatch.setitem(handlers._handlers, cli, handlers.ask_then_exec)


@pytest.fixture
def folder() -> Iterator[GateFolder]:
    """The agent's folder where the agent makes it (a socket's path holds at most 107 bytes:
    pytest's ``tmp_path`` under xdist is too long for one)."""
    made = GateFolder.create()
    yield made
    made.remove()


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand-ins first on our PATH (the agent's), and a credential in our environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = tmp_path / "runs.log"
    programs = logging_clis(["terraform", "kubectl"], path)
    programs["terragrunt"] = NESTING_TERRAGRUNT.format(log=path)
    for name, text in programs.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "held-secret")
    return path


class Asker:
    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.questions: list[GateQuestion] = []

    async def __call__(self, question: GateQuestion) -> str | None:
        self.questions.append(question)
        return self.answers.pop(0) if self.answers else "refused by the test"


async def shell(channel: CallChannel, line: str, cwd: Path) -> str:
    """Run ``line`` as a command of the call (its root), return what it printed."""
    env = channel.command_env(command_env())
    proc = await trio.lowlevel.open_process(
        ["/bin/sh", "-c", line], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    channel.set_root(proc.pid)
    assert proc.stdout is not None
    output = b""
    while chunk := await proc.stdout.receive_some(65536):
        output += chunk
    await proc.wait()
    return output.decode() + f"[{proc.returncode}]"


async def test_a_read_runs_the_real_program_with_the_held_credentials(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    ask = Asker()
    async with open_channel(GatePolicy(ask), folder=folder) as channel:
        out = await shell(
            channel, "terraform plan -out=p; echo ${AWS_SECRET_ACCESS_KEY:-none}", tmp_path
        )
    assert runs(log) == ["terraform plan -out=p"] and ask.questions == []
    assert "terraform got AWS_SECRET_ACCESS_KEY" in out and "\nnone\n" in out


async def test_a_change_asks_and_runs_only_when_allowed(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    ask = Asker(None, "no, not that one")
    async with open_channel(GatePolicy(ask), folder=folder) as channel:
        out = await shell(
            channel,
            "terraform apply -auto-approve; echo rc=$?; kubectl -v 9 delete ns x; echo rc=$?",
            tmp_path,
        )
    assert runs(log) == ["terraform apply -auto-approve"]
    assert [q.request.argv for q in ask.questions] == [
        ["terraform", "apply", "-auto-approve"],
        ["kubectl", "-v", "9", "delete", "ns", "x"],
    ]
    first = ask.questions[0].request
    assert first.change is not None and first.change.label == "terraform apply"
    assert first.program == str(tmp_path / "bin" / "terraform") and first.cwd == str(tmp_path)
    assert "rc=0" in out and "no, not that one\nrc=126" in out


async def test_what_the_line_allowed_runs_unasked(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    ask = Asker()
    policy = GatePolicy(ask, approved=frozenset({("terraform", "apply")}))
    async with open_channel(policy, folder=folder) as channel:
        await shell(
            channel, "terraform apply; terraform apply -target=x; terraform destroy", tmp_path
        )
    assert runs(log) == ["terraform apply"]
    assert [q.request.argv for q in ask.questions] == [
        ["terraform", "apply", "-target=x"],
        ["terraform", "destroy"],
    ]


async def test_an_allowed_driver_covers_the_runs_it_starts(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    ask = Asker(None)
    async with open_channel(GatePolicy(ask), folder=folder) as channel:
        await shell(channel, "terragrunt apply; terraform apply", tmp_path)
    assert runs(log) == ["terragrunt apply", "terraform apply"]
    assert [q.request.argv for q in ask.questions] == [
        ["terragrunt", "apply"],
        ["terraform", "apply"],
    ]


async def test_a_copy_of_a_gate_is_still_the_gate(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    ask = Asker()
    async with open_channel(GatePolicy(ask), folder=folder) as channel:
        out = await shell(
            channel,
            'cp "$(command -v terraform)" ./tfx && ./tfx destroy; '
            'ln -s "$(command -v kubectl)" k && ./k delete ns x',
            tmp_path,
        )
    assert runs(log) == [], out
    assert [q.request.cli for q in ask.questions] == ["terraform", "kubectl"]
    assert is_gate(str(tmp_path / "tfx"))


async def test_the_real_program_is_looked_up_past_every_gate(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-agent"
    other.mkdir()
    shutil.copy(folder.bin / "terraform", other / "terraform")
    path = os.pathsep.join([str(folder.bin), str(other), str(tmp_path / "bin")])
    assert folder.real_program("terraform", path) == str(tmp_path / "bin" / "terraform")
    assert folder.real_program("helm", path) is None
    async with open_channel(GatePolicy(Asker()), folder=folder) as channel:
        out = await shell(channel, "helm list; echo rc=$?", tmp_path)
    assert "helm: command not found\nrc=127" in out


async def test_a_wrong_token_and_a_stranger_are_refused(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    ask = Asker()
    async with open_channel(GatePolicy(ask), folder=folder) as channel:
        env = channel.command_env(command_env())
        channel.set_root(1)  # a root this test process is not below
        stranger = await trio.run_process(
            ["terraform", "plan"], env=env, cwd=tmp_path, capture_stderr=True, check=False
        )
        channel.token = "another"
        wrong = await shell(channel, "terraform plan", tmp_path)
    assert stranger.returncode == 126 and b"not a process of the command" in stranger.stderr
    assert "a wrong token" in wrong
    assert runs(log) == [] and ask.questions == []


async def test_a_closed_channel_ends_a_waiting_gate(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    asked = trio.Event()

    async def never(question: GateQuestion) -> str | None:
        asked.set()
        await trio.sleep_forever()
        raise AssertionError

    output: list[str] = []
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            channel_open = open_channel(GatePolicy(never), folder=folder)
            async with channel_open as channel:

                async def run() -> None:
                    output.append(await shell(channel, "terraform destroy; echo rc=$?", tmp_path))

                nursery.start_soon(run)
                await asked.wait()
            # the channel is closed; the command goes on to its end
    assert "iac-code ended the call" in output[0] and "rc=126" in output[0]
    assert runs(log) == []


async def test_a_handler_runs_helpers_and_rewrites_the_run(
    folder: GateFolder, log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interface issue 22's plan-bound apply uses: run a plan first, ask with it, then
    exec another argv."""
    seen: list[str] = []

    async def plan_first(exchange: handlers.Exchange) -> handlers.Op:
        planned = await exchange.run(["terraform", "plan", "-out=p.bin"])
        seen.append(planned.stdout)
        refusal = await exchange.ask(detail=f"plan said: {planned.stdout.strip()}")
        if refusal is not None:
            return exchange.refuse(refusal)
        return exchange.exec(["terraform", "apply", "p.bin"])

    monkeypatch.setattr(handlers, "_handlers", {})
    handlers.register("terraform", plan_first)
    ask = Asker(None)
    async with open_channel(GatePolicy(ask), folder=folder) as channel:
        await shell(channel, "terraform apply", tmp_path)
    assert runs(log) == ["terraform plan -out=p.bin", "terraform apply p.bin"]
    assert seen == [
        "stand-in terraform ran: plan -out=p.bin\nterraform got AWS_SECRET_ACCESS_KEY\n"
    ]
    assert ask.questions[0].detail == (
        "plan said: stand-in terraform ran: plan -out=p.bin\nterraform got AWS_SECRET_ACCESS_KEY"
    )


async def test_with_the_question_off_changes_run_unasked(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    ask = Asker()
    async with open_channel(GatePolicy(ask, confirm=False), folder=folder) as channel:
        await shell(channel, "terraform destroy", tmp_path)
    assert runs(log) == ["terraform destroy"] and ask.questions == []


async def test_a_cli_that_is_not_the_agents_runs_without_the_credentials(
    folder: GateFolder, log: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(tmp_path / "bin" / "terraform", elsewhere / "terraform")
    told: list[str] = []

    async def advise(message: str) -> None:
        told.append(message)

    async with open_channel(GatePolicy(Asker(), advise=advise), folder=folder) as channel:
        out = await shell(
            channel,
            f"export PATH={channel.folder.bin}:{elsewhere}:$PATH; "
            "terraform version; terraform fmt; kubectl version",
            tmp_path,
        )
    assert out.count("runs without the held cloud credentials") == 2, out
    assert "terraform got AWS_SECRET_ACCESS_KEY" not in out
    assert "kubectl got AWS_SECRET_ACCESS_KEY" in out
    # The user hears it too, once for that program (kubectl was the agent's own).
    assert told == [
        f"{elsewhere / 'terraform'} is not the terraform on iac-code's PATH "
        f"({tmp_path / 'bin' / 'terraform'}): it runs without the held cloud "
        "credentials (AWS_SECRET_ACCESS_KEY)."
    ]


def test_a_cancel_as_the_channel_opens_ends_it(folder: GateFolder) -> None:
    """The turn cancelled at the moment a command's channel opens (a user's cancel right
    after the call showed as running): the channel closes and the cancel goes on. (It once
    left the turn waiting forever: a shielded listener started with ``nursery.start`` under a
    cancelled scope is never handed over.) In a thread of its own, so a wedge fails here."""
    ended = threading.Event()
    paths: list[Path] = []

    async def cancelled_call() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()
            async with open_channel(GatePolicy(Asker()), folder=folder) as channel:
                paths.append(channel.socket_path)
                await trio.sleep_forever()
        assert scope.cancelled_caught

    def run() -> None:
        trio.run(cancelled_call)
        ended.set()

    threading.Thread(target=run, daemon=True).start()
    assert ended.wait(20), "the cancelled call waited on its gate channel"
    assert paths and not paths[0].exists()
