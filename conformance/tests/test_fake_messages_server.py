"""The fake Anthropic Messages API server, driven by the real anthropic SDK under trio."""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import trio
from acp_conformance.fakes.messages import NO_EXCHANGE_LEFT, FakeModelServer
from acp_conformance.script import ToolUse, error_status, hang, reply, reset, stream_error

ROOT = Path(__file__).resolve().parents[1]
"""The harness's project folder: ``python -m acp_conformance...`` runs from it."""
MESSAGES: list[Any] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


def client_for(server: FakeModelServer, max_retries: int = 0) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="test", base_url=server.base_url, max_retries=max_retries
    )


async def collect(client: anthropic.AsyncAnthropic, **kw: Any) -> tuple[list[Any], Any]:
    """Stream one request; return (all events, final message)."""
    events = []
    async with client.messages.stream(
        model=kw.pop("model", "claude-test"), max_tokens=100, messages=MESSAGES, **kw
    ) as stream:
        async for event in stream:
            events.append(event)
        return events, await stream.get_final_message()


async def test_text_deltas_arrive_in_order(server: FakeModelServer) -> None:
    server.enqueue(reply(["Hel", "lo", ", ", "world"]))
    with trio.fail_after(10):
        async with client_for(server) as client:
            events, message = await collect(client)
    texts = [e.delta.text for e in events if e.type == "content_block_delta"]
    assert texts == ["Hel", "lo", ", ", "world"]
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello, world"
    assert message.stop_reason == "end_turn"
    assert server.remaining == 0


async def test_deltas_are_flushed_as_produced(server: FakeModelServer) -> None:
    # 8 events, 0.2 s before each: the text deltas go out at 0.6, 0.8 and 1.0 s, the
    # stream ends at 1.6 s. A server that buffered would deliver them all at the end.
    server.enqueue(reply(["a", "b", "c"], delay=0.2))
    arrivals = []
    with trio.fail_after(10):
        async with client_for(server) as client:
            stream = await client.messages.create(
                model="m", max_tokens=10, messages=MESSAGES, stream=True
            )
            async with stream:
                async for event in stream:
                    if event.type == "content_block_delta":
                        arrivals.append(trio.current_time())
            end = trio.current_time()
    assert len(arrivals) == 3
    assert end - arrivals[0] > 0.5
    assert arrivals[2] - arrivals[0] > 0.2


async def test_thinking_text_and_tool_use(server: FakeModelServer) -> None:
    tool = ToolUse("toolu_01", "read_file", {"path": "src/app.py", "lines": [1, 20]})
    server.enqueue(reply(["I'll ", "read it."], thinking=["Need ", "the file."], tool_uses=[tool]))
    with trio.fail_after(10):
        async with client_for(server) as client:
            events, message = await collect(client)
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    thinking, text, tool_use = message.content
    assert thinking.thinking == "Need the file."
    assert thinking.signature == "fake-signature"
    assert text.text == "I'll read it."
    assert (tool_use.id, tool_use.name) == ("toolu_01", "read_file")
    assert tool_use.input == {"path": "src/app.py", "lines": [1, 20]}
    assert message.stop_reason == "tool_use"
    delta_types = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert delta_types.index("signature_delta") < delta_types.index("text_delta")
    assert 2 <= delta_types.count("input_json_delta") <= 3


async def test_usage_with_cache_tokens(server: FakeModelServer) -> None:
    server.enqueue(
        reply(
            "ok",
            input_tokens=1200,
            output_tokens=37,
            cache_read_input_tokens=1000,
            cache_creation_input_tokens=150,
            model="claude-test-model",
        ),
        reply("plain"),
    )
    with trio.fail_after(10):
        async with client_for(server) as client:
            events, message = await collect(client)
            _, plain = await collect(client)
    assert message.model == "claude-test-model"
    assert message.usage.input_tokens == 1200
    assert message.usage.output_tokens == 37
    assert message.usage.cache_read_input_tokens == 1000
    assert message.usage.cache_creation_input_tokens == 150
    start = next(e for e in events if e.type == "message_start")
    assert start.message.usage.input_tokens == 1200
    assert start.message.usage.cache_read_input_tokens == 1000
    assert plain.usage.cache_read_input_tokens is None
    assert (plain.usage.input_tokens, plain.usage.output_tokens) == (10, 5)


async def test_prompt_cache_usage_replaces_the_scripts(tmp_path: Path) -> None:
    """With prompt_cache the usage is computed from what was sent, not taken from the script."""
    system = [{"type": "text", "text": "s" * 8000, "cache_control": {"type": "ephemeral"}}]
    with FakeModelServer(
        [reply("one", input_tokens=7), reply("two", input_tokens=7)], prompt_cache=True
    ) as fake:
        with trio.fail_after(10):
            async with client_for(fake) as client:
                _, first = await collect(client, system=system)
                _, second = await collect(client, system=system)
        computed = fake.cache_usage
    assert (
        first.usage.cache_creation_input_tokens == computed[0]["cache_creation_input_tokens"] > 2000
    )
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == computed[0]["cache_creation_input_tokens"]
    assert second.usage.input_tokens == computed[1]["input_tokens"] > 0  # the unmarked message


async def test_rate_limit_without_retries(server: FakeModelServer) -> None:
    server.enqueue(error_status(429, "slow down", retry_after=1))
    with trio.fail_after(10):
        async with client_for(server) as client:
            with pytest.raises(anthropic.RateLimitError) as info:
                await collect(client)
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "1"
    assert "x-should-retry" not in info.value.response.headers
    assert info.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    assert len(server.requests) == 1


async def test_rate_limit_then_retry_succeeds(server: FakeModelServer) -> None:
    server.enqueue(error_status(429, retry_after=0.3), reply("second time lucky"))
    with trio.fail_after(10):
        async with client_for(server, max_retries=1) as client:
            start = trio.current_time()
            _, message = await collect(client)
            elapsed = trio.current_time() - start
    assert message.content[0].text == "second time lucky"
    requests = server.requests
    assert len(requests) == 2
    assert requests[1].headers.get("x-stainless-retry-count") == "1"
    assert elapsed >= 0.25  # the SDK waited for retry-after


async def test_x_should_retry_false_is_obeyed(server: FakeModelServer) -> None:
    server.enqueue(error_status(429, headers={"x-should-retry": "false"}), reply("unused"))
    with trio.fail_after(10):
        async with client_for(server, max_retries=2) as client:
            with pytest.raises(anthropic.RateLimitError):
                await collect(client)
    assert len(server.requests) == 1
    assert server.remaining == 1


async def test_overloaded_529(server: FakeModelServer) -> None:
    server.enqueue(error_status(529))
    with trio.fail_after(10):
        async with client_for(server) as client:
            with pytest.raises(anthropic.APIStatusError) as info:
                await collect(client)
    assert info.value.status_code == 529
    assert isinstance(info.value, anthropic.OverloadedError)
    assert isinstance(info.value, anthropic.InternalServerError)
    assert info.value.type == "overloaded_error"


async def test_cut_stream_raises_while_iterating(server: FakeModelServer) -> None:
    server.enqueue(reply(["one", "two", "three"], cut_after=4))
    seen = []
    with trio.fail_after(10):
        async with client_for(server) as client:
            # The SDK lets the transport error through unwrapped: a bare
            # httpx2.RemoteProtocolError ("incomplete chunked read").
            with pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)):
                async with client.messages.stream(
                    model="m", max_tokens=10, messages=MESSAGES
                ) as stream:
                    async for event in stream:
                        seen.append(event.type)
    # message_start, content_block_start, two text deltas (each followed by a `text` event)
    assert seen == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "text",
        "content_block_delta",
        "text",
    ]


@pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning")
async def test_stream_error_event_raises_mid_stream(server: FakeModelServer) -> None:
    # The SDK's AsyncStream raises on an `error` event without closing its inner async
    # generators, which trio reports as a ResourceWarning when they are collected.
    server.enqueue(stream_error("partial answer", "overloaded_error", "Overloaded"))
    texts = []
    with trio.fail_after(10):
        async with client_for(server) as client:
            with pytest.raises(anthropic.APIStatusError) as info:
                async with client.messages.stream(
                    model="m", max_tokens=10, messages=MESSAGES
                ) as stream:
                    async for event in stream:
                        if event.type == "text":
                            texts.append(event.text)
            error = info.value
            # The HTTP status was 200; the error type comes from the event's body.
            assert type(error) is anthropic.APIStatusError
            assert error.status_code == 200
            assert error.type == "overloaded_error"
            assert error.body == {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
            del error, info
            gc.collect()
    assert texts == ["partial answer"]


async def test_hang_cancels_cleanly_and_close_is_quick() -> None:
    server = FakeModelServer([hang()])
    try:
        with trio.fail_after(10):
            async with client_for(server) as client:
                with trio.move_on_after(0.5) as scope:
                    await collect(client)
                assert scope.cancelled_caught
        assert len(server.wait_for_requests(1, timeout=1)) == 1
    finally:
        start = time.monotonic()
        server.close()
        assert time.monotonic() - start < 3.0  # not the 5 s stream delay, nor forever


async def test_close_is_quick_with_requests_in_flight() -> None:
    server = FakeModelServer([hang(), reply(["slow"] * 5, delay=5.0)])
    errors: list[BaseException] = []

    async def call(client: anthropic.AsyncAnthropic) -> None:
        try:
            await collect(client)
        except (anthropic.APIError, httpx2.TransportError) as exc:
            errors.append(exc)

    try:
        with trio.fail_after(10):
            async with client_for(server) as client, trio.open_nursery() as nursery:
                nursery.start_soon(call, client)
                nursery.start_soon(call, client)
                await trio.to_thread.run_sync(server.wait_for_requests, 2, 5.0)
                await trio.sleep(0.1)  # let the slow stream start its delay
                start = time.monotonic()
                server.close()
                assert time.monotonic() - start < 3.0  # not the 5 s stream delay
    finally:
        server.close()
    # Both clients saw their connection go away instead of hanging forever.
    assert len(errors) == 2


async def test_reset_is_a_connection_error_and_retried(server: FakeModelServer) -> None:
    server.enqueue(reset(), reset(), reply("after reset"))
    with trio.fail_after(10):
        async with client_for(server) as client:
            with pytest.raises(anthropic.APIConnectionError):
                await collect(client)
        async with client_for(server, max_retries=1) as client:
            _, message = await collect(client)
    assert message.content[0].text == "after reset"
    assert len(server.requests) == 3


async def test_empty_queue_answers_500(server: FakeModelServer) -> None:
    with trio.fail_after(10):
        async with client_for(server, max_retries=2) as client:
            with pytest.raises(anthropic.InternalServerError) as info:
                await collect(client)
    assert info.value.status_code == 500
    assert NO_EXCHANGE_LEFT in str(info.value)
    # x-should-retry: false, so the SDK does not retry (and the failure is immediate).
    assert len(server.requests) == 1
    assert NO_EXCHANGE_LEFT in server.problems[0]


async def test_requests_are_recorded(server: FakeModelServer) -> None:
    server.enqueue(reply("one"), reply("two"))
    with trio.fail_after(10):
        async with client_for(server) as client:
            await collect(client, model="claude-a", system="be brief")
            await collect(client, model="claude-b")
    first, second = server.wait_for_requests(2, timeout=1)
    assert (first.method, first.path) == ("POST", "/v1/messages")
    assert first.body["model"] == "claude-a"
    assert first.body["messages"] == MESSAGES
    assert first.body["stream"] is True
    assert first.body["system"] == "be brief"
    # anthropic 2.x sends the api key as a bearer token; older SDKs sent x-api-key.
    headers = first.headers
    assert headers.get("x-api-key") == "test" or headers.get("authorization") == "Bearer test"
    assert "anthropic-version" in first.headers
    assert first.headers["content-type"] == "application/json"
    assert json.loads(first.raw_body) == first.body
    assert second.body["model"] == "claude-b"


def test_wait_for_requests_times_out(server: FakeModelServer) -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="0 request"):
        server.wait_for_requests(1, timeout=0.1)
    assert time.monotonic() - start < 1.0


async def test_non_stream_request_gets_a_folded_message(server: FakeModelServer) -> None:
    tool = ToolUse("tu_9", "grep", {"pattern": "x"})
    server.enqueue(
        reply(["a", "b"], thinking="t", tool_uses=[tool], cache_read_input_tokens=3),
        stream_error("x"),
    )
    with trio.fail_after(10):
        async with client_for(server) as client:
            message = await client.messages.create(model="m", max_tokens=10, messages=MESSAGES)
            with pytest.raises(anthropic.OverloadedError):
                await client.messages.create(model="m", max_tokens=10, messages=MESSAGES)
    thinking, text, tool_use = message.content
    assert thinking.type == "thinking"
    assert text.type == "text" and text.text == "ab"
    assert tool_use.type == "tool_use" and tool_use.input == {"pattern": "x"}
    assert message.stop_reason == "tool_use"
    assert message.usage.output_tokens == 5
    assert message.usage.cache_read_input_tokens == 3


async def test_unknown_path_is_404(server: FakeModelServer) -> None:
    server.enqueue(reply("kept"))
    with trio.fail_after(10):
        async with client_for(server) as client:
            with pytest.raises(anthropic.NotFoundError):
                await client.models.list()
    assert server.remaining == 1
    assert server.requests[0].method == "GET"


async def test_enqueue_validates(server: FakeModelServer) -> None:
    with pytest.raises(ValueError, match="exchange 1: "):
        server.enqueue(hang(), {"hang": True, "reset": True})
    assert server.remaining == 0


async def test_loop_replays_the_script() -> None:
    with FakeModelServer([reply("again")], loop=True) as server:
        with trio.fail_after(10):
            async with client_for(server) as client:
                for _ in range(3):
                    _, message = await collect(client)
                    assert message.content[0].text == "again"
        assert server.remaining == 1


def test_sync_client_works() -> None:
    with (
        FakeModelServer([reply(["x", "y"])]) as server,
        anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0) as c,
        c.messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream,
    ):
        assert stream.get_final_text() == "xy"


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_cli_serves_a_script_until_signalled(tmp_path: Path, stop_signal: int) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([reply(["from ", "cli"]), error_status(529)]))
    command = [sys.executable, "-m", "acp_conformance.fakes.messages", "--script", str(script)]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("READY http://127.0.0.1:"), line
            base_url = line.split()[1]
            with anthropic.Anthropic(api_key="test", base_url=base_url, max_retries=0) as c:
                with c.messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream:
                    assert stream.get_final_text() == "from cli"
                with pytest.raises(anthropic.OverloadedError):
                    c.messages.create(model="m", max_tokens=10, messages=MESSAGES)
            proc.send_signal(stop_signal)
            assert proc.wait(timeout=5) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.stderr is not None
        assert proc.stderr.read() == ""


def test_cli_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text(json.dumps([{"hang": "no"}]))
    result = subprocess.run(
        [sys.executable, "-m", "acp_conformance.fakes.messages", "--script", str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "exchange 0" in result.stderr
    assert result.stdout == ""
