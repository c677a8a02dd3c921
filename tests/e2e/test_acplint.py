"""acplint (PyPI), a third-party ACP linter, run against a real ``iaccode acp``.

acplint 0.1.0 speaks an older draft of ACP than the stable schema (``@agentclientprotocol/sdk``
2.4.0) we are checked against, so some of its checks fail on iac-code for reasons of its own;
``docs/conformance.md`` lists them with the reason each is acplint's. This test pins that
list: any other failure, or an error, is ours to look at. It runs offline (acplint spawns the
agent over stdio; the agent plays a model script), with no network.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from acp_conformance.script import reply

from iaccode.llm.script import dump_script
from tests.support.environment import agent_environment

pytestmark = pytest.mark.process  # acplint spawns the agent

ACPLINT = Path(sys.executable).with_name("acplint")

ACPLINTS_OWN = {
    # It sends and expects protocolVersion as the string "1"; the schema's ProtocolVersion is
    # an integer (uint16). We answer 1 (and log that "1" is not a version we can read).
    "initialize_v1": "protocolVersion: Input should be '1'",
    "protocol_version_returned": "Expected protocolVersion='1'",
    "schema_initialize": "protocolVersion: Input should be '1'",
    # Its SessionConfigOption requires a `label`; the schema's has `name` (which we send).
    "new_session": "label: Field required",
    "schema_session_new": "label: Field required",
    # Its session/prompt sends the blocks as `content`; the schema's field is `prompt`
    # (required), so we answer -32602 and it finds no stopReason. It also counts updates by
    # camelCase kinds ("agentMessageChunk"); the schema's are snake_case.
    "agent_message_chunk_received": "No agentMessageChunk updates received",
    "prompt_stop_reason": "No stopReason in prompt response",
}
"""acplint's failing checks that are acplint's doing -> a piece of its message."""

CATEGORIES = (
    "initialization",
    "authentication",
    "session_lifecycle",
    "streaming",
    "session_modes",
    "config_options",
    "cancel",
    "stress",
    "schema_validation",
)
"""acplint's categories but five: tool_calls, permissions, file_operations, terminals and plans
each send a prompt in acplint's older shape (``content``), which we refuse (-32602), then wait
a fixed window (5 to 20 s) for a tool call, a question, a file or terminal request or a plan
that a refused prompt never makes, and pass ("No ... received"): 50 s that check nothing."""


def test_acplint_finds_nothing_of_ours(tmp_path: Path) -> None:
    script = tmp_path / "model.json"
    dump_script([reply("Hello from the scripted model.") for _ in range(300)], script)
    project = tmp_path / "project"
    project.mkdir()
    report = tmp_path / "acplint.json"
    env = agent_environment(tmp_path / "home", {"IAC_CODE_MODEL_SCRIPT": str(script)})
    done = subprocess.run(
        [
            str(ACPLINT),
            "--agent",
            sys.executable,
            "--agent-args",
            "-m iaccode acp",
            "--cwd",
            str(project),
            "--output",
            "json",
            "--output-file",
            str(report),
            "--timeout",
            "20",
            "--categories",
            *CATEGORIES,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert report.exists(), done.stdout + done.stderr
    results = json.loads(report.read_text())["results"]
    assert {r["category"] for r in results} == set(CATEGORIES), results  # it ran its checks
    assert len(results) > 35, results
    failing = {r["name"]: r for r in results if r["status"] != "PASS"}
    assert set(failing) == set(ACPLINTS_OWN), json.dumps(failing, indent=1)[:4000]
    for name, piece in ACPLINTS_OWN.items():
        assert piece in (failing[name]["message"] or ""), failing[name]
    # And what it did pass on includes the parts it reads the stable way.
    passed = {r["name"] for r in results if r["status"] == "PASS"}
    assert {
        "list_sessions",
        "load_session",
        "fork_session",
        "cancel_graceful_handling",
        "stress_concurrent_sessions",
        "schema_all_notifications_valid",
    } <= passed
