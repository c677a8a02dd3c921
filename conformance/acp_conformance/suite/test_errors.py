"""JSON-RPC errors: malformed input gets the right code and shape, and the agent survives.

Also the extension rules: unknown notifications are ignored, ``_``-prefixed requests are
answered, ``_meta`` and unknown fields (schema-valid) are accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_conformance.driver import AgentConnection
from acp_conformance.harness import Checks
from acp_conformance.requirements import requirement
from acp_conformance.scenarios import assert_error, error_code, start, stop_reason


async def still_serving(agent: AgentConnection, workspace: Path) -> None:
    result = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert result.get("sessionId"), "the agent stopped serving after the bad input"


@requirement("ERR-PARSE", "MUST", "invalid JSON is answered -32700 with id null")
async def test_parse_error(agent: AgentConnection, workspace: Path) -> None:
    await agent.initialize()
    await agent.send_raw(b'{"jsonrpc": "2.0", "id": 9, "method": \n')
    answer = await agent.receive()
    assert "method" not in answer, f"expected an answer, got {answer}"
    assert error_code(answer) == -32700, f"answered {answer}"
    assert answer.get("id") is None, f"id {answer.get('id')!r}, must be null"
    await still_serving(agent, workspace)


@pytest.mark.parametrize(
    ("line", "answer_id"),
    [
        (b"42", None),
        (b'"hello"', None),
        (b"[]", None),
        (b'{"jsonrpc": "2.0", "id": 7, "method": 12}', 7),
    ],
    ids=["number", "string", "empty-array", "method-not-a-string"],
)
@requirement(
    "ERR-INVALID-REQUEST",
    "MUST",
    "a JSON value that is not a request is answered -32600 (id null, or the "
    "request's id when it has one)",
)
async def test_invalid_request(
    agent: AgentConnection, workspace: Path, line: bytes, answer_id: Any
) -> None:
    await agent.initialize()
    await agent.send_raw(line + b"\n")
    answer = await agent.receive()
    assert "method" not in answer, f"expected an answer, got {answer}"
    assert error_code(answer) == -32600, f"answered {answer}"
    assert answer.get("id") in (None, answer_id), f"id {answer.get('id')!r}"
    await still_serving(agent, workspace)


@requirement(
    "ERR-METHOD-NOT-FOUND",
    "MUST",
    "an unknown method is answered -32601 with the request's id (string or number)",
)
async def test_method_not_found(agent: AgentConnection) -> None:
    await agent.initialize()
    for request_id in ("conformance-id-1", 0, 2**40):
        await agent.send_request("conformance/no_such_method", {}, request_id=request_id)
        answer, _ = await agent.response(request_id)
        assert error_code(answer) == -32601, f"answered {answer}"
        assert type(answer["id"]) is type(request_id), f"id {answer['id']!r} for {request_id!r}"


INVALID_PARAMS = [
    ("session/new", {"cwd": 42, "mcpServers": []}),
    ("session/new", {"mcpServers": []}),
    ("session/prompt", {"sessionId": "SESSION", "prompt": "not a list"}),
    ("session/prompt", {"sessionId": "SESSION", "prompt": [{"type": "text"}]}),
]


@pytest.mark.parametrize(
    ("method", "params"),
    INVALID_PARAMS,
    ids=["cwd-number", "cwd-missing", "prompt-string", "text-missing"],
)
@requirement(
    "ERR-INVALID-PARAMS", "MUST", "params that do not match the schema are answered -32602"
)
async def test_invalid_params(
    agent: AgentConnection, workspace: Path, method: str, params: dict[str, Any]
) -> None:
    session = await start(agent, workspace)
    params = {k: (session if v == "SESSION" else v) for k, v in params.items()}
    answer = await agent.request(method, params)
    assert_error(answer, f"{method} with {params}", -32602)
    await still_serving(agent, workspace)


@requirement(
    "ERR-NOTIFICATION-SILENT",
    "MUST",
    "notifications are never answered: unknown ones and _-prefixed ones are ignored",
)
async def test_unknown_notifications(agent: AgentConnection, workspace: Path) -> None:
    session = await start(agent, workspace)
    await agent.notify("conformance/unknown_notification", {"x": 1})
    await agent.notify("_conformance/note", {"sessionId": session})
    answer, before = await agent.prompt(session, "Hello")
    answered = [m for m in before if "method" not in m]
    assert not answered, f"a notification got an answer: {answered[0]}"
    stop_reason(answer)


@requirement(
    "EXT-REQUEST",
    "MUST",
    "a _-prefixed request the agent does not know still gets an answer (-32601)",
)
async def test_extension_request(agent: AgentConnection, workspace: Path, check: Checks) -> None:
    await agent.initialize()
    answer = await agent.request("_conformance/ping", {"_meta": {"x": 1}})
    assert "result" in answer or "error" in answer
    check.should(
        "EXT-REQUEST-CODE",
        "an unknown _-prefixed request is -32601",
        "result" in answer or error_code(answer) == -32601,
        f"error code {error_code(answer)}",
    )
    await still_serving(agent, workspace)


@requirement(
    "META-PASSTHROUGH",
    "MUST",
    "_meta (and unknown fields the schema allows) in initialize and session/new "
    "params and in capabilities are accepted",
)
async def test_meta_and_unknown_fields(agent: AgentConnection, workspace: Path) -> None:
    meta = {"conformance.example/trace": "abc"}
    result = await agent.call(
        "initialize",
        {
            "protocolVersion": 1,
            "_meta": meta,
            "futureField": True,
            "clientCapabilities": {"_meta": meta, "fs": {"_meta": meta}, "futureCapability": {}},
            "clientInfo": {"name": "acp-conformance", "version": "1", "_meta": meta},
        },
    )
    assert result.get("protocolVersion") == 1
    created = await agent.call(
        "session/new",
        {"cwd": str(workspace), "mcpServers": [], "_meta": meta, "futureField": [1, 2]},
    )
    assert created.get("sessionId")


@requirement(
    "ERR-STRAY-RESPONSE",
    "SHOULD",
    "a response to a request the agent never sent is ignored (no answer, no crash)",
)
async def test_stray_response(agent: AgentConnection, workspace: Path) -> None:
    await agent.initialize()
    await agent.send({"jsonrpc": "2.0", "id": "never-asked", "result": {}})
    await agent.send({"jsonrpc": "2.0", "id": 424242, "error": {"code": -1, "message": "x"}})
    created_id = await agent.send_request("session/new", {"cwd": str(workspace), "mcpServers": []})
    answer, before = await agent.response(created_id)
    assert "result" in answer, answer
    answered = [m for m in before if "method" not in m]
    assert not answered, f"the stray response got an answer: {answered[0]}"
