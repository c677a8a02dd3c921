"""The editor facade: what it sends for each call, how it reads the answers, and how the
editor's errors (``EditorError``, from the server's adapter) and its malformed answers reach
the tools and the turn."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from iaccode.host.local_files import LocalFiles
from iaccode.protocol.elicitation import Elicitation, ElicitationAnswer, text_form
from iaccode.protocol.messages import (
    ClientCapabilities,
    ElicitationCapabilities,
    FileSystemCapabilities,
)
from iaccode.protocol.tool_calls import ToolCallFields
from iaccode.session.editor import Editor
from iaccode.session.errors import EditorError
from iaccode.tool_result import ToolFailure
from iaccode.tools.base import ExitStatus, TerminalOutput
from iaccode.turn.permissions import OPTIONS


@pytest.fixture
def real(tmp_path: Path) -> Path:
    """The test's folder as a real path (what the tool runner hands the tools)."""
    return Path(os.path.realpath(tmp_path))


FIELDS = ToolCallFields("t1", "Run ls", "execute", "pending", name="bash")


class Wire:
    """The editor's side of the requests: answers in order, records what was asked."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, Any]] = []

    async def __call__(self, method: str, params: Any) -> Any:
        await trio.lowlevel.checkpoint()
        self.sent.append((method, params))
        answer = self.answers.pop(0)
        if isinstance(answer, EditorError):
            raise answer
        return answer


def editor(
    wire: Wire,
    *,
    read: bool = True,
    write: bool = True,
    terminal: bool = True,
    elicitation: ElicitationCapabilities | None = None,
) -> Editor:
    async def send_update(update: Any) -> None:
        raise AssertionError("no update expected")

    client = ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=read, write_text_file=write),
        terminal=terminal,
        elicitation=elicitation,
    )
    return Editor(wire, send_update, "sess-1", client, LocalFiles(max_bytes=1_000_000))


@pytest.mark.parametrize(
    ("reply", "choice"),
    [
        ({"outcome": {"outcome": "selected", "optionId": "allow_always"}}, "allow_always"),
        ({"outcome": {"outcome": "selected", "optionId": "reject_once"}}, "reject_once"),
        ({"outcome": {"outcome": "cancelled"}}, "cancelled"),
        ({"outcome": {"outcome": "selected", "optionId": "no-such-option"}}, None),
        (
            {"outcome": "allowed", "option_id": "allow_always"},
            "allow_always",
        ),  # an older flat shape
        ({"outcome": "allowed"}, "allow_once"),
        ({"outcome": "denied"}, "reject_once"),
        ("yes please", None),
        ({"outcome": {"outcome": "selected", "optionId": 5}}, None),  # a wrong type
        ({"outcome": 5}, None),
        (EditorError("Internal error", {"detail": "boom"}), None),
        (EditorError("connection closed"), None),
    ],
)
async def test_a_permission_answer_becomes_a_choice(reply: Any, choice: str | None) -> None:
    wire = Wire(reply)
    assert await editor(wire).request_permission(FIELDS, OPTIONS) == choice
    [(method, params)] = wire.sent
    assert method == "session/request_permission"
    assert params["sessionId"] == "sess-1" and params["toolCall"]["toolCallId"] == "t1"
    assert [o["optionId"] for o in params["options"]] == [o.option_id for o in OPTIONS]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (
            {"outcome": {"outcome": "selected", "optionId": 5}},
            "result.outcome.optionId: expected a string, got an integer",
        ),
        ({"outcome": {"outcome": "selected"}}, "result.outcome.optionId: is required"),
        ({"outcome": "bogus"}, "result.outcome: unknown outcome 'bogus'"),
        ([], "result: expected an object, got an array"),
    ],
)
async def test_a_malformed_permission_answer_is_logged_saying_what_was_wrong(
    reply: Any, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "iaccode.session.editor"):
        assert await editor(Wire(reply)).request_permission(FIELDS, OPTIONS) is None
    [record] = caplog.records
    assert "malformed permission answer" in record.message and problem in record.message


async def test_files_go_through_the_editor_for_the_directions_it_advertised(real: Path) -> None:
    path = real / "a.txt"
    path.write_text("on disk\n")
    wire = Wire({"content": "in the buffer\n"})
    files = editor(wire, write=False).files
    assert await files.read_text(path) == "in the buffer\n"
    await files.write_text(path, "written locally\n")  # the editor cannot write: local
    assert path.read_text() == "written locally\n"
    assert wire.sent == [("fs/read_text_file", {"sessionId": "sess-1", "path": str(path)})]


async def test_without_fs_capabilities_files_are_local(tmp_path: Path) -> None:
    wire = Wire()
    path = tmp_path / "b.txt"
    files = editor(wire, read=False, write=False).files
    assert isinstance(files, LocalFiles)
    await files.write_text(path, "x")
    assert path.read_text() == "x" and wire.sent == []


async def test_an_editor_error_on_a_file_is_a_tool_failure_naming_it(real: Path) -> None:
    path = real / "a.txt"
    path.write_text("x")
    wire = Wire(
        EditorError("Resource not found", {"uri": "a.txt"}),
        {"nothing": 1},
        EditorError("Read-only buffer"),
    )
    files = editor(wire).files
    with pytest.raises(ToolFailure) as read:
        await files.read_text(path)
    assert str(read.value) == (
        f"The editor could not read {path}: Resource not found ({{'uri': 'a.txt'}})"
    )
    with pytest.raises(ToolFailure) as unread:
        await files.read_text(path)
    assert str(unread.value) == (
        f"The editor gave no text for {path}: a malformed answer to "
        "fs/read_text_file (result.content: is required)"
    )
    with pytest.raises(ToolFailure) as wrote:
        await files.write_text(path, "y")
    assert str(wrote.value) == f"The editor could not write {path}: Read-only buffer"


async def test_a_special_file_is_refused_before_asking_the_editor(real: Path) -> None:
    wire = Wire()
    with pytest.raises(ToolFailure, match="is a directory"):
        await editor(wire).files.read_text(real)
    assert wire.sent == []


async def test_a_write_to_a_fifo_is_refused_before_the_editor_blocks_on_it(real: Path) -> None:
    """An editor writing to a named pipe waits for a reader that never comes (the turn hung
    until the request timed out); a new file still goes to the editor."""
    os.mkfifo(real / "pipe")
    wire = Wire({})
    files = editor(wire).files
    with pytest.raises(ToolFailure, match="not a regular file"):
        await files.write_text(real / "pipe", "x")
    with pytest.raises(ToolFailure, match="is a directory"):
        await files.write_text(real, "x")
    assert wire.sent == []
    await files.write_text(real / "new.txt", "x")
    assert [method for method, _ in wire.sent] == ["fs/write_text_file"]


async def test_terminal_calls_and_their_answers() -> None:
    wire = Wire(
        {"terminalId": "term-7"},
        {"exitCode": 3, "signal": None},
        {"output": "out\n", "truncated": True, "exitStatus": {"exitCode": 3}},
        None,
        None,
    )
    terminal = editor(wire).terminal
    assert terminal is not None
    assert await terminal.create("bash", ["-c", "ls"], "/w", 4096) == "term-7"
    assert await terminal.wait_for_exit("term-7") == ExitStatus(3, None)
    assert await terminal.output("term-7") == TerminalOutput("out\n", True, ExitStatus(3, None))
    await terminal.kill("term-7")
    await terminal.release("term-7")
    assert wire.sent[0] == (
        "terminal/create",
        {
            "sessionId": "sess-1",
            "command": "bash",
            "args": ["-c", "ls"],
            "cwd": "/w",
            "outputByteLimit": 4096,
        },
    )
    assert [m for m, _ in wire.sent[1:]] == [
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/kill",
        "terminal/release",
    ]
    assert all(p == {"sessionId": "sess-1", "terminalId": "term-7"} for _, p in wire.sent[1:])


async def test_a_file_answer_of_the_wrong_type_is_a_tool_failure_naming_the_field(
    real: Path,
) -> None:
    path = real / "a.txt"
    path.write_text("x")
    with pytest.raises(ToolFailure) as unread:
        await editor(Wire({"content": ["x"]})).files.read_text(path)
    assert str(unread.value).endswith("(result.content: expected a string, got an array)")


@pytest.mark.parametrize(
    ("reply", "problems"),
    [
        ({}, "result.output: is required; result.truncated: is required"),
        ("text", "result: expected an object, got a string"),
        ({"output": "x", "truncated": "no"}, "result.truncated: expected a boolean, got a string"),
        (
            {"output": 5, "truncated": False, "exitStatus": {"exitCode": "0", "signal": "SIGTERM"}},
            "result.output: expected a string, got an integer; "
            "result.exitStatus.exitCode: expected an integer, got a string",
        ),
    ],
)
async def test_a_terminal_output_answer_that_does_not_fit_is_a_tool_failure_naming_it(
    reply: Any, problems: str
) -> None:
    """Like an error answer: the bash tool then says the output could not be read."""
    terminal = editor(Wire(reply)).terminal
    assert terminal is not None
    with pytest.raises(ToolFailure) as failed:
        await terminal.output("t")
    assert str(failed.value) == (
        "The editor could not read the terminal's output: a malformed "
        f"answer to terminal/output ({problems})"
    )


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"exitCode": "0"}, "result.exitCode: expected an integer, got a string"),
        ({"exitCode": 1, "signal": 9}, "result.signal: expected a string, got an integer"),
        ([0], "result: expected an object, got an array"),
    ],
)
async def test_an_exit_status_of_the_wrong_type_is_a_tool_failure_naming_it(
    reply: Any, problem: str
) -> None:
    terminal = editor(Wire(reply)).terminal
    assert terminal is not None
    with pytest.raises(ToolFailure) as failed:
        await terminal.wait_for_exit("t")
    assert str(failed.value) == (
        f"The editor's terminal failed: a malformed answer to terminal/wait_for_exit ({problem})"
    )


async def test_an_exit_status_may_say_nothing() -> None:
    terminal = editor(Wire({}, None)).terminal
    assert terminal is not None
    assert await terminal.wait_for_exit("t") == ExitStatus()
    assert await terminal.wait_for_exit("t") == ExitStatus()


async def test_terminal_errors_are_tool_failures_saying_what_failed() -> None:
    wire = Wire(
        EditorError("no shells today"), {"id": "wrong"}, {"terminalId": 7}, EditorError("it died")
    )
    terminal = editor(wire).terminal
    assert terminal is not None
    with pytest.raises(ToolFailure, match="^The editor could not run the command: no shells"):
        await terminal.create("bash", [], "/", 1)
    with pytest.raises(
        ToolFailure,
        match=r"^The editor did not create a terminal: a malformed "
        r"answer to terminal/create \(result.terminalId: is required\)$",
    ):
        await terminal.create("bash", [], "/", 1)
    with pytest.raises(
        ToolFailure,
        match=r"\(result.terminalId: expected a string, got an "
        r"integer\)$",
    ):
        await terminal.create("bash", [], "/", 1)
    with pytest.raises(ToolFailure, match="^The editor's terminal failed: it died"):
        await terminal.wait_for_exit("t")


def test_no_terminal_unless_the_client_has_them() -> None:
    assert editor(Wire(), terminal=False).terminal is None


FORM = ElicitationCapabilities(form={})
CONFIRM = Elicitation(
    "Type prod to destroy it", requested_schema=text_form("confirm", "Name"), tool_call_id="t1"
)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (
            {"action": "accept", "content": {"confirm": "prod"}},
            ElicitationAnswer("accept", {"confirm": "prod"}),
        ),
        ({"action": "accept"}, ElicitationAnswer("accept")),
        ({"action": "decline", "content": {"confirm": "prod"}}, ElicitationAnswer("decline")),
        ({"action": "cancel"}, ElicitationAnswer("cancel")),
        ({"action": "_later", "_meta": {}}, ElicitationAnswer("_later")),
        ({"action": "accept", "content": ["prod"]}, None),
        ({"outcome": "accept"}, None),
        ("accept", None),
        (None, None),
        ({"action": 1}, None),  # a wrong type
        (EditorError("no forms here"), None),
    ],
)
async def test_an_elicitation_and_its_answer(reply: Any, answer: ElicitationAnswer | None) -> None:
    wire = Wire(reply)
    assert await editor(wire, elicitation=FORM).elicit(CONFIRM) == answer
    assert wire.sent == [
        (
            "elicitation/create",
            {
                "sessionId": "sess-1",
                "toolCallId": "t1",
                "mode": "form",
                "message": "Type prod to destroy it",
                "requestedSchema": {
                    "type": "object",
                    "required": ["confirm"],
                    "properties": {"confirm": {"type": "string", "title": "Name"}},
                },
            },
        )
    ]


@pytest.mark.parametrize(
    "capabilities", [None, ElicitationCapabilities(), ElicitationCapabilities(url={})]
)
async def test_a_mode_the_editor_did_not_advertise_is_never_sent(
    capabilities: ElicitationCapabilities | None,
) -> None:
    wire = Wire()
    facade = editor(wire, elicitation=capabilities)
    assert "form" not in facade.elicitation_modes
    assert await facade.elicit(CONFIRM) is None
    assert wire.sent == []
