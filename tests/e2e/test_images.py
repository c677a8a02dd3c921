"""Images end to end: prompts with images reach the model, bad ones are refused before any
model request, large ones are kept beside the history and come back on load, and read_file
shows an image in the project to the model."""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, reply

from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent


def png(width: int = 2, height: int = 2) -> bytes:
    """A real PNG; random pixels, so it does not compress (size ~ 3 * width * height)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    rows = b"".join(b"\0" + os.urandom(3 * width) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image_blocks(messages: list[dict]) -> list[dict]:
    found = []
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "image":
                found.append(block)
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                found += [b for b in block["content"] if b.get("type") == "image"]
    return found


async def prompt_blocks(agent: AgentConnection, session: str, blocks: list[dict]) -> dict:
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": blocks}
    )
    response, _ = await agent.response(request_id)
    return response


async def test_an_image_reaches_the_model(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    model_server.enqueue(reply("A red square."))
    init = await agent.initialize()
    assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
    session = await agent.new_session(workspace)
    data = b64(png())
    response = await prompt_blocks(
        agent,
        session,
        [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "mimeType": "image/png", "data": data},
            {"type": "image", "mimeType": "image/png", "data": "", "uri": "file:///tmp/x.png"},
        ],
    )
    assert response["result"]["stopReason"] == "end_turn"
    [message] = model_server.requests[0].messages
    assert message["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "[image: image/png <file:///tmp/x.png>]"},
    ]


@pytest.mark.parametrize(
    ("mime", "data", "says"),
    [
        ("image/bmp", b64(b"BM" + bytes(60)), "unsupported image type 'image/bmp'"),
        ("image/png", "not base64 at all!", "not valid base64"),
        ("image/jpeg", b64(png()), "is not JPEG"),
        ("image/png", b64(png(1000, 1800)), "over the model's limit"),
    ],
)
async def test_a_bad_image_is_refused_before_any_model_request(
    agent: AgentConnection,
    model_server: FakeModelServer,
    workspace: Path,
    mime: str,
    data: str,
    says: str,
) -> None:
    model_server.enqueue(reply("fine"))
    await agent.initialize()
    session = await agent.new_session(workspace)
    response = await prompt_blocks(
        agent,
        session,
        [{"type": "text", "text": "look"}, {"type": "image", "mimeType": mime, "data": data}],
    )
    assert response["error"]["code"] == -32602
    assert says in response["error"]["data"]["params.prompt[1]"]
    assert model_server.requests == []
    # nothing is lost: the session goes on, and the refused prompt is not in its history
    response, _ = await agent.prompt(session, "still there?")
    assert response["result"]["stopReason"] == "end_turn"
    assert [m["content"][0]["text"] for m in model_server.requests[0].messages] == ["still there?"]


async def test_a_large_image_is_kept_beside_the_history_and_replayed(
    agent_env: dict[str, str], model_server: FakeModelServer, workspace: Path, tmp_path: Path
) -> None:
    data = b64(png(100, 100))  # ~40 KB of base64: over the inline limit
    model_server.enqueue(reply("seen"), reply("still seen"))
    async with spawn_agent(
        agent_env, tmp_path / "one.stderr", WireChecker(aliases=METHOD_ALIASES)
    ) as agent:
        await agent.initialize()
        session = await agent.new_session(workspace)
        response = await prompt_blocks(
            agent,
            session,
            [
                {"type": "text", "text": "keep this"},
                {"type": "image", "mimeType": "image/png", "data": data},
            ],
        )
        assert response["result"]["stopReason"] == "end_turn"
        await agent.close_stdin()
        assert await agent.wait_exit(5) == 0

    folder = tmp_path / "home" / "sessions" / session
    history = (folder / "history.jsonl").read_text()
    assert data not in history and len(history) < len(data)
    [saved] = list((folder / "images").iterdir())
    assert saved.read_bytes() == base64.b64decode(data)

    async with spawn_agent(
        agent_env, tmp_path / "two.stderr", WireChecker(aliases=METHOD_ALIASES)
    ) as agent:
        await agent.initialize()
        request_id = await agent.send_request(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        _, replay = await agent.response(request_id)
        shown = [
            m["params"]["update"]["content"]
            for m in replay
            if m["params"]["update"]["sessionUpdate"] == "user_message_chunk"
        ]
        assert shown[1] == {"type": "image", "mimeType": "image/png", "data": data}
        response, _ = await agent.prompt(session, "and now?")
        assert response["result"]["stopReason"] == "end_turn"
        [image] = image_blocks(model_server.requests[-1].messages)
        assert image["source"]["data"] == data


async def test_read_file_shows_an_image_in_the_project(
    agent: AgentConnection, model_server: FakeModelServer, workspace: Path
) -> None:
    picture = png(3, 3)
    (workspace / "diagram.png").write_bytes(picture)
    (workspace / "fake.png").write_text("not really a picture")
    model_server.enqueue(
        reply(
            tool_uses=[
                ToolUse("toolu_img", "read_file", {"path": "diagram.png"}),
                ToolUse("toolu_fake", "read_file", {"path": "fake.png"}),
            ]
        ),
        reply("A diagram."),
    )
    await agent.initialize()
    session = await agent.new_session(workspace)
    response, _, requests = await agent.run_prompt(session, "look at the diagram")
    assert response["result"]["stopReason"] == "end_turn" and requests == []
    results = {
        b["tool_use_id"]: b
        for m in model_server.requests[1].messages
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    image, text = results["toolu_img"]["content"]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(picture)},
    }
    assert "diagram.png: a PNG image" in text["text"]
    assert results["toolu_fake"]["is_error"] is True
    assert "is not PNG" in results["toolu_fake"]["content"]
    assert json.dumps(model_server.requests[1].body).count('"cache_control"') <= 4
