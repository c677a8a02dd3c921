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
from acp.schema import AgentMessageChunk, AgentThoughtChunk, UsageUpdate

from iaccode.llm.script import hang, reply
from tests.fakes.model_server import FakeModelServer


class RecordingClient(acp.Client):
    """Keeps every update; answers nothing else (we advertise no fs/terminal)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.first_update = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.first_update.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no permission question expected in these tests")

    def text(self, kind: type) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, kind))


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


async def spawn(client: RecordingClient, env: dict[str, str]) -> Any:
    return acp.spawn_agent_process(client, sys.executable, "-m", "iaccode", "acp", env=env)


def test_handshake_prompt_and_close(agent_env: dict[str, str], model_server: FakeModelServer,
                                    workspace: Path) -> None:
    model_server.enqueue(reply(["Hello", " from", " iac-code"], thinking="Thinking...",
                               input_tokens=20, output_tokens=9))
    client = RecordingClient()

    async def main() -> None:
        async with await spawn(client, agent_env) as (conn, _process):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                         client_info=acp.schema.Implementation(
                                             name="sdk-test", version="1"))
            assert init.protocol_version == 1
            assert init.agent_info is not None and init.agent_info.name == "iaccode"
            assert init.agent_capabilities.prompt_capabilities.embedded_context is True

            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert session.modes is not None and session.modes.current_mode_id == "default"
            assert session.config_options is not None
            model_option = session.config_options[0]
            assert model_option.id == "model" and model_option.category == "model"

            response = await conn.prompt(session_id=session.session_id,
                                         prompt=[acp.text_block("Say hello")])
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


def test_cancel_from_the_sdk(agent_env: dict[str, str], model_server: FakeModelServer,
                             workspace: Path) -> None:
    model_server.enqueue(reply([f"chunk{i} " for i in range(200)], delay=0.05), hang())
    client = RecordingClient()

    async def main() -> None:
        async with await spawn(client, agent_env) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])

            # Cancel mid-stream.
            prompt = asyncio.create_task(conn.prompt(session_id=session.session_id,
                                                     prompt=[acp.text_block("stream")]))
            await client.first_update.wait()
            await conn.cancel(session_id=session.session_id)
            response = await asyncio.wait_for(prompt, timeout=5)
            assert response.stop_reason == "cancelled"
            streamed = len(client.updates)
            assert 0 < streamed < 200

            # Cancel while the model has not answered at all.
            prompt = asyncio.create_task(conn.prompt(session_id=session.session_id,
                                                     prompt=[acp.text_block("hang")]))
            await asyncio.to_thread(model_server.wait_for_requests, 2)
            await conn.cancel(session_id=session.session_id)
            response = await asyncio.wait_for(prompt, timeout=5)
            assert response.stop_reason == "cancelled"
            assert len(client.updates) == streamed  # nothing arrived after the answers

    run(main())
