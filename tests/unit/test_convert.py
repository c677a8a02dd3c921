"""The converter: camelCase wire names, ``_meta``, omitted Nones, strictness, error paths."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iaccode.protocol import messages as m
from iaccode.protocol import tool_calls as tc
from iaccode.protocol.content import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from iaccode.protocol.convert import ParamsError, from_wire, to_wire, wire_name
from iaccode.wire import errors


def problems(value: Any, cls: Any) -> dict[str, str]:
    with pytest.raises(ParamsError) as info:
        from_wire(value, cls)
    assert info.value.problems, "a ParamsError must name at least one problem"
    return info.value.problems


def through_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


# -- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "wire"),
    [
        ("session_id", "sessionId"),
        ("protocol_version", "protocolVersion"),
        ("read_text_file", "readTextFile"),
        ("mime_type", "mimeType"),
        ("cwd", "cwd"),
        ("meta", "_meta"),
        ("session_update", "sessionUpdate"),
    ],
)
def test_wire_name(name: str, wire: str) -> None:
    assert wire_name(name) == wire


def test_camel_case_and_meta_on_input_at_every_level() -> None:
    request = from_wire(
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": False, "_meta": {"fs": 1}},
                "terminal": True,
                "_meta": {"caps": [1, 2]},
            },
            "clientInfo": {"name": "zed", "version": "1.0", "title": "Zed", "_meta": {"i": None}},
            "_meta": {"top": {"nested": True}},
        },
        m.InitializeRequest,
    )
    assert request == m.InitializeRequest(
        protocol_version=1,
        client_capabilities=m.ClientCapabilities(
            fs=m.FileSystemCapabilities(read_text_file=True, write_text_file=False, meta={"fs": 1}),
            terminal=True,
            meta={"caps": [1, 2]},
        ),
        client_info=m.Implementation(name="zed", version="1.0", title="Zed", meta={"i": None}),
        meta={"top": {"nested": True}},
    )


def test_snake_case_input_names_are_not_the_wire_names() -> None:
    """``session_id`` is an unknown field on the wire (ignored), so sessionId is missing."""
    assert problems({"session_id": "s", "prompt": []}, m.PromptRequest) == {
        "params.sessionId": "is required"
    }


def test_plain_meta_key_is_not_underscore_meta() -> None:
    assert from_wire({"cwd": "/", "meta": {"x": 1}}, m.NewSessionRequest).meta is None


def test_camel_case_and_meta_on_output_at_every_level() -> None:
    response = m.InitializeResponse(
        protocol_version=1,
        agent_capabilities=m.AgentCapabilities(
            load_session=True,
            prompt_capabilities=m.PromptCapabilities(embedded_context=True),
            session_capabilities=m.SessionCapabilities(list={}, close={}),
        ),
        agent_info=m.Implementation(name="iac-code", version="0.1", meta={"build": "x"}),
        auth_methods=[m.AuthMethod(id="api-key", name="API key")],
        meta={"top": 1},
    )
    assert to_wire(response) == {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            "sessionCapabilities": {"list": {}, "close": {}},
            "mcpCapabilities": {"http": False, "sse": False},
        },
        "agentInfo": {"name": "iac-code", "version": "0.1", "_meta": {"build": "x"}},
        "authMethods": [{"id": "api-key", "name": "API key"}],
        "_meta": {"top": 1},
    }


def test_meta_round_trips_both_ways() -> None:
    wire = {"sessionId": "s-1", "_meta": {"trace": {"id": "abc", "sampled": True, "n": None}}}
    request = from_wire(wire, m.SessionRequest)
    assert request.meta == wire["_meta"]
    assert to_wire(request) == wire
    assert "meta" not in to_wire(request)


def test_none_fields_are_omitted_on_output() -> None:
    assert to_wire(TextContent(text="hi")) == {"type": "text", "text": "hi"}
    assert to_wire(m.PromptResponse(stop_reason="end_turn")) == {"stopReason": "end_turn"}
    assert to_wire(m.Empty()) == {}
    usage = m.Usage(input_tokens=1, output_tokens=2, total_tokens=3)
    assert to_wire(m.PromptResponse(stop_reason="cancelled", usage=usage)) == {
        "stopReason": "cancelled",
        "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
    }
    # Nested: an Implementation inside a response.
    assert to_wire(m.Implementation(name="n", version="v")) == {"name": "n", "version": "v"}


def test_none_inside_free_form_objects_is_kept() -> None:
    """Only our own fields are omitted when None; ``_meta`` content is the peer's business."""
    block = TextContent(text="t", annotations={"priority": None}, meta={"k": None})
    assert to_wire(block) == {
        "type": "text",
        "text": "t",
        "annotations": {"priority": None},
        "_meta": {"k": None},
    }


def test_falsy_values_are_not_omitted() -> None:
    wire = to_wire(m.Usage(input_tokens=0, output_tokens=0, total_tokens=0, cached_read_tokens=0))
    assert wire == {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0, "cachedReadTokens": 0}
    assert to_wire(TextContent(text="")) == {"type": "text", "text": ""}


def test_lists_of_messages_unstructure() -> None:
    assert to_wire([TextContent(text="a"), ResourceLink(name="n", uri="u")]) == [
        {"type": "text", "text": "a"},
        {"type": "resource_link", "name": "n", "uri": "u"},
    ]


def test_unknown_input_fields_are_tolerated_at_every_level() -> None:
    request = from_wire(
        {
            "sessionId": "s",
            "prompt": [
                {"type": "text", "text": "hi", "futureField": {"a": 1}},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///a", "text": "x", "etag": "1"},
                    "extra": [],
                },
            ],
            "newTopLevel": 42,
        },
        m.PromptRequest,
    )
    assert request == m.PromptRequest(
        session_id="s",
        prompt=[
            TextContent(text="hi"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a", text="x")),
        ],
    )


def test_missing_params_are_an_empty_object() -> None:
    assert from_wire(None, m.Empty) == m.Empty()
    assert problems(None, m.SessionRequest) == {"params.sessionId": "is required"}


def test_defaults_apply_for_absent_optional_fields() -> None:
    request = from_wire({"protocolVersion": 1}, m.InitializeRequest)
    assert request.client_capabilities == m.ClientCapabilities()
    assert request.client_info is None
    assert (
        from_wire(
            {"protocolVersion": 1, "clientCapabilities": {}}, m.InitializeRequest
        ).client_capabilities.fs
        == m.FileSystemCapabilities()
    )


def test_null_for_an_optional_field_is_none() -> None:
    request = from_wire(
        {"protocolVersion": 1, "clientInfo": None, "_meta": None}, m.InitializeRequest
    )
    assert request.client_info is None and request.meta is None


# -- strictness ------------------------------------------------------------------------------------

INIT = m.InitializeRequest


def init_with(caps: Any) -> dict[str, Any]:
    return {"protocolVersion": 1, "clientCapabilities": caps}


def usage_with(input_tokens: Any) -> dict[str, Any]:
    return {"inputTokens": input_tokens, "outputTokens": 0, "totalTokens": 0}


@pytest.mark.parametrize(
    ("cls", "value", "path", "expected", "got"),
    [
        # string for int (protocolVersion takes anything: it is negotiated, see the e2e tests)
        (m.Usage, usage_with("1"), "params.inputTokens", "an integer", "a string"),
        # bool for int
        (m.Usage, usage_with(True), "params.inputTokens", "an integer", "a boolean"),
        # number for int (even a whole one)
        (m.Usage, usage_with(1.0), "params.inputTokens", "an integer", "a number"),
        (m.Usage, usage_with(None), "params.inputTokens", "an integer", "null"),
        # int for bool
        (
            INIT,
            init_with({"fs": {"readTextFile": 1}}),
            "params.clientCapabilities.fs.readTextFile",
            "a boolean",
            "an integer",
        ),
        (
            INIT,
            init_with({"fs": {"writeTextFile": 0}}),
            "params.clientCapabilities.fs.writeTextFile",
            "a boolean",
            "an integer",
        ),
        # string for bool
        (
            INIT,
            init_with({"terminal": "true"}),
            "params.clientCapabilities.terminal",
            "a boolean",
            "a string",
        ),
        # int for string
        (
            m.PromptRequest,
            {"sessionId": 5, "prompt": []},
            "params.sessionId",
            "a string",
            "an integer",
        ),
        (m.NewSessionRequest, {"cwd": 0}, "params.cwd", "a string", "an integer"),
        # number for string
        (
            m.PromptRequest,
            {"sessionId": 1.5, "prompt": []},
            "params.sessionId",
            "a string",
            "a number",
        ),
        # bool / null / array / object for string
        (m.AuthenticateRequest, {"methodId": False}, "params.methodId", "a string", "a boolean"),
        (m.AuthenticateRequest, {"methodId": None}, "params.methodId", "a string", "null"),
        (m.AuthenticateRequest, {"methodId": ["a"]}, "params.methodId", "a string", "an array"),
        (m.AuthenticateRequest, {"methodId": {}}, "params.methodId", "a string", "an object"),
        # string for array (a string is iterable, but not an array)
        (
            m.PromptRequest,
            {"sessionId": "s", "prompt": "hello"},
            "params.prompt",
            "an array",
            "a string",
        ),
        # object for array
        (
            m.PromptRequest,
            {"sessionId": "s", "prompt": {"0": {"type": "text", "text": "a"}}},
            "params.prompt",
            "an array",
            "an object",
        ),
        (
            m.NewSessionRequest,
            {"cwd": "/", "mcpServers": {}},
            "params.mcpServers",
            "an array",
            "an object",
        ),
        # wrong things for objects
        (INIT, init_with([]), "params.clientCapabilities", "an object", "an array"),
        (INIT, init_with({"fs": True}), "params.clientCapabilities.fs", "an object", "a boolean"),
        (INIT, {"protocolVersion": 1, "_meta": "x"}, "params._meta", "an object", "a string"),
        (
            m.NewSessionRequest,
            {"cwd": "/", "mcpServers": ["stdio"]},
            "params.mcpServers[0]",
            "an object",
            "a string",
        ),
        # the params themselves
        (m.SessionRequest, [], "params", "an object", "an array"),
        (m.SessionRequest, "s", "params", "an object", "a string"),
        (m.SessionRequest, 3, "params", "an object", "an integer"),
    ],
)
def test_strictness(cls: type, value: Any, path: str, expected: str, got: str) -> None:
    found = problems(value, cls)
    assert found == {path: f"expected {expected}, got {got}"}
    # Ready for a -32602 answer's data.
    error = errors.invalid_params(found)
    assert error.to_wire() == {"code": -32602, "message": "Invalid params", "data": found}
    json.dumps(error.to_wire())


def test_custom_root_path() -> None:
    with pytest.raises(ParamsError) as info:
        from_wire({"sessionId": 1}, m.SessionRequest, path="result")
    assert info.value.problems == {"result.sessionId": "expected a string, got an integer"}


def test_every_problem_is_named_at_once() -> None:
    found = problems(
        {
            "protocolVersion": "1",  # negotiated, not refused
            "clientCapabilities": {
                "fs": {"readTextFile": "yes", "writeTextFile": 1},
                "terminal": None,
            },
            "clientInfo": {"name": 1},
        },
        m.InitializeRequest,
    )
    assert found == {
        "params.clientCapabilities.fs.readTextFile": "expected a boolean, got a string",
        "params.clientCapabilities.fs.writeTextFile": "expected a boolean, got an integer",
        "params.clientCapabilities.terminal": "expected a boolean, got null",
        "params.clientInfo.name": "expected a string, got an integer",
        "params.clientInfo.version": "is required",
    }


def test_missing_required_fields() -> None:
    assert problems({}, m.PromptRequest) == {
        "params.sessionId": "is required",
        "params.prompt": "is required",
    }
    assert problems({"protocolVersion": 1, "clientInfo": {}}, m.InitializeRequest) == {
        "params.clientInfo.name": "is required",
        "params.clientInfo.version": "is required",
    }


def test_list_indices_in_paths() -> None:
    found = problems(
        {
            "sessionId": "s",
            "prompt": [
                {"type": "text", "text": "ok"},
                {"type": "text", "text": "ok"},
                {"type": "image", "data": "AAAA", "mimeType": 7},
            ],
        },
        m.PromptRequest,
    )
    assert found == {"params.prompt[2].mimeType": "expected a string, got an integer"}


def test_list_indices_for_several_bad_items_and_nested_resources() -> None:
    found = problems(
        {
            "sessionId": "s",
            "prompt": [
                {"type": "text", "text": 1},
                {"type": "text", "text": "fine"},
                {"type": "resource", "resource": {"uri": "u", "text": ["x"]}},
                {"type": "resource_link", "name": "n", "uri": "u", "size": "12"},
                {"type": "resource", "resource": {"uri": "u", "blob": 5, "mimeType": False}},
            ],
        },
        m.PromptRequest,
    )
    assert found == {
        "params.prompt[0].text": "expected a string, got an integer",
        "params.prompt[2].resource.text": "expected a string, got an array",
        "params.prompt[3].size": "expected an integer, got a string",
        "params.prompt[4].resource.blob": "expected a string, got an integer",
        "params.prompt[4].resource.mimeType": "expected a string, got a boolean",
    }


@pytest.mark.parametrize(
    ("block", "fragment"),
    [
        ({"type": "video", "data": "x"}, "'video'"),
        ({"text": "no type"}, "None"),
        ({"type": 3, "text": "x"}, "3"),
        ("just text", "got a string"),
        (None, "got null"),
        ([], "got an array"),
    ],
)
def test_bad_content_blocks_are_named_by_index(block: Any, fragment: str) -> None:
    found = problems(
        {"sessionId": "s", "prompt": [{"type": "text", "text": "a"}, block]}, m.PromptRequest
    )
    assert list(found) == ["params.prompt[1]"]
    assert fragment in found["params.prompt[1]"]


def test_resource_without_text_or_blob() -> None:
    found = problems(
        {"sessionId": "s", "prompt": [{"type": "resource", "resource": {"uri": "u"}}]},
        m.PromptRequest,
    )
    assert list(found) == ["params.prompt[0].resource"]
    assert "text" in found["params.prompt[0].resource"]
    assert "blob" in found["params.prompt[0].resource"]


def test_literal_values_are_checked() -> None:
    found = problems({"stopReason": "bored"}, m.PromptResponse)
    assert list(found) == ["params.stopReason"]
    assert "bored" in found["params.stopReason"]


def test_big_integers_and_unicode_survive() -> None:
    request = from_wire(
        {"protocolVersion": 2**70, "clientInfo": {"name": "ünï ✓ \U0001f600", "version": ""}},
        m.InitializeRequest,
    )
    assert request.protocol_version == 2**70
    assert request.client_info is not None and request.client_info.name == "ünï ✓ \U0001f600"


# -- content blocks --------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=3)
maybe_object = st.none() | json_objects
maybe_text = st.none() | st.text()

text_contents = st.builds(TextContent, text=st.text(), annotations=maybe_object, meta=maybe_object)
image_contents = st.builds(
    ImageContent,
    data=st.text(),
    mime_type=st.text(),
    uri=maybe_text,
    annotations=maybe_object,
    meta=maybe_object,
)
audio_contents = st.builds(
    AudioContent, data=st.text(), mime_type=st.text(), annotations=maybe_object, meta=maybe_object
)
resource_links = st.builds(
    ResourceLink,
    name=st.text(),
    uri=st.text(),
    mime_type=maybe_text,
    title=maybe_text,
    description=maybe_text,
    size=st.none() | st.integers(min_value=0),
    annotations=maybe_object,
    meta=maybe_object,
)
resource_contents = st.builds(
    TextResourceContents, uri=st.text(), text=st.text(), mime_type=maybe_text, meta=maybe_object
) | st.builds(
    BlobResourceContents, uri=st.text(), blob=st.text(), mime_type=maybe_text, meta=maybe_object
)
embedded_resources = st.builds(
    EmbeddedResource, resource=resource_contents, annotations=maybe_object, meta=maybe_object
)
content_blocks = (
    text_contents | image_contents | audio_contents | resource_links | embedded_resources
)

SNAKE_FIELDS = {"mime_type", "meta", "session_id"}


def assert_wire_names(value: Any) -> None:
    """No snake_case field names anywhere outside free-form objects."""
    if isinstance(value, dict):
        assert not SNAKE_FIELDS & value.keys(), value
        for key, inner in value.items():
            if key not in ("_meta", "annotations"):
                assert inner is not None, (key, value)
                assert_wire_names(inner)


@given(block=content_blocks)
def test_every_content_block_round_trips(block: ContentBlock) -> None:
    wire = through_json(to_wire(block))
    assert wire["type"] == block.type
    assert_wire_names(wire)
    assert from_wire(wire, ContentBlock) == block  # type: ignore[arg-type]


@given(blocks=st.lists(content_blocks, max_size=5), meta=maybe_object)
def test_prompt_request_round_trips(blocks: list[ContentBlock], meta: Any) -> None:
    request = m.PromptRequest(session_id="sess", prompt=blocks, meta=meta)
    wire = through_json(to_wire(request))
    assert wire["sessionId"] == "sess"
    assert [b["type"] for b in wire["prompt"]] == [b.type for b in blocks]
    assert ("_meta" in wire) == (meta is not None)
    assert from_wire(wire, m.PromptRequest) == request


@pytest.mark.parametrize(
    ("block", "wire"),
    [
        (TextContent(text="t"), {"type": "text", "text": "t"}),
        (
            ImageContent(data="AAAA", mime_type="image/png", uri="file:///i.png"),
            {"type": "image", "data": "AAAA", "mimeType": "image/png", "uri": "file:///i.png"},
        ),
        (
            AudioContent(data="BBBB", mime_type="audio/wav"),
            {"type": "audio", "data": "BBBB", "mimeType": "audio/wav"},
        ),
        (
            ResourceLink(
                name="a.py",
                uri="file:///a.py",
                mime_type="text/x-python",
                size=10,
                title="A",
                description="d",
            ),
            {
                "type": "resource_link",
                "name": "a.py",
                "uri": "file:///a.py",
                "mimeType": "text/x-python",
                "size": 10,
                "title": "A",
                "description": "d",
            },
        ),
        (
            EmbeddedResource(
                resource=TextResourceContents(uri="file:///a", text="x", mime_type="text/plain")
            ),
            {
                "type": "resource",
                "resource": {"uri": "file:///a", "text": "x", "mimeType": "text/plain"},
            },
        ),
        (
            EmbeddedResource(
                resource=BlobResourceContents(uri="file:///b", blob="AAEC"), meta={"m": 1}
            ),
            {
                "type": "resource",
                "resource": {"uri": "file:///b", "blob": "AAEC"},
                "_meta": {"m": 1},
            },
        ),
    ],
)
def test_content_block_wire_shapes(block: ContentBlock, wire: dict[str, Any]) -> None:
    assert to_wire(block) == wire
    assert from_wire(wire, ContentBlock) == block  # type: ignore[arg-type]


# -- session updates -------------------------------------------------------------------------------


UPDATES: list[tuple[Any, dict[str, Any]]] = [
    (
        m.AgentMessageChunk(content=TextContent(text="Hello")),
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello"}},
    ),
    (
        m.AgentMessageChunk(content=TextContent(text="Hi"), message_id="msg_1"),
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Hi"},
            "messageId": "msg_1",
        },
    ),
    (
        m.NoticeUpdate("warning", "An MCP server is not available", "db could not start"),
        {
            "sessionUpdate": "notice",
            "severity": "warning",
            "title": "An MCP server is not available",
            "description": "db could not start",
        },
    ),
    (
        m.CompactionUpdate("compaction_1", "completed", summary=[TextContent(text="sum")]),
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "compaction_1",
            "status": "completed",
            "summary": [{"type": "text", "text": "sum"}],
        },
    ),
    (
        m.CompactionUpdate("compaction_1", "failed", error="no"),
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "compaction_1",
            "status": "failed",
            "error": "no",
        },
    ),
    (
        m.AgentThoughtChunk(content=TextContent(text="Hmm")),
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Hmm"}},
    ),
    (
        m.UserMessageChunk(content=ResourceLink(name="n", uri="u", mime_type="text/plain")),
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "resource_link", "name": "n", "uri": "u", "mimeType": "text/plain"},
        },
    ),
    (
        m.UsageUpdate(used=1200, size=200_000),
        {"sessionUpdate": "usage_update", "used": 1200, "size": 200_000},
    ),
    (
        m.UsageUpdate(used=0, size=1, meta={"cost": None}),
        {"sessionUpdate": "usage_update", "used": 0, "size": 1, "_meta": {"cost": None}},
    ),
    (
        m.UsageUpdate(used=5, size=10, cost=m.Cost(0.25)),
        {
            "sessionUpdate": "usage_update",
            "used": 5,
            "size": 10,
            "cost": {"amount": 0.25, "currency": "USD"},
        },
    ),
    (
        tc.ToolCallStart(
            tool_call_id="call-1",
            title="Read a.py",
            kind="read",
            status="pending",
            locations=[tc.ToolCallLocation(path="/w/a.py", line=3)],
            raw_input={"path": "a.py", "offset": None},
        ),
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call-1",
            "title": "Read a.py",
            "kind": "read",
            "status": "pending",
            "locations": [{"path": "/w/a.py", "line": 3}],
            "rawInput": {"path": "a.py", "offset": None},
        },
    ),
    (
        tc.ToolCallProgress(
            tool_call_id="call-1",
            status="completed",
            content=[
                tc.ContentToolCallContent(content=TextContent(text="ok")),
                tc.DiffContent(path="/w/a.py", new_text="new"),
                tc.DiffContent(path="/w/b.py", new_text="", old_text="old"),
                tc.TerminalContent(terminal_id="term-1"),
            ],
            raw_output=["x"],
        ),
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "status": "completed",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "ok"}},
                {"type": "diff", "path": "/w/a.py", "newText": "new", "oldText": None},
                {"type": "diff", "path": "/w/b.py", "newText": "", "oldText": "old"},
                {"type": "terminal", "terminalId": "term-1"},
            ],
            "rawOutput": ["x"],
        },
    ),
    (
        tc.ToolCallProgress(tool_call_id="call-2"),
        {"sessionUpdate": "tool_call_update", "toolCallId": "call-2"},
    ),
    (
        m.CurrentModeUpdate(current_mode_id="plan"),
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"},
    ),
    (
        m.ConfigOptionUpdate(
            config_options=[
                m.SessionConfigOption(
                    id="model",
                    name="Model",
                    current_value="fast",
                    category="model",
                    options=[
                        m.ConfigOptionValue(value="fast", name="Fast"),
                        m.ConfigOptionValue(value="deep", name="Deep", description="slower"),
                    ],
                )
            ]
        ),
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [
                {
                    "id": "model",
                    "name": "Model",
                    "currentValue": "fast",
                    "category": "model",
                    "type": "select",
                    "options": [
                        {"value": "fast", "name": "Fast"},
                        {"value": "deep", "name": "Deep", "description": "slower"},
                    ],
                }
            ],
        },
    ),
    (
        m.AvailableCommandsUpdate([m.AvailableCommand("compact", "Summarise")]),
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "compact", "description": "Summarise"}],
        },
    ),
    (
        m.SessionInfoUpdate(title="Fix the module", updated_at="2026-11-29T22:00:00.000000Z"),
        {
            "sessionUpdate": "session_info_update",
            "title": "Fix the module",
            "updatedAt": "2026-11-29T22:00:00.000000Z",
        },
    ),
    (
        m.PlanUpdate([m.PlanEntry("Read the module", "high", "completed")]),
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "Read the module", "priority": "high", "status": "completed"}],
        },
    ),
]


@pytest.mark.parametrize(("update", "wire"), UPDATES)
def test_session_notification_carries_the_update_discriminator(
    update: m.SessionUpdate, wire: dict[str, Any]
) -> None:
    notification = to_wire(m.SessionNotification(session_id="sess-1", update=update))
    assert notification == {"sessionId": "sess-1", "update": wire}
    assert through_json(notification) == notification


def test_every_update_kind_is_covered() -> None:
    assert set(typing.get_args(m.SessionUpdate)) == {type(update) for update, _ in UPDATES}


@given(
    block=content_blocks,
    kind=st.sampled_from([m.AgentMessageChunk, m.AgentThoughtChunk, m.UserMessageChunk]),
)
def test_chunk_updates_wrap_any_content_block(block: ContentBlock, kind: Any) -> None:
    wire = through_json(to_wire(m.SessionNotification(session_id="s", update=kind(block))))
    assert wire["update"]["sessionUpdate"] == kind.__attrs_attrs__.session_update.default
    assert from_wire(wire["update"]["content"], ContentBlock) == block  # type: ignore[arg-type]
