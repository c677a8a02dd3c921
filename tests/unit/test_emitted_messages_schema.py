"""Every message type iac-code emits validates against the official ACP schema.

The end-to-end tests check each message a real run sends; this proves it per type, including
the variants a run might not reach (every update kind, every stop reason, every error code).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp_conformance.schema import schema_defs, validate_def

from iaccode.config import Config
from iaccode.llm.providers import auth_methods
from iaccode.protocol import messages as m
from iaccode.protocol.content import TextContent
from iaccode.protocol.convert import to_wire
from iaccode.protocol.tool_calls import (
    ContentToolCallContent,
    DiffContent,
    RequestPermissionRequest,
    TerminalContent,
    ToolCallFields,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
)
from iaccode.server.credentials import auth_method
from iaccode.server.options import ACP_MODES
from iaccode.turn.permissions import OPTIONS
from iaccode.wire import errors

MODEL_STATE = m.SessionModelState("claude-sonnet-5-5", [m.ModelInfo("claude-sonnet-5-5", "S")])
MODEL_OPTION = m.SessionConfigOption(
    id="model",
    name="Model",
    category="model",
    current_value="claude-sonnet-5-5",
    options=[m.ConfigOptionValue("claude-sonnet-5-5", "Claude Sonnet 5.5")],
)

RESULTS: list[tuple[str, Any]] = [
    (
        "InitializeResponse",
        m.InitializeResponse(
            protocol_version=1,
            agent_capabilities=m.AgentCapabilities(
                load_session=False,
                prompt_capabilities=m.PromptCapabilities(embedded_context=True),
                session_capabilities=m.SessionCapabilities(close={}),
            ),
            agent_info=m.Implementation("iaccode", "0.1.0", title="iac-code"),
            auth_methods=[auth_method(Config(home=Path(".")))],
        ),
    ),
    (
        "InitializeResponse",
        m.InitializeResponse(  # what iac-code says to a client today
            protocol_version=1,
            agent_capabilities=m.AgentCapabilities(
                load_session=True,
                prompt_capabilities=m.PromptCapabilities(embedded_context=True),
                session_capabilities=m.SessionCapabilities(additional_directories={}),
                auth=m.AgentAuthCapabilities(logout={}),
            ),
            agent_info=m.Implementation("iaccode", "0.1.0", title="iac-code"),
            auth_methods=[
                m.AuthMethod(**method)  # type: ignore[arg-type]
                for method in auth_methods(Config(home=Path(".")), terminal=True)
            ],
        ),
    ),
    ("LogoutResponse", m.Empty()),
    ("AuthenticateResponse", m.Empty()),
    (
        "NewSessionResponse",
        m.NewSessionResponse(
            "sess_1",
            m.SessionModeState("default", list(ACP_MODES.values())),
            MODEL_STATE,
            [MODEL_OPTION],
        ),
    ),
    ("SetSessionConfigOptionResponse", m.SetConfigOptionResponse([MODEL_OPTION])),
    ("SetSessionModeResponse", m.Empty()),
    (
        "LoadSessionResponse",
        m.SessionStateResponse(
            m.SessionModeState("plan", list(ACP_MODES.values())), MODEL_STATE, [MODEL_OPTION]
        ),
    ),
    (
        "ResumeSessionResponse",
        m.SessionStateResponse(
            m.SessionModeState("plan", list(ACP_MODES.values())), MODEL_STATE, [MODEL_OPTION]
        ),
    ),
    (
        "ForkSessionResponse",
        m.NewSessionResponse(
            "sess_2",
            m.SessionModeState("default", list(ACP_MODES.values())),
            MODEL_STATE,
            [MODEL_OPTION],
        ),
    ),
    (
        "ListSessionsResponse",
        m.ListSessionsResponse(
            [
                m.SessionInfo(
                    "sess_1", "/p", "Title", "2026-11-29T22:00:00.000000Z", ["/shared", "/docs"]
                ),
                m.SessionInfo("sess_2", "/p"),
            ],
            "cursor-2",
        ),
    ),
    ("ListSessionsResponse", m.ListSessionsResponse([])),
    ("DeleteSessionResponse", m.Empty()),
    ("CloseSessionResponse", m.Empty(meta={"x": 1})),
    *[
        ("PromptResponse", m.PromptResponse(reason, m.Usage(1, 2, 3, 4, 5)))
        for reason in ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")
    ],
    ("PromptResponse", m.PromptResponse("end_turn")),
]

UPDATES: list[m.SessionUpdate] = [
    m.AgentMessageChunk(TextContent("hi")),
    m.AgentMessageChunk(TextContent("⚠ error"), meta={"iaccode": {"error": "boom"}}),
    m.AgentThoughtChunk(TextContent("hmm")),
    m.AgentMessageChunk(TextContent("hi"), message_id="msg_1"),
    m.AgentThoughtChunk(TextContent("hmm"), message_id="msg_1"),
    m.NoticeUpdate("error", "The model request failed", "overloaded after 4 retries"),
    m.NoticeUpdate("warning", "An MCP server is not available"),
    m.CompactionUpdate("compaction_1", "in_progress"),
    m.CompactionUpdate("compaction_1", "completed", summary=[TextContent("Summarised.")]),
    m.CompactionUpdate("compaction_1", "failed", error="overloaded"),
    m.CompactionUpdate("compaction_1", "cancelled"),
    m.UserMessageChunk(TextContent("question")),
    m.UsageUpdate(used=1234, size=200_000),
    m.CurrentModeUpdate("plan"),
    m.AvailableCommandsUpdate([m.AvailableCommand("compact", "Summarise the conversation")]),
    m.SessionInfoUpdate(title="Fix the module", updated_at="2026-11-29T22:00:00.000000Z"),
    m.ConfigOptionUpdate([MODEL_OPTION]),
    ToolCallStart(
        "toolu_1",
        "Read main.tf",
        "read",
        "pending",
        [ToolCallLocation("/p/main.tf", 3)],
        raw_input={"path": "main.tf"},
        meta={"iaccode": {"parentToolCallId": "toolu_0"}},
    ),
    ToolCallProgress("toolu_1", status="in_progress"),
    ToolCallProgress(
        "toolu_1",
        status="completed",
        raw_output={"output": "x"},
        content=[
            ContentToolCallContent(TextContent("x")),
            DiffContent("/p/a.tf", "new", "old"),
            DiffContent("/p/b", "n"),
            TerminalContent("term-1"),
        ],
    ),
    ToolCallProgress("toolu_1", status="failed", raw_output={"output": "Permission denied."}),
]


ERRORS = [
    errors.parse_error("x"),
    errors.invalid_request("x"),
    errors.method_not_found("m"),
    errors.invalid_params({"params.sessionId": "is required"}),
    errors.internal_error("x"),
    errors.request_cancelled(),
    errors.auth_required("x"),
    errors.resource_not_found("x"),
]


@pytest.mark.parametrize(("definition", "message"), RESULTS)
def test_results(definition: str, message: Any) -> None:
    assert validate_def(definition, to_wire(message)) == []


@pytest.mark.parametrize("update", UPDATES, ids=lambda u: type(u).__name__)
def test_session_updates(update: m.SessionUpdate) -> None:
    wire = to_wire(m.SessionNotification("sess_1", update))
    assert validate_def("SessionNotification", wire) == []


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: str(e.code))
def test_errors(error: errors.RpcError) -> None:
    assert validate_def("Error", error.to_wire()) == []


def test_the_stable_schema_accepts_our_stable_messages() -> None:
    """Clients that only know the stable schema still read what we send."""
    stable = schema_defs(unstable=False)
    for definition, message in RESULTS:
        if definition in stable:  # session/fork exists only in the unstable schema
            assert validate_def(definition, to_wire(message), unstable=False) == [], definition


def test_permission_question() -> None:
    question = RequestPermissionRequest(
        "sess_1",
        ToolCallFields(
            "toolu_1",
            "Write a.tf",
            "edit",
            "pending",
            [ToolCallLocation("/p/a.tf")],
            {"path": "a.tf"},
        ),
        OPTIONS,
    )
    assert validate_def("RequestPermissionRequest", to_wire(question)) == []
