"""Tests for acp_conformance/schema.py (ACP v1 schema from the pinned npm package)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from acp_conformance import schema as acp_schema
from acp_conformance.schema import (
    SchemaFetchError,
    WireChecker,
    method_tables,
    schema_defs,
    validate_def,
    verify_integrity,
)

# ----------------------------------------------------------------- fixtures


def _ok(result: Any, id_: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _req(id_: Any, method: str, params: Any | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}


def _update(update: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "sess-1", "update": update},
    }


INITIALIZE_RESULT: dict[str, Any] = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "sessionCapabilities": {"list": {}, "close": {}},
    },
    "agentInfo": {"name": "example-agent", "title": "Example agent", "version": "0.1.0"},
    "authMethods": [{"id": "api-key", "name": "Anthropic API key"}],
}

NEW_SESSION_RESULT: dict[str, Any] = {
    "sessionId": "sess-1",
    "modes": {
        "currentModeId": "default",
        "availableModes": [
            {"id": "default", "name": "Default"},
            {"id": "plan", "name": "Plan", "description": "Read-only planning"},
        ],
    },
    "configOptions": [
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": "sonnet",
            "options": [
                {"value": "sonnet", "name": "Sonnet"},
                {"value": "opus", "name": "Opus"},
            ],
        }
    ],
}

PROMPT_RESULT: dict[str, Any] = {
    "stopReason": "end_turn",
    "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10, "cachedReadTokens": 5},
}


@pytest.fixture
def checker() -> WireChecker:
    """A checker that has seen initialize (id 0), session/new (1), session/prompt (2)."""
    c = WireChecker()
    c.client_sent(_req(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
    c.client_sent(_req(1, "session/new", {"cwd": "/tmp", "mcpServers": []}))
    c.client_sent(
        _req(
            "p-2",
            "session/prompt",
            {"sessionId": "sess-1", "prompt": [{"type": "text", "text": "hi"}]},
        )
    )
    return c


def _joined(problems: list[str]) -> str:
    return "\n".join(problems)


# -------------------------------------------------------------- method table


def test_method_tables_come_from_schema() -> None:
    t = method_tables(unstable=True)
    expected = {
        "initialize": "InitializeResponse",
        "authenticate": "AuthenticateResponse",
        "session/new": "NewSessionResponse",
        "session/load": "LoadSessionResponse",
        "session/resume": "ResumeSessionResponse",
        "session/fork": "ForkSessionResponse",
        "session/list": "ListSessionsResponse",
        "session/close": "CloseSessionResponse",
        "session/delete": "DeleteSessionResponse",
        "session/set_mode": "SetSessionModeResponse",
        "session/set_config_option": "SetSessionConfigOptionResponse",
        "session/prompt": "PromptResponse",
    }
    for method, type_name in expected.items():
        assert t.agent_responses[method] == type_name
        assert t.client_requests[method] == type_name.replace("Response", "Request")
    assert t.agent_notifications["session/update"] == "SessionNotification"
    assert t.client_notifications["session/cancel"] == "CancelNotification"
    for method in (
        "session/request_permission",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/release",
        "terminal/wait_for_exit",
        "terminal/kill",
    ):
        assert method in t.agent_requests
        assert method in t.client_responses
    assert t.agent_requests["session/request_permission"] == "RequestPermissionRequest"

    stable = method_tables(unstable=False)
    assert "session/fork" not in stable.agent_responses
    assert stable.agent_responses["session/prompt"] == "PromptResponse"


def test_schema_defs_and_validate_def() -> None:
    unstable, stable = schema_defs(True), schema_defs(False)
    assert "usage" in unstable["PromptResponse"]["properties"]
    assert "usage" not in stable["PromptResponse"]["properties"]
    assert set(unstable["Usage"]["required"]) == {"totalTokens", "inputTokens", "outputTokens"}
    assert unstable["NewSessionResponse"]["required"] == ["sessionId"]
    assert validate_def("PromptResponse", PROMPT_RESULT) == []
    assert validate_def("PromptResponse", {"stopReason": "end_turn"}, unstable=False) == []
    problems = validate_def("Usage", {"totalTokens": -1, "inputTokens": 1})
    assert any("outputTokens" in p for p in problems), problems
    assert any("$.totalTokens" in p for p in problems), problems
    with pytest.raises(KeyError, match="NoSuchType"):
        validate_def("NoSuchType", {})


# ------------------------------------------------------------ valid traffic


def test_valid_conversation_passes(checker: WireChecker) -> None:
    checker.assert_agent_sent(_ok(INITIALIZE_RESULT, 0))
    checker.assert_agent_sent(_ok(NEW_SESSION_RESULT, 1))
    checker.assert_agent_sent(
        _update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello"}}
        )
    )
    checker.assert_agent_sent(
        _update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "tc-1",
                "title": "Read main.tf",
                "kind": "read",
                "status": "pending",
            }
        )
    )
    checker.assert_agent_sent(_update({"sessionUpdate": "tool_call_update", "toolCallId": "tc-1"}))
    checker.assert_agent_sent(_ok(PROMPT_RESULT, "p-2"))
    assert checker.pending_client_requests == {}


def test_error_responses_pass(checker: WireChecker) -> None:
    err = {"code": -32602, "message": "Invalid params", "data": {"field": "cwd"}}
    assert checker.agent_sent({"jsonrpc": "2.0", "id": 1, "error": err}) == []
    # application-defined codes are allowed too
    other = {"jsonrpc": "2.0", "id": 0, "error": {"code": 4711, "message": "custom"}}
    assert checker.agent_sent(other) == []
    # parse errors answer with a null id, which matches no request
    parse = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert checker.agent_sent(parse) == []


def test_agent_requests_to_client_pass() -> None:
    c = WireChecker()
    permission = {
        "sessionId": "sess-1",
        "toolCall": {"toolCallId": "tc-1", "title": "Write main.tf", "kind": "edit"},
        "options": [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    }
    c.assert_agent_sent(_req(0, "session/request_permission", permission))
    c.assert_agent_sent(_req(1, "fs/read_text_file", {"sessionId": "sess-1", "path": "/a.tf"}))
    c.assert_agent_sent(
        _req(2, "fs/write_text_file", {"sessionId": "sess-1", "path": "/a.tf", "content": "x"})
    )
    c.assert_agent_sent(
        _req(3, "terminal/create", {"sessionId": "sess-1", "command": "make", "args": ["test"]})
    )
    assert c.pending_agent_requests == {
        0: "session/request_permission",
        1: "fs/read_text_file",
        2: "fs/write_text_file",
        3: "terminal/create",
    }
    c.client_sent({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}})
    assert 0 not in c.pending_agent_requests


def test_extension_methods_only_check_envelope() -> None:
    c = WireChecker()
    c.client_sent(_req(7, "_example/debug", {"x": 1}))
    assert c.agent_sent(_ok(["anything", 1, None], 7)) == []
    assert c.agent_sent({"jsonrpc": "2.0", "method": "_example/notice", "params": {"a": 1}}) == []
    c.client_sent(_req(8, "_example/debug"))
    problems = c.agent_sent({"id": 8, "result": {}, "extra": 1})
    assert "jsonrpc" in _joined(problems)
    assert "extra" in _joined(problems)


def test_legacy_models_field_is_tolerated_by_schema(checker: WireChecker) -> None:
    """NewSessionResponse has no additionalProperties: false, so extra root keys pass."""
    result = {**NEW_SESSION_RESULT, "models": {"currentModelId": "sonnet", "availableModels": []}}
    assert "models" not in schema_defs(True)["NewSessionResponse"]["properties"]
    assert validate_def("NewSessionResponse", result, unstable=False) == []
    assert checker.agent_sent(_ok(result, 1)) == []


# ----------------------------------------------------------- invalid traffic


def test_wrong_session_update_discriminator(checker: WireChecker) -> None:
    msg = _update({"sessionUpdate": "agent_message", "content": {"type": "text", "text": "x"}})
    problems = checker.agent_sent(msg)
    text = _joined(problems)
    assert "$.update.sessionUpdate" in text, text
    assert '"agent_message" is not one of' in text
    assert "agent_message_chunk" in text  # lists the allowed values
    with pytest.raises(AssertionError, match="agent_message_chunk") as excinfo:
        checker.assert_agent_sent(msg)
    assert "session/update" in str(excinfo.value)  # the message itself is shown


def test_a_discriminator_that_is_a_list_or_an_object_is_a_problem(checker: WireChecker) -> None:
    for value in (["agent_message_chunk"], {"kind": "agent_message_chunk"}):
        problems = checker.agent_sent(_update({"sessionUpdate": value, "content": {}}))
        assert len(problems) == 1 and "$.update.sessionUpdate" in problems[0], problems
        assert "is not one of" in problems[0]


def test_the_first_branch_tried_does_not_change_what_is_found(checker: WireChecker) -> None:
    """The checker tries the branch a ``sessionUpdate`` names first (``schema._one_of``): a
    valid update passes, one valid under no branch is still reported by its own branch."""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    assert checker.agent_sent(_update(chunk)) == []
    wrong = {**chunk, "content": {"type": "text", "text": 3}}
    assert checker.agent_sent(_update(wrong)) == [
        "params of 'session/update' (SessionNotification): $.update.content.text: "
        "3 is not of type 'string'"
    ]


def test_wrong_content_inside_right_variant(checker: WireChecker) -> None:
    problems = checker.agent_sent(
        _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "txt": "x"}})
    )
    assert problems == [
        "params of 'session/update' (SessionNotification): $.update.content: "
        "'text' is a required property"
    ]


def test_bogus_stop_reason(checker: WireChecker) -> None:
    problems = checker.agent_sent(_ok({"stopReason": "bogus"}, "p-2"))
    assert len(problems) == 1, problems
    assert "result of 'session/prompt' (PromptResponse)" in problems[0]
    assert '$.stopReason: "bogus" is not one of' in problems[0]
    assert "end_turn" in problems[0]


def test_capability_must_be_object_not_bool(checker: WireChecker) -> None:
    bad = json.loads(json.dumps(INITIALIZE_RESULT))
    bad["agentCapabilities"]["sessionCapabilities"]["list"] = True
    problems = checker.agent_sent(_ok(bad, 0))
    assert problems == [
        "result of 'initialize' (InitializeResponse): "
        "$.agentCapabilities.sessionCapabilities.list: True is not of type 'object'"
    ]


def test_missing_required_fields(checker: WireChecker) -> None:
    problems = checker.agent_sent(_ok({"modes": None}, 1))
    assert any("'sessionId' is a required property" in p for p in problems), problems
    problems = checker.agent_sent(_ok({"stopReason": "end_turn", "usage": {}}, "p-2"))
    assert any("$.usage" in p and "totalTokens" in p for p in problems), problems


def test_envelope_problems(checker: WireChecker) -> None:
    no_version = {"id": 0, "result": INITIALIZE_RESULT}
    assert checker.agent_sent(no_version) == ["missing 'jsonrpc' member (must be \"2.0\")"]
    assert any("'jsonrpc' must be" in p for p in checker.agent_sent({**_ok({}, 9), "jsonrpc": "1"}))
    both = {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}
    assert any("exactly one of 'result' and 'error'" in p for p in checker.agent_sent(both))
    neither = {"jsonrpc": "2.0", "id": "p-2"}
    assert any("(has neither)" in p for p in checker.agent_sent(neither))
    assert any(
        "must not be null" in p or "may be null only" in p
        for p in checker.agent_sent(_ok({}, None))
    )
    assert any("string or an integer" in p for p in checker.agent_sent(_ok({}, [1])))
    assert checker.agent_sent([_ok({}, 0)]) == [
        'agent message is not a JSON object: [{"id": 0, "jsonrpc": "2.0", "result": {}}]'
    ]
    assert any("neither a request" in p for p in checker.agent_sent({"jsonrpc": "2.0"}))


def test_response_to_unknown_or_answered_id(checker: WireChecker) -> None:
    problems = checker.agent_sent(_ok({"stopReason": "end_turn"}, 42))
    assert problems == ["response to unknown request id 42: the client sent no such request"]
    # 1 and "1" are different JSON-RPC ids
    assert "unknown request id" in _joined(checker.agent_sent(_ok(NEW_SESSION_RESULT, "1")))
    assert checker.agent_sent(_ok(NEW_SESSION_RESULT, 1)) == []
    assert "duplicate response" in _joined(checker.agent_sent(_ok(NEW_SESSION_RESULT, 1)))


def test_bad_error_object(checker: WireChecker) -> None:
    problems = checker.agent_sent({"jsonrpc": "2.0", "id": 1, "error": {"code": "oops"}})
    text = _joined(problems)
    assert "error: $: 'message' is a required property" in text
    assert "error: $.code" in text and "integer" in text


def test_methods_the_agent_must_not_send() -> None:
    c = WireChecker()
    assert c.agent_sent(_req(1, "session/sing")) == [
        "unknown agent->client request method 'session/sing'"
    ]
    assert "client->agent method" in _joined(c.agent_sent(_req(2, "session/prompt")))
    notification = {"jsonrpc": "2.0", "method": "session/request_permission", "params": {}}
    assert "must be sent as a request" in _joined(c.agent_sent(notification))
    problems = c.agent_sent(_req(3, "fs/read_text_file", {"path": "/x"}))
    assert problems == [
        "params of 'fs/read_text_file' (ReadTextFileRequest): $: 'sessionId' is a required property"
    ]
    assert "reused request id" in _joined(c.agent_sent(_req(3, "fs/read_text_file")))


def test_client_reusing_pending_id_is_a_harness_bug() -> None:
    c = WireChecker()
    c.client_sent(_req(1, "session/new"))
    with pytest.raises(ValueError, match="reused id"):
        c.client_sent(_req(1, "session/prompt"))


def test_stable_schema_selection() -> None:
    c = WireChecker(unstable=False)
    c.client_sent(_req(1, "session/prompt"))
    # `usage` is not part of stable PromptResponse; unknown keys are ignored there
    assert c.agent_sent(_ok({"stopReason": "end_turn", "usage": "garbage"}, 1)) == []
    c.client_sent(_req(2, "session/fork"))
    assert "unknown method 'session/fork'" in _joined(c.agent_sent(_ok({"sessionId": "s"}, 2)))
    u = WireChecker()
    u.client_sent(_req(1, "session/prompt"))
    assert u.agent_sent(_ok({"stopReason": "end_turn", "usage": "garbage"}, 1)) != []


# ------------------------------------------------------------- fetch + cache


def test_verify_integrity() -> None:
    data = b"some tarball bytes"
    good = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    verify_integrity(data, good)
    verify_integrity(data, f"sha1-abc {good}")
    with pytest.raises(SchemaFetchError, match="integrity mismatch.*refusing"):
        verify_integrity(data + b"!", good)
    with pytest.raises(SchemaFetchError, match="no usable sha512"):
        verify_integrity(data, "sha1-deadbeef")


def test_cache_layout_is_hash_recorded() -> None:
    files = acp_schema.ensure_schema_files()
    directory = acp_schema.cache_dir()
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["integrity"] == acp_schema.SDK_INTEGRITY
    for name, data in files.items():
        assert manifest["files"][name]["sha256"] == hashlib.sha256(data).hexdigest()
        assert (directory / name).read_bytes() == data
    assert manifest["files"]["schema.json"]["member"] == "package/schema/v1/schema.json"


def _copy_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    acp_schema.ensure_schema_files()  # make sure the real cache is populated
    source = acp_schema.cache_dir()
    monkeypatch.setenv(acp_schema.CACHE_ENV, str(tmp_path))
    target = acp_schema.cache_dir()
    assert target == tmp_path / f"acp-sdk-{acp_schema.SDK_VERSION}"
    shutil.copytree(source, target)
    return target


def test_corrupted_cache_is_detected_and_refetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _copy_cache(tmp_path, monkeypatch)
    good = acp_schema.read_cached_schemas(directory)
    assert good is not None
    schema_file = directory / "schema.unstable.json"
    schema_file.write_bytes(schema_file.read_bytes()[:-10] + b"corrupted!")
    assert acp_schema.read_cached_schemas(directory) is None

    refetched = acp_schema.ensure_schema_files()  # runs `npm pack` again
    assert refetched == good
    assert schema_file.read_bytes() == good["schema.unstable.json"]
    assert acp_schema.read_cached_schemas(directory) == good
    assert not list(directory.glob("*.tmp"))


@pytest.mark.parametrize(
    "damage",
    ["delete-file", "bad-manifest", "other-integrity", "missing-manifest"],
)
def test_damaged_cache_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    directory = _copy_cache(tmp_path, monkeypatch)
    manifest_path = directory / "manifest.json"
    if damage == "delete-file":
        (directory / "schema.json").unlink()
    elif damage == "bad-manifest":
        manifest_path.write_text("{not json")
    elif damage == "other-integrity":
        manifest = json.loads(manifest_path.read_text())
        manifest["integrity"] = "sha512-AAAA"
        manifest_path.write_text(json.dumps(manifest))
    else:
        manifest_path.unlink()
    assert acp_schema.read_cached_schemas(directory) is None


def test_missing_npm_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(acp_schema.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(SchemaFetchError, match="npm is not available"):
        acp_schema.ensure_schema_files()
