"""``messageId`` on ``agent_message_chunk`` and ``agent_thought_chunk`` (issue 24): one id per
model message, its thinking and its text alike, kept in the history so ``session/load`` shows
the same ids, a cancelled answer's part included."""

from __future__ import annotations

from pathlib import Path

from acp_conformance.driver import updates
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import ToolUse, hang, reply

from tests.support.agent_process import AgentConnection

CHUNKS = ("agent_message_chunk", "agent_thought_chunk")


def ids(messages: list[dict], session: str) -> list[tuple[str, str | None]]:
    """(kind, messageId) of each chunk, repeats of the same pair left out."""
    found: list[tuple[str, str | None]] = []
    for update in updates(messages, session, *CHUNKS):
        pair = (update["sessionUpdate"], update.get("messageId"))
        if not found or found[-1] != pair:
            found.append(pair)
    return found


async def test_one_id_per_model_message_and_the_same_after_load(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    (workspace / "main.tf").write_text('variable "region" {}\n')
    model_server.enqueue(
        reply(
            ["Let me ", "look."],
            thinking=["Read ", "it first."],
            tool_uses=[ToolUse("toolu_1", "read_file", {"path": "main.tf"})],
        ),
        reply(["It declares ", "region."], thinking="Easy."),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    _, live, _ = await agent.run_prompt(session, "What does main.tf declare?")
    seen = ids(live, session)
    first, second = seen[0][1], seen[2][1]
    assert seen == [
        ("agent_thought_chunk", first),
        ("agent_message_chunk", first),
        ("agent_thought_chunk", second),
        ("agent_message_chunk", second),
    ]
    assert first and second and first != second

    await agent.call("session/close", {"sessionId": session})
    request = await agent.send_request(
        "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    _, replayed = await agent.response(request)
    assert ids(replayed, session) == seen


async def test_a_cancelled_answer_keeps_its_id_in_the_history(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply([f"part{i} " for i in range(100)], delay=0.05), hang())
    await agent.initialize()
    session = await agent.new_session(workspace)
    request = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "stream"}]}
    )
    first = await agent.receive_update("agent_message_chunk")
    await agent.notify("session/cancel", {"sessionId": session})
    _, live = await agent.response(request)
    live_id = first["params"]["update"]["messageId"]
    assert {u.get("messageId") for u in updates(live, session, "agent_message_chunk")} <= {live_id}

    await agent.call("session/close", {"sessionId": session})
    load = await agent.send_request(
        "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
    )
    _, replayed = await agent.response(load)
    assert [pair[1] for pair in ids(replayed, session)] == [live_id]


def test_the_official_python_sdk_reads_the_ids(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path
) -> None:
    import acp
    from acp.schema import AgentMessageChunk, AgentThoughtChunk

    from tests.e2e.test_official_sdk_client import RecordingClient, run, spawn

    model_server.enqueue(reply(["Hello", " there"], thinking="Hmm"))
    client = RecordingClient()

    async def main() -> None:
        async with await spawn(client, agent_env) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Hi")])

    run(main())
    chunks = [u for u in client.updates if isinstance(u, AgentMessageChunk | AgentThoughtChunk)]
    assert len(chunks) == 3 and len({c.message_id for c in chunks}) == 1
    assert chunks[0].message_id and chunks[0].message_id.startswith("msg_")
