"""The bash tool: local execution (process groups, timeouts, cancellation, output caps, the
environment) and the editor's terminal (``terminal/*``) through a fake ClientTerminal."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.processes import group_gone, pid_alive
from attrs import evolve

from iaccode.gate.channel import GatePolicy
from iaccode.host import process_tree
from iaccode.protocol.convert import ParamsError, tool_input
from iaccode.protocol.tool_calls import TerminalContent, ToolCallProgress
from iaccode.tool_result import ToolFailure, ToolResult
from iaccode.tools.base import ClientTerminal, ExitStatus, TerminalOutput, ToolContext, ToolLimits
from iaccode.tools.bash import Bash, BashInput

SLACK = 3.0
"""Seconds of scheduling allowed on a loaded machine on top of a bound; what the bounds rule
out is a 30-60 s sleep running to its end."""

BASH = Bash()


class NoFiles:
    """bash never touches files through the context."""

    async def read_text(self, path: Path) -> str:
        raise AssertionError("bash must not read files through the context")

    async def write_text(self, path: Path, text: str) -> None:
        raise AssertionError("bash must not write files through the context")


class Reports:
    def __init__(self) -> None:
        self.updates: list[ToolCallProgress] = []

    async def __call__(self, update: ToolCallProgress) -> None:
        self.updates.append(update)


def make_ctx(
    cwd: Path, reports: Reports | None = None, terminal: ClientTerminal | None = None, **limits: Any
) -> ToolContext:
    limits.setdefault("kill_grace", 0.5)
    return ToolContext(
        cwd=cwd.resolve(),
        limits=ToolLimits(**limits),
        files=NoFiles(),
        tool_call_id="call-1",
        report=reports or Reports(),
        terminal=terminal,
    )


async def run(ctx: ToolContext, command: str, timeout: float | None = None) -> ToolResult:
    raw: dict[str, Any] = {"command": command}
    if timeout is not None:
        raw["timeout"] = timeout
    return await BASH.run(tool_input(raw, Bash.input_type), ctx)


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


# --- basics ----------------------------------------------------------------------------------


async def test_echo(tmp_path: Path) -> None:
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "echo hello")
    assert result.text == "hello\n"
    assert not result.is_error
    assert result.raw_output == {
        "exit_code": 0,
        "signal": None,
        "timed_out": False,
        "output": "hello\n",
        "truncated_bytes": 0,
    }


async def test_non_zero_exit_code_is_an_error(tmp_path: Path) -> None:
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "echo out; exit 3")
    assert result.is_error
    assert result.text == "out\n[exit code 3]"
    assert result.raw_output["exit_code"] == 3
    assert result.raw_output["output"] == "out\n"


async def test_stderr_is_merged_in_order(tmp_path: Path) -> None:
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "echo one; echo two >&2; echo three")
    assert result.text == "one\ntwo\nthree\n"


async def test_runs_in_the_session_cwd(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    with trio.fail_after(10):
        result = await run(ctx, "pwd; touch made-here")
    assert result.text == f"{ctx.cwd}\n"
    assert (tmp_path / "made-here").exists()


async def test_stdin_is_empty(tmp_path: Path) -> None:
    with trio.fail_after(5):
        result = await run(make_ctx(tmp_path), "cat; read -r line || echo no-input; echo after")
    assert result.text == "no-input\nafter\n"


async def test_output_without_trailing_newline(tmp_path: Path) -> None:
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "printf abc")
    assert result.text == "abc"
    with trio.fail_after(10):
        failed = await run(make_ctx(tmp_path), "printf abc; exit 1")
    assert failed.text == "abc\n[exit code 1]"


async def test_no_output(tmp_path: Path) -> None:
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "true")
    assert result.text == "(no output)"
    assert result.raw_output["output"] == ""


async def test_killed_by_a_signal(tmp_path: Path) -> None:
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "kill -9 $$")
    assert result.is_error
    assert result.raw_output["signal"] == "SIGKILL"
    assert result.raw_output["exit_code"] is None
    assert result.text == "[killed by SIGKILL]"


async def test_environment_is_scrubbed_and_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-1",
        "ANTHROPIC_AUTH_TOKEN": "tok-1",
        "GITHUB_TOKEN": "gh-1",
        "MY_SECRET": "s-1",
        "AWS_SECRET_ACCESS_KEY": "aws-1",
        "db_password": "pw-1",
        "Some_Api_Key": "k-1",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KEEP_ME", "kept")
    monkeypatch.setenv("PAGER", "less")
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "env")
    env = dict(line.split("=", 1) for line in result.text.splitlines() if "=" in line)
    for name, value in secrets.items():
        assert name not in env
        assert value not in result.text
    assert env["KEEP_ME"] == "kept"
    assert env["PAGER"] == "cat"
    assert env["GIT_PAGER"] == "cat"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["TERM"] == "dumb"
    assert env["NO_COLOR"] == "1"
    assert env["GIT_EDITOR"] == "true"
    assert env["DEBIAN_FRONTEND"] == "noninteractive"


# --- timeouts, cancellation, process groups --------------------------------------------------


async def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    start = trio.current_time()
    with trio.fail_after(10):
        result = await run(
            ctx, "echo $$ > pgid; sleep 30 & echo $! > bg; echo started; sleep 30", timeout=0.5
        )
    assert trio.current_time() - start < 0.5 + ctx.limits.kill_grace + SLACK
    assert result.is_error
    assert result.raw_output["timed_out"] is True
    assert result.text == "started\n[timed out after 0.5 s; the process group was killed]"
    assert group_gone(read_pid(tmp_path / "pgid"))
    assert not pid_alive(read_pid(tmp_path / "bg"))


async def test_process_ignoring_term_is_killed_after_the_grace(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, kill_grace=0.3)
    start = trio.current_time()
    with trio.fail_after(10):
        result = await run(ctx, "trap '' TERM; echo $$ > pgid; sleep 30", timeout=0.3)
    elapsed = trio.current_time() - start
    assert 0.3 + 0.3 <= elapsed < 0.3 + 0.3 + SLACK
    assert result.raw_output["timed_out"] is True
    assert result.raw_output["signal"] == "SIGKILL"
    assert group_gone(read_pid(tmp_path / "pgid"))


async def test_cancellation_kills_everything_promptly(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    raised: list[BaseException] = []
    start = trio.current_time()
    with trio.fail_after(10):
        with trio.move_on_after(0.5) as scope:
            try:
                await run(
                    ctx, "echo $$ > pgid; nohup sleep 30 >/dev/null 2>&1 & echo $! > bg; sleep 30"
                )
            except BaseException as exc:
                raised.append(exc)
                raise
    assert scope.cancelled_caught
    assert len(raised) == 1 and isinstance(raised[0], trio.Cancelled)  # bare, not a group
    assert trio.current_time() - start < 0.5 + ctx.limits.kill_grace + SLACK
    assert group_gone(read_pid(tmp_path / "pgid"))
    assert not pid_alive(read_pid(tmp_path / "bg"))


async def test_cancellation_is_bounded_when_term_is_ignored(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, kill_grace=0.3)
    start = trio.current_time()
    with trio.fail_after(10), trio.move_on_after(0.3) as scope:
        await run(ctx, "trap '' TERM; echo $$ > pgid; sleep 30 & sleep 30")
    assert scope.cancelled_caught
    assert trio.current_time() - start < 0.3 + 0.3 + SLACK
    assert group_gone(read_pid(tmp_path / "pgid"))


async def test_background_job_does_not_hold_the_call(tmp_path: Path) -> None:
    start = trio.current_time()
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "echo $$ > pgid; sleep 30 & echo $! > bg; echo done")
    assert trio.current_time() - start < SLACK
    assert result.text == "done\n"
    assert not result.is_error
    assert not pid_alive(read_pid(tmp_path / "bg"))
    assert group_gone(read_pid(tmp_path / "pgid"))


async def test_output_of_the_last_moment_is_kept(tmp_path: Path) -> None:
    # The shell exits right after printing; a background job still holds the pipe.
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "sleep 30 & seq 1 20000")
    assert result.text == "".join(f"{n}\n" for n in range(1, 20001))


async def test_timeout_defaults_and_cap(tmp_path: Path) -> None:
    with trio.fail_after(10):
        default = await run(make_ctx(tmp_path, bash_timeout=0.3), "sleep 30")
    assert default.text == "[timed out after 0.3 s; the process group was killed]"
    with trio.fail_after(10):
        capped = await run(make_ctx(tmp_path, bash_max_timeout=0.3), "sleep 30", timeout=100)
    assert capped.text == "[timed out after 0.3 s; the process group was killed]"


@pytest.mark.parametrize("timeout", [0, -1, math.nan])
async def test_non_positive_timeout_is_a_failure(tmp_path: Path, timeout: float) -> None:
    with trio.fail_after(10), pytest.raises(ToolFailure, match="timeout"):
        await run(make_ctx(tmp_path), "touch ran", timeout=timeout)
    assert not (tmp_path / "ran").exists()


async def test_empty_command_is_a_failure(tmp_path: Path) -> None:
    with trio.fail_after(10), pytest.raises(ToolFailure, match="empty"):
        await run(make_ctx(tmp_path), "  \n")


async def test_missing_cwd_is_a_failure(tmp_path: Path) -> None:
    with trio.fail_after(10), pytest.raises(ToolFailure, match="Could not start"):
        await BASH.run(BashInput("echo hi"), make_ctx(tmp_path / "gone"))


# --- output ----------------------------------------------------------------------------------


async def test_endless_output_is_bounded(tmp_path: Path) -> None:
    cap = 1000
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path, bash_output_bytes=cap), "yes", timeout=1)
    output = result.raw_output["output"]
    marker = (
        f"\n[... {result.raw_output['truncated_bytes']} bytes of output dropped from "
        "the middle ...]\n"
    )
    assert marker in output
    assert len(output) <= cap + len(marker)
    assert result.raw_output["truncated_bytes"] > cap
    assert result.raw_output["timed_out"] is True
    assert output.startswith("y\ny\n") and output.endswith("y\n")


async def test_head_and_tail_are_kept(tmp_path: Path) -> None:
    total = sum(len(f"{n}\n") for n in range(1, 100001))
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path, bash_output_bytes=1000), "seq 1 100000")
    assert not result.is_error
    assert result.raw_output["truncated_bytes"] == total - 1000
    assert result.text.startswith("1\n2\n3\n")
    assert result.text.endswith("99999\n100000\n")
    assert f"[... {total - 1000} bytes of output dropped from the middle ...]" in result.text


async def test_a_character_split_by_the_cut_is_not_mangled(tmp_path: Path) -> None:
    # 3-byte characters, a cap of 10: the head keeps 5 bytes (1 whole character + 2 bytes of
    # the next), the tail 5 (2 bytes of one + 1 whole character).
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path, bash_output_bytes=10), "printf '€%.0s' $(seq 20)")
    head, _, tail = result.text.partition("\n[...")
    assert head == "€"
    assert tail.endswith("]\n€")


async def test_binary_output_is_decoded(tmp_path: Path) -> None:
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path), "head -c 100000 /dev/urandom")
    assert isinstance(result.text, str)
    assert not result.is_error
    assert "\ufffd" in result.text


# --- description, title, input ---------------------------------------------------------------


def test_definition() -> None:
    definition = BASH.definition()
    assert definition["name"] == "bash"
    assert definition["input_schema"]["required"] == ["command"]
    assert BASH.kind == "execute"
    assert BASH.read_only is False
    assert "timeout" in BASH.description and "stdin" in BASH.description


def test_title() -> None:
    assert BASH.title(BashInput("ls -la")) == "ls -la"
    assert BASH.title(BashInput("  cd src\nmake all\n")) == "cd src …"
    long = BASH.title(BashInput("echo " + "x" * 200))
    assert len(long) == 80 and long.endswith("…")


def test_input_is_strict() -> None:
    assert tool_input({"command": "ls", "timeout": 5}, Bash.input_type) == BashInput("ls", 5.0)
    with pytest.raises(ParamsError) as info:
        tool_input({"command": "ls", "timeout": "5"}, Bash.input_type)
    assert "input.timeout" in info.value.problems
    with pytest.raises(ParamsError):
        tool_input({}, Bash.input_type)


# --- the editor's terminal -------------------------------------------------------------------


class FakeTerminal:
    """Records every terminal/* call. ``hang`` makes the command run until killed."""

    def __init__(
        self,
        *,
        hang: bool = False,
        hang_kill: bool = False,
        exit_code: int = 0,
        output: str = "hello\n",
        truncated: bool = False,
        create_error: ToolFailure | None = None,
    ) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.hang = hang
        self.hang_kill = hang_kill
        self.exit_code = exit_code
        self.text = output
        self.truncated = truncated
        self.create_error = create_error
        self.killed = trio.Event()

    def names(self) -> list[str]:
        return [call[0] for call in self.calls]

    def _status(self) -> ExitStatus:
        if self.killed.is_set():
            return ExitStatus(None, "SIGKILL")
        return ExitStatus(self.exit_code, None)

    async def create(
        self,
        command: str,
        args: list[str],
        cwd: str,
        output_byte_limit: int,
        env: dict[str, str] | None = None,
    ) -> str:
        self.calls.append(("create", command, args, cwd, output_byte_limit))
        await trio.lowlevel.checkpoint()
        if self.create_error is not None:
            raise self.create_error
        return "term-1"

    async def output(self, terminal_id: str) -> TerminalOutput:
        self.calls.append(("output", terminal_id))
        await trio.lowlevel.checkpoint()
        return TerminalOutput(self.text, self.truncated, self._status())

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        self.calls.append(("wait_for_exit", terminal_id))
        if self.hang:
            await self.killed.wait()
        await trio.lowlevel.checkpoint()
        return self._status()

    async def kill(self, terminal_id: str) -> None:
        self.calls.append(("kill", terminal_id))
        if self.hang_kill:
            await trio.sleep_forever()
        self.killed.set()

    async def release(self, terminal_id: str) -> None:
        self.calls.append(("release", terminal_id))
        await trio.lowlevel.checkpoint()


async def test_terminal_runs_the_command(tmp_path: Path) -> None:
    terminal = FakeTerminal(exit_code=2)
    reports = Reports()
    ctx = make_ctx(tmp_path, reports, terminal, bash_output_bytes=4096)
    with trio.fail_after(10):
        result = await run(ctx, "make test")
    program, args, cwd, limit = terminal.calls[0][1:]
    if process_tree.supported():  # the shell runs under our supervisor
        assert program == sys.executable
        assert args[:3] == ["-P", "-m", "iaccode.tools.supervise"]
        shell, args = args[-3], args[-2:]
    else:
        shell = program
    assert shell in ("/bin/bash", "/bin/sh")
    assert args == ["-c", "make test"]
    assert cwd == str(ctx.cwd)
    assert limit == 4096
    assert terminal.names() == ["create", "wait_for_exit", "output", "release"]
    assert reports.updates == [
        ToolCallProgress(tool_call_id="call-1", content=[TerminalContent("term-1")])
    ]
    assert result.content == [TerminalContent("term-1")]
    assert result.is_error
    assert result.text == "hello\n[exit code 2]"
    assert result.raw_output["exit_code"] == 2
    assert result.raw_output["timed_out"] is False


async def test_terminal_success_and_truncation(tmp_path: Path) -> None:
    terminal = FakeTerminal(output="tail end", truncated=True)
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path, terminal=terminal), "build")
    assert not result.is_error
    assert result.text.endswith("\ntail end")
    assert "cut by the terminal's limit" in result.text
    assert result.raw_output["truncated"] is True


async def test_terminal_timeout_kills_and_releases(tmp_path: Path) -> None:
    terminal = FakeTerminal(hang=True)
    with trio.fail_after(10):
        result = await run(make_ctx(tmp_path, terminal=terminal), "sleep 30", timeout=0.3)
    assert terminal.names() == ["create", "wait_for_exit", "kill", "output", "release"]
    assert result.is_error
    assert result.raw_output["timed_out"] is True
    assert result.text == "hello\n[timed out after 0.3 s; the process group was killed]"
    assert result.content == [TerminalContent("term-1")]


async def test_terminal_cancellation_kills_and_releases(tmp_path: Path) -> None:
    terminal = FakeTerminal(hang=True)
    reports = Reports()
    raised: list[BaseException] = []
    with trio.fail_after(10), trio.move_on_after(0.3) as scope:
        try:
            await run(make_ctx(tmp_path, reports, terminal), "sleep 30")
        except BaseException as exc:
            raised.append(exc)
            raise
    assert scope.cancelled_caught
    assert len(raised) == 1 and isinstance(raised[0], trio.Cancelled)
    assert terminal.names() == ["create", "wait_for_exit", "kill", "release"]
    assert reports.updates[0].content == [TerminalContent("term-1")]


async def test_terminal_cancellation_is_bounded_when_kill_hangs(tmp_path: Path) -> None:
    terminal = FakeTerminal(hang=True, hang_kill=True)
    ctx = make_ctx(tmp_path, terminal=terminal, kill_grace=0.2)
    start = trio.current_time()
    with trio.fail_after(10), trio.move_on_after(0.3) as scope:
        await run(ctx, "sleep 30")
    assert scope.cancelled_caught
    assert trio.current_time() - start < 0.3 + 2 * (0.2 + 1.0) + SLACK
    assert terminal.names() == ["create", "wait_for_exit", "kill", "release"]


async def never_asked(question: Any) -> str | None:
    raise AssertionError("no gate runs here")


@pytest.mark.parametrize("gated", [False, True], ids=["no-gates", "gates"])
async def test_terminal_create_error_is_a_failure(tmp_path: Path, gated: bool) -> None:
    terminal = FakeTerminal(
        create_error=ToolFailure("The editor could not run the command: no shells today")
    )
    ctx = make_ctx(tmp_path, terminal=terminal)
    if gated:  # the gate's channel around the call must not wrap the failure in a group
        ctx = evolve(ctx, gate=GatePolicy(never_asked))
    with trio.fail_after(10), pytest.raises(ToolFailure, match="no shells today"):
        await run(ctx, "ls")
    assert terminal.names() == ["create"]
