"""The OpenAI-compatible provider end to end: a real ``iaccode acp`` with the real ``openai``
SDK, talking to the fake Chat Completions API (acp_conformance/fakes/chat.py) over loopback.

The fake is strict like the real API (tool calls and their answers must pair up, no
Anthropic-only fields), so every test also checks that it refused nothing.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.chat import FakeChatServer
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, error_status, reply, stream_error

from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent
from tests.support.environment import agent_environment


@pytest.fixture
def chat_server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as server:
        yield server
        assert server.problems == [], "the fake Chat Completions API refused a request"


@pytest.fixture
def agent_env(tmp_path: Path, chat_server: FakeChatServer) -> dict[str, str]:
    """An agent on the `openai` preset, pointed at the fake, with quick retries."""
    return agent_environment(
        tmp_path / "home",
        {
            "IAC_CODE_PROVIDER": "openai",
            "IAC_CODE_BASE_URL": chat_server.base_url,
            "OPENAI_API_KEY": "sk-test-openai",
            "IAC_CODE_MAX_RETRIES": "2",
        },
    )


def updates(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


def text_of(messages: list[dict[str, Any]], kind: str) -> str:
    return "".join(u["content"]["text"] for u in updates(messages, kind))


def with_reasoning_tokens(exchange: dict[str, Any], tokens: int) -> dict[str, Any]:
    """A scripted reply whose usage reports ``tokens`` reasoning tokens (an OpenAI field the
    fake puts in ``completion_tokens_details``)."""
    exchange = copy.deepcopy(exchange)
    for event in exchange["events"]:
        if event["type"] == "message_delta":
            event["usage"]["reasoning_tokens"] = tokens
    return exchange


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """A raw Chat Completions chunk, sent by the fake as it is."""
    return {
        "type": "chat.chunk",
        "chunk": {
            "id": "chatcmpl-raw",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        },
    }


async def start(agent: AgentConnection, workspace: Path) -> str:
    await agent.initialize()
    return await agent.new_session(workspace)


async def test_text_reasoning_and_usage(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(
        with_reasoning_tokens(
            reply(
                ["Hel", "lo ", "world"],
                thinking=["Let me ", "think."],
                input_tokens=12,
                output_tokens=7,
                cache_read_input_tokens=100,
            ),
            4,
        )
    )
    session = await start(agent, workspace)
    assert chat_server.requests == []  # no network call at start-up or in session/new
    response, before = await agent.prompt(session, "Say hello")

    assert response["result"]["stopReason"] == "end_turn"
    assert response["result"]["usage"] == {
        "inputTokens": 112,
        "outputTokens": 7,
        "totalTokens": 119,
        "thoughtTokens": 4,
        "cachedReadTokens": 100,
    }
    kinds = [
        u["sessionUpdate"]
        for u in (m["params"]["update"] for m in before if m.get("method") == "session/update")
    ]
    # The same stream an Anthropic answer gives: each delta its own update, thinking first.
    assert kinds[-6:] == ["agent_thought_chunk"] * 2 + ["agent_message_chunk"] * 3 + [
        "usage_update"
    ]
    assert text_of(before, "agent_thought_chunk") == "Let me think."
    assert [u["content"]["text"] for u in updates(before, "agent_message_chunk")] == [
        "Hel",
        "lo ",
        "world",
    ]

    request = chat_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-openai"
    body = request.body
    assert body["model"] == "gpt-5.1"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["reasoning_effort"] == "medium"  # the default thought level
    assert body["max_completion_tokens"] == 16_000
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][1:] == [{"role": "user", "content": "Say hello"}]
    read_file = next(t for t in body["tools"] if t["function"]["name"] == "read_file")
    assert read_file["type"] == "function"
    assert read_file["function"]["parameters"]["type"] == "object"


async def test_parallel_tool_calls_and_the_history_sent_back(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    (workspace / "a.tf").write_text('variable "a" {}\n')
    (workspace / "b.tf").write_text('variable "b" {}\n')
    chat_server.enqueue(
        reply(
            "Reading both.",
            thinking="Two files.",
            tool_uses=[
                ToolUse("call_a", "read_file", {"path": "a.tf"}),
                ToolUse("call_b", "read_file", {"path": "b.tf"}),
            ],
        ),
        reply("They declare a and b."),
    )
    session = await start(agent, workspace)
    response, seen, _ = await agent.run_prompt(session, "read a.tf and b.tf")
    assert response["result"]["stopReason"] == "end_turn"
    starts = [u["toolCallId"] for u in updates(seen, "tool_call")]
    assert sorted(starts) == ["call_a", "call_b"]  # read-only calls run side by side

    messages = chat_server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assistant = messages[2]
    assert assistant["content"] == "Reading both."  # the reasoning is not sent back
    assert [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in assistant["tool_calls"]
    ] == [("call_a", "read_file", {"path": "a.tf"}), ("call_b", "read_file", {"path": "b.tf"})]
    assert [m["tool_call_id"] for m in messages[3:]] == ["call_a", "call_b"]
    assert 'variable "a"' in messages[3]["content"]
    assert 'variable "b"' in messages[4]["content"]
    assert "Two files." not in json.dumps(messages)


async def test_deepseek_gets_its_reasoning_back_after_a_tool_call(
    tmp_path: Path, workspace: Path, chat_server: FakeChatServer
) -> None:
    """DeepSeek's thinking mode answers 400 when a tool-calling turn's reasoning_content is
    not sent back; the other APIs never get it."""
    (workspace / "main.tf").write_text('variable "region" {}\n')
    env = agent_environment(
        tmp_path / "home",
        {
            "IAC_CODE_PROVIDER": "deepseek",
            "DEEPSEEK_API_KEY": "sk-deepseek",
            "IAC_CODE_BASE_URL": chat_server.base_url,
            "IAC_CODE_MODEL": "deepseek-reasoner",
        },
    )
    chat_server.enqueue(
        reply(
            thinking="I should read main.tf.",
            tool_uses=[ToolUse("call_r", "read_file", {"path": "main.tf"})],
        ),
        reply("It declares region.", thinking="Now I know."),
    )
    async with spawn_agent(env, tmp_path / "stderr", WireChecker(aliases=METHOD_ALIASES)) as agent:
        session = await start(agent, workspace)
        response, seen, _ = await agent.run_prompt(session, "what is in main.tf?")
        assert response["result"]["stopReason"] == "end_turn"
        assert text_of(seen, "agent_thought_chunk") == "I should read main.tf.Now I know."
    request = chat_server.requests[1]
    assert request.headers["authorization"] == "Bearer sk-deepseek"
    assert request.body["model"] == "deepseek-reasoner"
    assistant = request.body["messages"][2]
    assert assistant["tool_calls"][0]["id"] == "call_r"
    assert assistant["reasoning_content"] == "I should read main.tf."


async def test_each_finish_reason(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(
        reply("cut", stop_reason="max_tokens"), reply("", stop_reason="refusal"), reply("done")
    )
    session = await start(agent, workspace)
    stops = [(await agent.prompt(session, f"p{i}"))[0]["result"]["stopReason"] for i in range(3)]
    assert stops == ["max_tokens", "refusal", "end_turn"]  # length, content_filter, stop


async def test_arguments_that_are_not_json_are_answered_as_the_models_error(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(
        {
            "events": [
                chunk({"role": "assistant", "content": None}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_bad",
                                "type": "function",
                                "function": {"name": "write_file", "arguments": ""},
                            }
                        ]
                    }
                ),
                chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "x.tf", '}}]}
                ),
                chunk({}, "tool_calls"),
            ]
        },
        reply("Sorry."),
    )
    session = await start(agent, workspace)
    response, seen, asked = await agent.run_prompt(session, "write it")
    assert response["result"]["stopReason"] == "end_turn"
    assert asked == []  # never asked permission: the call never runs
    assert not (workspace / "x.tf").exists()
    tool_message = chat_server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_bad"
    assert "not valid JSON" in tool_message["content"]


async def test_429_then_success(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(
        error_status(429, "Rate limit reached", retry_after=0.2),
        error_status(503),
        reply("finally"),
    )
    session = await start(agent, workspace)
    response, before = await agent.prompt(session, "hi")
    assert response["result"]["stopReason"] == "end_turn"
    assert text_of(before, "agent_message_chunk") == "finally"
    assert len(chat_server.requests) == 3


async def test_a_wait_over_a_minute_is_not_retried_and_a_retry_wait_is_cancelled(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(
        error_status(429, "Come back in an hour", retry_after=3600),
        error_status(429, retry_after=30),
    )
    session = await start(agent, workspace)
    response, before = await agent.prompt(session, "hi")
    assert response["result"]["stopReason"] == "end_turn"
    assert "answered 429: Come back in an hour" in text_of(before, "agent_message_chunk")
    assert len(chat_server.requests) == 1  # not retried

    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}
    )
    await trio.to_thread.run_sync(chat_server.wait_for_requests, 2, 10)
    await agent.notify("session/cancel", {"sessionId": session})
    response, _ = await agent.response(request_id, timeout=5)  # not after the 30 s wait
    assert response["result"]["stopReason"] == "cancelled"
    assert len(chat_server.requests) == 2


async def test_an_error_answer_is_shown_with_what_the_api_said(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(
        error_status(400, "This model's maximum context length is 128000 tokens"),
        stream_error("partial ", error_type="server_error", message="The server had an error"),
        reply("back"),
    )
    session = await start(agent, workspace)
    _, before = await agent.prompt(session, "one")
    shown = text_of(before, "agent_message_chunk")
    assert "answered 400" in shown and "maximum context length is 128000" in shown
    _, before = await agent.prompt(session, "two")
    shown = text_of(before, "agent_message_chunk")
    assert shown.startswith("partial ") and "The server had an error" in shown
    response, before = await agent.prompt(session, "three")
    assert text_of(before, "agent_message_chunk") == "back"


async def test_a_stream_cut_midway_is_a_readable_error_and_the_session_goes_on(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(reply(["partial ", "answer ", "never ends"], cut_after=4), reply("second"))
    session = await start(agent, workspace)
    response, before = await agent.prompt(session, "one")
    assert response["result"]["stopReason"] == "end_turn"
    shown = text_of(before, "agent_message_chunk")
    assert shown.startswith("partial answer ")
    assert "broke off" in shown or "answer broke" in shown, shown
    response, before = await agent.prompt(session, "two")
    assert text_of(before, "agent_message_chunk") == "second"
    history = chat_server.requests[1].body["messages"]
    assert {"role": "assistant", "content": "partial answer "} in history


async def test_cancel_closes_the_http_stream(
    agent: AgentConnection, chat_server: FakeChatServer, workspace: Path
) -> None:
    chat_server.enqueue(reply([f"word{i} " for i in range(400)], delay=0.05), reply("after"))
    session = await start(agent, workspace)
    request_id = await agent.send_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "count"}]}
    )
    await agent.receive_update("agent_message_chunk")
    await agent.notify("session/cancel", {"sessionId": session})
    response, before = await agent.response(request_id)
    assert response["result"]["stopReason"] == "cancelled"
    assert len(updates(before, "agent_message_chunk")) < 399
    # The agent closed the connection (with keep-alive it would stay open otherwise).
    await trio.to_thread.run_sync(chat_server.wait_for_no_connections, 10)
    response, _ = await agent.prompt(session, "again")
    assert response["result"]["stopReason"] == "end_turn"
    history = chat_server.requests[-1].body["messages"]
    assert history[2]["role"] == "assistant" and history[2]["content"].startswith("word0 ")


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("dashscope", "DASHSCOPE_API_KEY"),
        ("deepseek", "DEEPSEEK_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
    ],
)
async def test_a_missing_key_names_the_variable_to_set(
    tmp_path: Path, workspace: Path, provider: str, variable: str
) -> None:
    env = agent_environment(tmp_path / "home", {"IAC_CODE_PROVIDER": provider})
    async with spawn_agent(env, tmp_path / "stderr", WireChecker(aliases=METHOD_ALIASES)) as agent:
        result = await agent.initialize()
        method = result["authMethods"][0]
        assert method["id"] == f"{provider}-api-key"
        assert variable in method["description"]
        for name, params in [
            ("session/new", {"cwd": str(workspace), "mcpServers": []}),
            ("authenticate", {"methodId": method["id"]}),
        ]:
            error = (await agent.request(name, params))["error"]
            assert error["code"] == -32000
            assert variable in error["data"]["detail"]


async def test_the_dashscope_preset(
    tmp_path: Path, workspace: Path, chat_server: FakeChatServer
) -> None:
    env = agent_environment(
        tmp_path / "home",
        {
            "IAC_CODE_PROVIDER": "dashscope",
            "DASHSCOPE_API_KEY": "sk-dashscope",
            # Only the address is the fake's; everything else is the preset's.
            "IAC_CODE_BASE_URL": chat_server.base_url,
            "IAC_CODE_THOUGHT_LEVEL": "high",
        },
    )
    chat_server.enqueue(reply("你好", thinking="想一想"), reply("more"), reply("again"))
    async with spawn_agent(env, tmp_path / "stderr", WireChecker(aliases=METHOD_ALIASES)) as agent:
        result = await agent.initialize()
        # Offered with the key set too (after a logout the client needs it).
        assert [method["id"] for method in result["authMethods"]] == ["dashscope-api-key"]
        new = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert new["models"]["currentModelId"] == "qwen3-coder-plus"
        offered = [m["modelId"] for m in new["models"]["availableModels"]]
        assert offered == ["qwen3-coder-plus", "qwen3-max", "qwen-plus", "qwen-flash"]
        option = next(o for o in new["configOptions"] if o["id"] == "model")
        assert [o["value"] for o in option["options"]] == offered
        assert chat_server.requests == []

        response, before = await agent.prompt(new["sessionId"], "hi")
        assert text_of(before, "agent_thought_chunk") == "想一想"
        assert text_of(before, "agent_message_chunk") == "你好"
        request = chat_server.requests[0]
        assert request.headers["authorization"] == "Bearer sk-dashscope"
        assert request.body["model"] == "qwen3-coder-plus"
        assert "enable_thinking" not in request.body  # Qwen3 Coder never thinks
        assert "reasoning_effort" not in request.body
        assert request.body["max_tokens"] == 16_000

        await agent.call(
            "session/set_config_option",
            {"sessionId": new["sessionId"], "configId": "model", "value": "qwen3-max"},
        )
        await agent.prompt(new["sessionId"], "more")
        body = chat_server.requests[1].body
        assert body["model"] == "qwen3-max" and body["enable_thinking"] is True

        await agent.call(
            "session/set_config_option",
            {"sessionId": new["sessionId"], "configId": "thought_level", "value": "off"},
        )
        await agent.prompt(new["sessionId"], "again")
        body = chat_server.requests[2].body
        assert "enable_thinking" not in body and "reasoning_effort" not in body


async def test_a_session_continues_on_another_provider(
    tmp_path: Path, workspace: Path, chat_server: FakeChatServer
) -> None:
    """Started on Anthropic (thinking, a tool call), loaded under the OpenAI preset: the history
    becomes a valid Chat Completions request; and back on Anthropic afterwards."""
    (workspace / "main.tf").write_text('variable "region" {}\n')
    home = tmp_path / "home"
    with FakeModelServer() as anthropic_server:
        anthropic_server.enqueue(
            reply(
                "Let me look.",
                thinking="Read it first.",
                tool_uses=[ToolUse("toolu_01", "read_file", {"path": "main.tf"})],
            ),
            reply("It declares region."),
        )
        anthropic_env = agent_environment(
            home, {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": anthropic_server.base_url}
        )
        async with spawn_agent(anthropic_env, tmp_path / "stderr1") as agent:
            session = await start(agent, workspace)
            await agent.run_prompt(session, "what is in main.tf?")

        openai_env = agent_environment(
            home,
            {
                "IAC_CODE_PROVIDER": "openai",
                "OPENAI_API_KEY": "k",
                "IAC_CODE_BASE_URL": chat_server.base_url,
            },
        )
        chat_server.enqueue(reply("Nothing else.", thinking="Qwen's reasoning."))
        async with spawn_agent(openai_env, tmp_path / "stderr2") as agent:
            await agent.initialize()
            loaded = await agent.call(
                "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
            )
            assert loaded["models"]["currentModelId"] == "gpt-5.1"
            response, _ = await agent.prompt(session, "anything else?")
            assert response["result"]["stopReason"] == "end_turn"
        messages = chat_server.requests[0].body["messages"]
        assert [m["role"] for m in messages] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]
        assert messages[2]["tool_calls"][0]["id"] == "toolu_01"
        assert messages[3]["tool_call_id"] == "toolu_01"
        assert "Read it first." not in json.dumps(messages)

        anthropic_server.enqueue(reply("Back on Claude."))
        async with spawn_agent(anthropic_env, tmp_path / "stderr3") as agent:
            await agent.initialize()
            await agent.call(
                "session/resume", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
            )
            response, before = await agent.prompt(session, "and now?")
            assert text_of(before, "agent_message_chunk") == "Back on Claude."
        sent = anthropic_server.requests[-1].body
        assert sent["model"] == "claude-sonnet-5-5"
        # The other provider's reasoning has no signature: Anthropic would refuse it.
        assert sent["messages"][-2] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "Nothing else."}],
        }
        assert sent["messages"][1]["content"][0]["signature"] == "fake-signature"


@pytest.mark.process  # --record and iaccode replay are commands
def test_a_recorded_openai_session_replays_offline(
    tmp_path: Path, chat_server: FakeChatServer
) -> None:
    """``--record`` wraps the OpenAI-compatible provider too; the transcript keeps the
    translated events and the provider, so ``iaccode replay`` plays it with no network."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.tf").write_text('variable "region" {}\n')
    chat_server.enqueue(
        reply(
            "Reading.",
            thinking="Look first.",
            tool_uses=[ToolUse("call_1", "read_file", {"path": "main.tf"})],
        ),
        reply(["It declares ", "region."]),
    )
    out = tmp_path / "session.jsonl"
    env = agent_environment(
        tmp_path / "home",
        {
            "IAC_CODE_PROVIDER": "dashscope",
            "DASHSCOPE_API_KEY": "sk-recorded-secret",
            "IAC_CODE_BASE_URL": chat_server.base_url,
        },
    )

    async def record() -> None:
        async with spawn_agent(
            env,
            tmp_path / "stderr",
            command=[sys.executable, "-m", "iaccode", "acp", "--record", str(out)],
        ) as agent:
            session = await start(agent, project)
            response, _, _ = await agent.run_prompt(session, "what is in main.tf?")
            assert response["result"]["stopReason"] == "end_turn"
            await agent.close_stdin()
            assert await agent.wait_exit(10) == 0

    trio.run(record)
    text = out.read_text()
    assert "sk-recorded-secret" not in text
    assert json.loads(text.splitlines()[0])["provider"] == "dashscope"
    replay = subprocess.run(
        [sys.executable, "-m", "iaccode", "replay", str(out)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert "agent messages match" in replay.stdout


@pytest.mark.process  # what a process imports
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_no_sdk_is_imported_before_initialize(tmp_path: Path, provider: str) -> None:
    """Editors wait for ``initialize``: the SDKs (about a second each) load after it."""
    env = agent_environment(
        tmp_path / "home",
        {"IAC_CODE_PROVIDER": provider, "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"},
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "iaccode", "acp"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.decode(errors="replace").splitlines()
        if "import time:" in line
    }
    assert "iaccode.llm.providers" in imported  # the measurement works
    assert not imported & {"openai", "anthropic", "httpx", "httpx2", "pydantic"}
