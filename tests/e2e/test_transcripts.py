"""Record, replay, the golden transcripts and the demo, as a developer would run them."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp_conformance.script import ToolUse, reply

from tests.golden import record

pytestmark = pytest.mark.process  # iaccode replay, iaccode demo and --record are commands

GOLDEN = sorted(Path(record.GOLDEN).glob("*.jsonl"))
IACCODE = [sys.executable, "-m", "iaccode"]


def iaccode(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IACCODE, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_golden_transcripts_replay(path: Path) -> None:
    result = iaccode("replay", str(path))
    assert result.returncode == 0, result.stderr
    assert "agent messages match" in result.stdout


def test_the_golden_set_is_complete() -> None:
    assert {p.stem for p in GOLDEN} == {
        "plain-answer",
        "tool-permission-rejection",
        "cancel-mid-command",
        "load-after-crash",
        "absolute-paths",
    }


def test_record_through_the_sdk_then_replay(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    asyncio.run(
        record._record(
            out, [reply(["Hi ", "there."], thinking="Greet.")], record.one_prompt("Hello"), []
        )
    )
    text = out.read_text()
    assert "recording-key" not in text  # secrets never reach the file
    kinds = [json.loads(line)["type"] for line in text.splitlines()]
    assert kinds[0] == "header" and {"workspace", "wire", "model"} <= set(kinds)

    result = iaccode("replay", str(out))
    assert result.returncode == 0, result.stderr

    same_build = iaccode("replay", str(out), "--agent", f"{sys.executable} -m iaccode acp")
    assert same_build.returncode == 0, same_build.stderr


def test_a_changed_byte_is_reported_with_a_diff(tmp_path: Path) -> None:
    tampered = tmp_path / "tampered.jsonl"
    lines = GOLDEN_PLAIN.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"text":"This is a Terraform ' in line)
    lines[index] = lines[index].replace("This is a Terraform", "This is a Terrafork")
    tampered.write_text("\n".join(lines) + "\n")
    result = iaccode("replay", str(tampered))
    assert result.returncode == 1
    assert "replay diverged" in result.stderr
    assert "params.update.content.text" in result.stderr
    assert "Terrafork" in result.stderr and "Terraform" in result.stderr

    fixed = iaccode("replay", str(tampered), "--update")
    assert fixed.returncode == 0, fixed.stderr
    assert iaccode("replay", str(tampered)).returncode == 0


AGENT_THAT_WAITS_FOR_EOF = """
import sys
from pathlib import Path
sys.stdin.readline()
print(Path(sys.argv[1]).read_text(), flush=True)  # its answer to initialize
sys.stdin.read()  # until its input ends
Path(sys.argv[2]).write_text("input ended")
"""


@pytest.mark.parametrize("stop", ["divergence", "refused record"])
def test_a_replay_that_stops_early_ends_the_agents_input(tmp_path: Path, stop: str) -> None:
    """The replayed agent learns the replay is over from its input's end, however it ended (it
    was killed after 5 s of waiting when the replay stopped at a divergence or a refusal)."""
    transcript, answer, agent_log = (tmp_path / n for n in ("t.jsonl", "answer", "agent.log"))
    records = [json.loads(line) for line in GOLDEN_PLAIN.read_text().splitlines()]
    recorded = next(r["message"] for r in records if r.get("from") == "agent")
    if stop == "divergence":
        answer.write_text(json.dumps(recorded | {"result": {"protocolVersion": 99}}))
    else:  # initialize answered as recorded; the next record is refused before it is sent
        answer.write_text(json.dumps(recorded))
        for line in records:
            message = line.get("message") or {}
            if line["type"] == "wire" and message.get("method") == "session/new":
                message["params"]["cwd"] = "/var"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in records))
    script = tmp_path / "agent.py"
    script.write_text(AGENT_THAT_WAITS_FOR_EOF)
    agent = f"{sys.executable} {script} {answer} {agent_log}"
    result = iaccode("replay", str(transcript), "--agent", agent)
    assert result.returncode == (1 if stop == "divergence" else 2), result.stderr
    assert agent_log.read_text() == "input ended"


def test_a_newer_format_is_refused_clearly(tmp_path: Path) -> None:
    future = tmp_path / "future.jsonl"
    lines = GOLDEN_PLAIN.read_text().splitlines()
    header = json.loads(lines[0]) | {"format": "2.0"}
    future.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    result = iaccode("replay", str(future))
    assert result.returncode == 2
    assert "newer than this iaccode reads" in result.stderr


def test_the_demo_runs_without_a_key(tmp_path: Path) -> None:
    result = subprocess.run(
        [*IACCODE, "demo", "--speed", "50"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    for shown in (
        "Tag the logs bucket",
        "Read main.tf",
        "Allow Edit main.tf",
        "Environment = var.environment",
        "end_turn",
        "IaC check of main.tf (Terraform) found 1 problem:",
        "IaC check of main.tf (Terraform): no problems.",
        "Plan summary: 0 to add, 1 to change, 0 to destroy",
        "~ update   aws_s3_bucket.logs",
        "Changes real infrastructure: terraform apply",
    ):
        assert shown in result.stdout


GOLDEN_PLAIN = Path(record.GOLDEN) / "plain-answer.jsonl"
GOLDEN_ABSOLUTE = Path(record.GOLDEN) / "absolute-paths.jsonl"


def recorded_cwd(path: Path) -> Path:
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "workspace":
            return Path(record["cwd"])
    raise AssertionError("no workspace record")


def test_absolute_paths_are_mapped_and_the_recorded_folder_is_never_touched() -> None:
    """The model named the recording machine's folder in its tool inputs, a command's output
    and its answer. The replay runs in a folder of its own; a decoy at the recorded place
    must be neither read (the replay would diverge) nor written."""
    recorded = recorded_cwd(GOLDEN_ABSOLUTE)
    assert recorded.is_absolute() and f'"path":"{recorded}' in GOLDEN_ABSOLUTE.read_text()
    assert not recorded.exists()  # recorded elsewhere, and gone
    recorded.mkdir(parents=True)
    try:
        decoy = 'resource "decoy" "x" {}\n'
        (recorded / "main.tf").write_text(decoy)
        result = iaccode("replay", str(GOLDEN_ABSOLUTE))
        assert result.returncode == 0, result.stderr
        assert (recorded / "main.tf").read_text() == decoy
        assert sorted(p.name for p in recorded.iterdir()) == ["main.tf"]
    finally:
        shutil.rmtree(recorded.parent)


def _with_model_call(path: Path, out: Path, tool_input: dict[str, object]) -> None:
    """``path`` with its first model answer replaced by one read_file call."""
    lines = path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "model")
    record = json.loads(lines[index])
    record["events"] = reply(tool_uses=[ToolUse("toolu_out", "read_file", tool_input)])["events"]
    lines[index] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("outside", ["/etc/hostname", "../../../etc/hostname", "~/.ssh/id_rsa"])
def test_a_recorded_path_outside_the_scratch_folders_is_refused(
    tmp_path: Path, outside: str
) -> None:
    hostile = tmp_path / "hostile.jsonl"
    _with_model_call(GOLDEN_ABSOLUTE, hostile, {"path": outside})
    result = iaccode("replay", str(hostile))
    assert result.returncode == 2, result.stderr
    assert f"names {outside!r}, which is outside the recorded project folder" in result.stderr
    assert "toolu_out (read_file)" in result.stderr


def test_a_session_opened_outside_the_recorded_folders_is_refused(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.jsonl"
    records = [json.loads(line) for line in GOLDEN_PLAIN.read_text().splitlines()]
    for line in records:
        message = line.get("message") or {}
        if line["type"] == "wire" and message.get("method") == "session/new":
            message["params"]["cwd"] = "/var"
    hostile.write_text("".join(json.dumps(line) + "\n" for line in records))
    result = iaccode("replay", str(hostile))
    assert result.returncode == 2, result.stderr
    assert "the client's session/new names '/var'" in result.stderr


def test_mcp_results_are_recorded_and_a_replay_does_not_call_the_server_again(
    tmp_path: Path,
) -> None:
    """A replay must not drop the table a second time: the MCP server's answers are played."""
    from acp.schema import EnvVariable, McpServerStdio
    from acp_conformance.fakes.mcp_server import ROOT, calls

    calls_log = tmp_path / "mcp-calls.jsonl"
    server = McpServerStdio(
        name="db",
        command=sys.executable,
        args=["-m", "acp_conformance.fakes.mcp_server", "stdio", "--log", str(calls_log)],
        env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))],
    )

    async def scenario(conn: Any, editor: record.Editor, project: Path) -> None:
        session = await conn.new_session(cwd=str(project), mcp_servers=[server])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Drop it")])

    out = tmp_path / "session.jsonl"
    asyncio.run(
        record._record(
            out,
            [
                reply(tool_uses=[ToolUse("toolu_drop", "mcp__db__drop_table", {"name": "old"})]),
                reply("Dropped."),
            ],
            scenario,
            ["allow_once"],
        )
    )
    [recorded] = [
        json.loads(line)
        for line in out.read_text().splitlines()
        if json.loads(line)["type"] == "tool"
    ]
    assert (recorded["name"], recorded["result"]["text"]) == ("mcp__db__drop_table", "dropped old")
    assert calls(calls_log) == [{"tool": "drop_table", "arguments": {"name": "old"}}]

    result = iaccode("replay", str(out))
    assert result.returncode == 0, result.stderr
    assert calls(calls_log) == [{"tool": "drop_table", "arguments": {"name": "old"}}]  # once
