"""The official ACP Python SDK (``agent-client-protocol``, asyncio) drives ``iaccode acp``.

It runs in its own event loop (these tests are plain functions, not trio tests), against the
same fake Messages API: if the SDK's own models accept what we send, real editors will too.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import AgentMessageChunk, AgentThoughtChunk, ToolCallProgress, UsageUpdate
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, hang, reply

pytestmark = pytest.mark.process  # the SDK spawns the agent itself


class RecordingClient(acp.Client):
    """Keeps every update; answers permission questions with ``choice`` (none by default)."""

    def __init__(self, choice: str | None = None) -> None:
        self.updates: list[Any] = []
        self.first_update = asyncio.Event()
        self.choice = choice
        self.questions: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if isinstance(update, AgentMessageChunk):
            self.first_update.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        if self.choice is None:
            raise AssertionError("no permission question expected")
        self.questions.append(tool_call)
        chosen = next(o for o in options if o.kind == self.choice)
        return acp.RequestPermissionResponse(
            outcome=acp.schema.AllowedOutcome(option_id=chosen.option_id, outcome="selected")
        )

    def text(self, kind: type[Any]) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, kind))


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


async def spawn(client: RecordingClient, env: dict[str, str]) -> Any:
    return acp.spawn_agent_process(client, sys.executable, "-m", "iaccode", "acp", env=env)


def test_handshake_prompt_and_close(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(
        reply(
            ["Hello", " from", " iac-code"],
            thinking="Thinking...",
            input_tokens=20,
            output_tokens=9,
        )
    )
    client = RecordingClient()

    async def main() -> None:
        async with await spawn(client, agent_env) as (conn, _process):
            init = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_info=acp.schema.Implementation(name="sdk-test", version="1"),
            )
            assert init.protocol_version == 1
            assert init.agent_info is not None and init.agent_info.name == "iaccode"
            assert init.agent_capabilities.prompt_capabilities.embedded_context is True

            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert session.modes is not None and session.modes.current_mode_id == "default"
            assert session.config_options is not None
            model_option = session.config_options[0]
            assert model_option.id == "model" and model_option.category == "model"

            response = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("Say hello")]
            )
            assert response.stop_reason == "end_turn"
            assert response.usage is not None
            assert (response.usage.input_tokens, response.usage.output_tokens) == (20, 9)

            assert client.text(AgentMessageChunk) == "Hello from iac-code"
            assert client.text(AgentThoughtChunk) == "Thinking..."
            assert any(isinstance(u, UsageUpdate) for u in client.updates)

            await conn.close_session(session_id=session.session_id)
            with pytest.raises(acp.RequestError) as error:
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("x")])
            assert error.value.code == -32602

    run(main())


def test_cancel_from_the_sdk(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply([f"chunk{i} " for i in range(200)], delay=0.05), hang())
    client = RecordingClient()

    async def main() -> None:
        async with await spawn(client, agent_env) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])

            # Cancel mid-stream.
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("stream")])
            )
            await client.first_update.wait()
            await conn.cancel(session_id=session.session_id)
            response = await asyncio.wait_for(prompt, timeout=5)
            assert response.stop_reason == "cancelled"
            streamed = len(client.updates)
            assert 0 < streamed < 200

            # Cancel while the model has not answered at all.
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hang")])
            )
            await asyncio.to_thread(model_server.wait_for_requests, 2, 30)
            await conn.cancel(session_id=session.session_id)
            response = await asyncio.wait_for(prompt, timeout=5)
            assert response.stop_reason == "cancelled"
            assert len(client.updates) == streamed  # nothing arrived after the answers

    run(main())


@pytest.mark.parametrize(("choice", "written"), [("allow_once", True), ("reject_once", False)])
def test_permission_answered_by_the_sdk(
    agent_env: dict[str, str],
    model_server: FakeModelServer,
    workspace: Path,
    choice: str,
    written: bool,
) -> None:
    model_server.enqueue(
        reply(tool_uses=[ToolUse("toolu_w", "write_file", {"path": "main.tf", "content": "x"})]),
        reply("done"),
    )
    client = RecordingClient(choice)

    async def main() -> None:
        async with await spawn(client, agent_env) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("write main.tf")]
            )
            assert response.stop_reason == "end_turn"

    run(main())
    assert len(client.questions) == 1 and client.questions[0].tool_call_id == "toolu_w"
    assert (workspace / "main.tf").exists() is written
    statuses = [
        u.status
        for u in client.updates
        if isinstance(u, ToolCallProgress) and u.tool_call_id == "toolu_w"
    ]
    assert statuses[-1] == ("completed" if written else "failed")
    tool_result = model_server.requests[1].body["messages"][-1]["content"][0]
    assert (tool_result["content"] == "Permission denied.") is not written


def test_secrets_seen_through_the_sdk(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path
) -> None:
    """What an editor on the official SDK gets of issue 23's secrets: a held value read from a
    file shown as ``[secret NAME]``, and, after a secrets file was read, a fetch's question
    (naming the file and the host, with the host-wide option) that the SDK's models accept."""
    token = "sdk-held-token-0123456789abcdef"
    (workspace / "notes.txt").write_text(f"deploy with {token}\n")
    (workspace / ".env").write_text("OTHER=1\n")
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_n", "read_file", {"path": "notes.txt"}),
                ToolUse("toolu_e", "read_file", {"path": ".env"}),
                ToolUse("toolu_w", "web_fetch", {"url": "https://example.com/?d=1"}),
            ]
        ),
        reply("done"),
    )
    client = RecordingClient(choice="reject_once")

    async def main() -> None:
        async with await spawn(client, {**agent_env, "DEPLOY_TOKEN": token}) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            response = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("read and send")]
            )
            assert response.stop_reason == "end_turn"

    run(main())
    shown = [
        u
        for u in client.updates
        if isinstance(u, ToolCallProgress)
        and u.tool_call_id == "toolu_n"
        and u.status == "completed"
    ]
    assert shown[0].content is not None
    text = shown[0].content[0].content.text
    assert token not in text and "deploy with [secret DEPLOY_TOKEN]" in text
    assert [q.tool_call_id for q in client.questions] == ["toolu_w"]
    assert client.questions[0].title == "Fetch from example.com after reading .env"
