"""Malformed input gets the right JSON-RPC error, and the agent keeps serving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_process import AgentConnection, spawn_agent
from tests.support.environment import agent_environment

INIT = {"protocolVersion": 1, "clientCapabilities": {}}


async def still_serves(agent: AgentConnection) -> None:
    result = await agent.call("initialize", INIT)
    assert result["protocolVersion"] == 1


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {', -32700),
        (b"\xff\xfe not utf-8", -32700),
        (b"[" * 100_000 + b"]" * 100_000, -32700),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "initialize"}]', -32600),
        (b"42", -32600),
        (b'"text"', -32600),
        (b'{"id": 1, "method": "initialize"}', -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "initialize"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', -32600),
        (b'{"jsonrpc": "2.0", "id": [1], "method": "initialize"}', -32600),
    ],
)
async def test_malformed_lines(agent: AgentConnection, line: bytes, code: int) -> None:
    await agent.send_raw(line + b"\n")
    answer = await agent.receive()
    assert answer["error"]["code"] == code
    assert "id" in answer
    if code == -32700:
        assert answer["id"] is None
    await still_serves(agent)


async def test_unknown_method(agent: AgentConnection) -> None:
    await agent.initialize()
    for method in ("session/nope", "_iaccode/unknown"):
        answer = await agent.request(method, {})
        assert answer["error"]["code"] == -32601
        assert answer["error"]["data"] == {"method": method}


@pytest.mark.parametrize(
    ("params", "problems"),
    [
        ({"sessionId": 5, "prompt": []}, {"params.sessionId": "expected a string, got an integer"}),
        ({"prompt": []}, {"params.sessionId": "is required"}),
        (
            {"sessionId": "s", "prompt": [{"type": "video"}]},
            {"params.prompt[0]": "unknown content block type 'video'"},
        ),
        (
            {"sessionId": "s", "prompt": "hello"},
            {"params.prompt": "expected an array, got a string"},
        ),
        ("just a string", {"params": "expected an object, got a string"}),
    ],
)
async def test_invalid_params_name_the_wire_field(
    agent: AgentConnection, params: object, problems: dict[str, str]
) -> None:
    await agent.initialize()
    answer = await agent.request("session/prompt", params)
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"] == problems


async def test_no_silent_coercion(agent: AgentConnection) -> None:
    answer = await agent.request(
        "initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": "true"}}
    )
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"] == {
        "params.clientCapabilities.terminal": "expected a boolean, got a string"
    }


async def test_requests_before_initialize_are_refused(
    agent: AgentConnection, workspace: Path
) -> None:
    answer = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert answer["error"]["code"] == -32600
    assert "initialize" in answer["error"]["data"]["detail"]
    await agent.initialize()
    assert "sessionId" in await agent.call("session/new", {"cwd": str(workspace)})


async def test_session_new_needs_an_existing_absolute_directory(
    agent: AgentConnection, workspace: Path
) -> None:
    await agent.initialize()
    for cwd in ("relative/path", str(workspace / "missing"), str(workspace / "file.txt")):
        (workspace / "file.txt").write_text("x")
        answer = await agent.request("session/new", {"cwd": cwd, "mcpServers": []})
        assert answer["error"]["code"] == -32602
        assert "absolute path to an existing directory" in answer["error"]["data"]["params.cwd"]


async def test_unknown_session(agent: AgentConnection) -> None:
    await agent.initialize()
    answer = await agent.request(
        "session/prompt", {"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"] == {"params.sessionId": "session not found: sess_nope"}


async def test_notifications_and_stray_responses_are_never_answered(agent: AgentConnection) -> None:
    await agent.initialize()
    await agent.notify("_vendor/whatever", {"x": 1})
    await agent.notify("session/cancel", {"sessionId": "sess_unknown"})
    await agent.notify("unknown/notification", {})
    await agent.send({"jsonrpc": "2.0", "id": 999, "result": {}})  # we never asked
    await agent.send({"jsonrpc": "2.0", "id": "x", "error": {"code": 1, "message": "m"}})
    # The next thing on stdout is the answer to this request, nothing before it.
    request_id = await agent.send_request("initialize", INIT)
    assert (await agent.receive())["id"] == request_id
    assert "unknown request id 999" in agent.stderr


async def test_a_client_answering_notifications_is_logged_once_with_its_error(
    agent: AgentConnection,
) -> None:
    await agent.initialize()
    for stray_id in range(100, 108):
        await agent.send(
            {
                "jsonrpc": "2.0",
                "id": stray_id,
                "error": {"code": -32601, "message": "Method not found: session/update"},
            }
        )
    request_id = await agent.send_request("initialize", INIT)
    assert (await agent.receive())["id"] == request_id
    warnings = [line for line in agent.stderr.splitlines() if "unknown request id" in line]
    assert len(warnings) == 1, warnings
    assert "-32601 'Method not found: session/update'" in warnings[0]


async def test_version_negotiation(agent: AgentConnection) -> None:
    for asked in (1, 2, 99):
        result = await agent.call("initialize", {"protocolVersion": asked})
        assert result["protocolVersion"] == 1


@pytest.mark.parametrize("asked", ["1", 2, 1.5, -1, 70000, None, [1]])
async def test_a_version_we_cannot_read_or_do_not_speak_is_answered_with_ours(
    agent: AgentConnection,
    asked: Any,
) -> None:
    """The spec's rule: answer our latest version (1) and let the client decide; acplint
    sends the string "1"."""
    result = await agent.call("initialize", {"protocolVersion": asked})
    assert result["protocolVersion"] == 1
    assert f"the client asked for protocol version {json.dumps(asked)}" in agent.stderr


async def test_the_other_initialize_params_stay_strict(agent: AgentConnection) -> None:
    answer = await agent.request(
        "initialize", {"protocolVersion": "1", "clientCapabilities": {"terminal": "yes"}}
    )
    assert answer["error"]["code"] == -32602
    assert "params.clientCapabilities.terminal" in answer["error"]["data"]
    missing = await agent.request("initialize", {})
    assert missing["error"]["data"] == {"params.protocolVersion": "is required"}


async def test_handshake_advertises_what_we_implement(agent: AgentConnection) -> None:
    result = await agent.call("initialize", INIT)
    assert result["agentCapabilities"]["promptCapabilities"] == {
        "image": True,
        "audio": False,
        "embeddedContext": True,
    }
    assert result["agentCapabilities"]["loadSession"] is True
    assert result["agentCapabilities"]["sessionCapabilities"] == {
        "list": {},
        "close": {},
        "resume": {},
        "fork": {},
        "delete": {},
        "additionalDirectories": {},
    }
    assert result["agentCapabilities"]["auth"] == {"logout": {}}
    assert result["agentInfo"]["name"] == "iaccode"
    # With the key in the environment too: where it goes (the client sets it, or reads this
    # after a logout). No terminal method: this client did not say it runs terminal auth.
    assert [method["id"] for method in result["authMethods"]] == ["anthropic-api-key"]


async def test_a_64_mib_line_is_read(agent: AgentConnection) -> None:
    padding = "x" * (64 * 1024 * 1024)
    await agent.send_raw(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {**INIT, "_meta": {"padding": padding}},
            }
        ).encode()
        + b"\n"
    )
    answer = await agent.receive(timeout=30)
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1


async def test_over_long_line_is_refused_and_the_agent_goes_on(tmp_path: Path) -> None:
    env = agent_environment(
        tmp_path / "home", {"ANTHROPIC_API_KEY": "k", "IAC_CODE_MAX_LINE_BYTES": "1000"}
    )
    async with spawn_agent(env, tmp_path / "stderr") as agent:
        await agent.send_raw(b'{"pad": "' + b"x" * 5000 + b'"}\n')
        answer = await agent.receive()
        assert answer["error"]["code"] == -32600
        assert "longer than 1000 bytes" in answer["error"]["data"]["detail"]
        await still_serves(agent)


async def test_without_credentials_sessions_need_authentication(
    tmp_path: Path, workspace: Path
) -> None:
    env = agent_environment(tmp_path / "home")
    async with spawn_agent(env, tmp_path / "stderr") as agent:
        result = await agent.initialize()
        assert result["authMethods"][0]["id"] == "anthropic-api-key"
        for method, params in [
            ("session/new", {"cwd": str(workspace), "mcpServers": []}),
            ("authenticate", {"methodId": "anthropic-api-key"}),
        ]:
            error = (await agent.request(method, params))["error"]
            assert error["code"] == -32000
            assert "ANTHROPIC_API_KEY" in error["data"]["detail"]
