"""One test per bug the adversarial suite found, named after it (the fix is in the docstring).

Cheap on purpose: where the bug lives below the agent (the stream assembler, the Anthropic
provider, the bash tool) the test drives that piece in-process; the rest use an agent on the
offline scripted model (no SDK import).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
import trio
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.schema import WireChecker
from acp_conformance.script import ToolUse, error_status, reply
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from iaccode.llm.assemble import StreamAssembler
from iaccode.llm.base import ModelError, ModelRequest
from iaccode.tools.base import ToolContext, ToolLimits
from iaccode.tools.bash import Bash, BashInput
from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    LineAgent,
    allow,
    final_status,
    kill_quietly,
    ran_files,
    scripted_env,
    shown_text,
    start,
    survivors,
)
from tests.adversarial.test_malformed_tool_calls import MISSING, answer, deep, tool
from tests.support.agent_process import METHOD_ALIASES, AgentConnection, spawn_agent

CATEGORY = "regressions"
INIT = {"protocolVersion": 1, "clientCapabilities": {}}


@asynccontextmanager
async def scripted_agent(
    tmp_path: Path, exchanges: list[dict[str, Any]]
) -> AsyncIterator[AgentConnection]:
    env = scripted_env(tmp_path / "home", exchanges)
    async with spawn_agent(
        env, tmp_path / "agent.stderr", WireChecker(aliases=METHOD_ALIASES)
    ) as agent:
        yield agent
    assert "Traceback" not in (tmp_path / "agent.stderr").read_text()


def line_agent(tmp_path: Path, exchanges: list[dict[str, Any]]) -> LineAgent:
    return LineAgent(scripted_env(tmp_path / "home", exchanges), tmp_path / "agent.stderr")


# -- protocol --------------------------------------------------------------------------------


def test_regression_invalid_list_cursor_is_bad_params(tmp_path: Path, figures: Figures) -> None:
    """session/list with a cursor we never made answered -32603 "Session store error"; now
    -32602 naming params.cursor (iaccode/server/agent.py, list_sessions)."""
    with line_agent(tmp_path, []) as agent:
        agent.call("initialize", INIT)
        for cursor in ("nope", "None", "c1_" + "A" * 300, ""):
            answer = agent.request("session/list", {"cursor": cursor})
            assert answer["error"]["code"] == -32602, answer
            assert "params.cursor" in answer["error"]["data"]
        assert agent.call("session/list", {})["sessions"] == []
    figures.add(CATEGORY, "cases", 1)


def test_regression_deeply_nested_params_are_bad_params(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A prompt whose content block carried ``_meta`` or ``annotations`` a few hundred levels
    deep overflowed the stack when the block was stored (-32603 RecursionError); params nested
    more than 64 levels are now -32602 (iaccode/server/routes.py, _decode)."""

    def nested(depth: int) -> Any:
        value: Any = 1
        for _ in range(depth):
            value = {"a": value}
        return value

    with line_agent(tmp_path, [reply("pong")] * 3) as agent:
        agent.call("initialize", INIT)
        session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
        for depth in (70, 400, 900):
            for field in ("_meta", "annotations"):
                answer = agent.request(
                    "session/prompt",
                    {
                        "sessionId": session,
                        "prompt": [{"type": "text", "text": "deep", field: nested(depth)}],
                    },
                )
                assert answer["error"]["code"] == -32602, (depth, field, answer)
                assert "nested more than 64 levels" in answer["error"]["data"]["params"]
        result = agent.call(
            "session/prompt",
            {
                "sessionId": session,
                "prompt": [{"type": "text", "text": "shallow", "_meta": nested(40)}],
            },
        )
        assert result["stopReason"] == "end_turn"
        agent.call("session/load", {"sessionId": session, "cwd": str(workspace)})
    figures.add(CATEGORY, "cases", 1)


def test_regression_lone_surrogates_are_sent_escaped(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A lone surrogate (valid as a JSON escape) in anything the agent sends back, a model's
    text or an unknown method's name, made the line impossible to encode: the turn failed with
    -32603. It is now written as the same \\uXXXX escape (iaccode/wire/encode.py, dumps_line)."""
    with line_agent(tmp_path, [reply(["half a pair: \ud83d.", " ok"])]) as agent:
        agent.call("initialize", INIT)
        session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
        result = agent.call(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "plain title"}]},
        )
        assert result["stopReason"] == "end_turn"
        chunks = "".join(
            n["params"]["update"]["content"]["text"]
            for n in agent.notifications
            if n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        )
        assert "half a pair: \ud83d." in chunks
        answer = agent.request("no/such\ud800method", {})
        assert answer["error"]["code"] == -32601
        assert answer["error"]["data"]["method"] == "no/such\ud800method"
    figures.add(CATEGORY, "cases", 1)


def test_regression_surrogate_in_a_title_no_longer_hangs_the_agent(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A first prompt with a lone surrogate became the session title; saving the meta raised
    UnicodeEncodeError inside the turn's ``finally``, before the turn was marked finished: the
    prompt was never answered and the agent could not even shut down (it waited for that turn,
    shielded). Now the meta is written with the escape (iaccode/store/meta.py, meta_bytes) and
    the turn is always marked finished (iaccode/session/session.py, run_turn)."""
    with line_agent(tmp_path, [reply("ok"), reply("again")]) as agent:
        agent.call("initialize", INIT)
        session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
        result = agent.call(
            "session/prompt",
            {
                "sessionId": session,
                "prompt": [{"type": "text", "text": "title \udc80 with a surrogate"}],
            },
            timeout=10,
        )
        assert result["stopReason"] == "end_turn"
        listed = agent.call("session/list", {})["sessions"]
        assert listed[0]["title"] == "title \udc80 with a surrogate"
        agent.call("session/load", {"sessionId": session, "cwd": str(workspace)})
        result = agent.call(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "next"}]},
            timeout=10,
        )
        assert result["stopReason"] == "end_turn"
    figures.add(CATEGORY, "cases", 1)


def test_regression_session_in_a_non_utf8_folder_does_not_break_listing(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A project folder whose name is not UTF-8 (legal on Linux; it reaches us as a lone
    surrogate) made every later session/list fail with -32603: the listing cache (SQLite)
    cannot store the name. The cache now keeps such a name escaped (iaccode/store/listing.py,
    _index_cwd); the log file writes it escaped too (iaccode/logs.py)."""
    import os

    odd = workspace.parent / os.fsdecode(b"caf\xe9")
    odd.mkdir()
    with line_agent(tmp_path, [reply("ok")]) as agent:
        agent.call("initialize", INIT)
        strange = agent.call("session/new", {"cwd": str(odd)})["sessionId"]
        plain = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
        for _ in range(2):  # building the cache, then reading it
            everything = {s["sessionId"] for s in agent.call("session/list", {})["sessions"]}
            assert everything == {strange, plain}
            only = agent.call("session/list", {"cwd": str(odd)})["sessions"]
            assert [s["sessionId"] for s in only] == [strange]
        agent.call("session/load", {"sessionId": strange, "cwd": str(odd)})
    assert "Logging error" not in (tmp_path / "agent.stderr").read_text()
    figures.add(CATEGORY, "cases", 1)


# -- tool calls from the model ---------------------------------------------------------------


async def test_regression_nul_or_surrogate_in_a_tool_path_is_refused(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A path with a NUL character or a lone surrogate made ``os.path.realpath`` raise while
    the permission was decided: the turn failed with -32603. Tool inputs whose strings the OS
    cannot take are now refused like any invalid input (iaccode/protocol/convert.py)."""
    calls = [
        ToolUse("toolu_n", "read_file", {"path": "f\u0000.txt"}),
        ToolUse("toolu_s", "write_file", {"path": "ran_\ud800", "content": "x"}),
        ToolUse("toolu_b", "bash", {"command": "touch ran_b; echo \udc80"}),
        ToolUse("toolu_g", "grep", {"pattern": "x", "glob": "*\u0000"}),
    ]
    async with scripted_agent(tmp_path, [reply(tool_uses=calls), reply("ok")]) as agent:
        session = await start(agent, workspace)
        response, updates, _ = await agent.run_prompt(session, "paths", allow)
        assert response["result"]["stopReason"] == "end_turn"
    for call in calls:
        assert final_status(updates, call.id) == "failed", call.id
        assert "NUL" in shown_text(updates, call.id) or "surrogate" in shown_text(updates, call.id)
    assert ran_files(workspace) == []
    figures.add(CATEGORY, "cases", 1)


async def test_regression_tool_input_with_unknown_field_is_not_run(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """An input with a field the tool does not have (every schema says
    ``additionalProperties: false``) was run with the field ignored: ``{"command": ..., "cwd":
    "/"}`` ran in the project. It is now refused (iaccode/protocol/convert.py)."""
    call = ToolUse("toolu_x", "bash", {"command": "touch ran", "cwd": "/"})
    async with scripted_agent(tmp_path, [reply(tool_uses=[call]), reply("ok")]) as agent:
        session = await start(agent, workspace)
        _, updates, asked = await agent.run_prompt(session, "extra", allow)
    assert asked == [] and not (workspace / "ran").exists()
    assert "unexpected fields ['cwd']" in shown_text(updates, "toolu_x")
    figures.add(CATEGORY, "cases", 1)


async def test_regression_deeply_nested_tool_input_is_refused(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A tool input nested 500 levels overflowed the stack when it was shown to the editor, and
    5000 levels when it was parsed: the turn failed with -32603. Inputs nested more than 64
    levels are now refused like invalid JSON (iaccode/llm/assemble.py, _finish_block)."""
    exchanges = [
        answer(
            tool(0, "toolu_d1", "read_file", deep(500)),
            tool(1, "toolu_d2", "read_file", deep(5000)),
        ),
        reply("ok"),
    ]
    async with scripted_agent(tmp_path, exchanges) as agent:
        session = await start(agent, workspace)
        response, updates, _ = await agent.run_prompt(session, "deep", allow)
        assert response["result"]["stopReason"] == "end_turn"
    assert final_status(updates, "toolu_d1") == final_status(updates, "toolu_d2") == "failed"
    figures.add(CATEGORY, "cases", 1)


async def test_regression_tool_use_without_a_usable_id_is_dropped(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    """A tool_use with no id or a non-string id crashed the turn (KeyError), and a repeated id
    was sent back to the API, which refuses the whole history from then on. Such blocks are now
    left out of the answer: never run, never kept (iaccode/llm/assemble.py, content)."""
    exchanges = [
        answer(
            tool(0, MISSING, "bash", '{"command": "touch ran_m"}'),
            tool(1, 5, "bash", '{"command": "touch ran_i"}'),
            tool(2, "", "bash", '{"command": "touch ran_e"}'),
            tool(3, "toolu_dup", "read_file", '{"path": "f.txt"}'),
            tool(4, "toolu_dup", "bash", '{"command": "touch ran_d"}'),
        ),
        reply("ok"),
        reply("again"),
    ]
    (workspace / "f.txt").write_text("f\n")
    async with scripted_agent(tmp_path, exchanges) as agent:
        session = await start(agent, workspace)
        response, updates, _ = await agent.run_prompt(session, "ids", allow)
        assert response["result"]["stopReason"] == "end_turn"
        assert final_status(updates, "toolu_dup") == "completed"
        response, _, _ = await agent.run_prompt(session, "next", allow)
        assert response["result"]["stopReason"] == "end_turn"
    assert ran_files(workspace) == []
    figures.add(CATEGORY, "cases", 1)


any_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 4) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
events = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
                "error",
                "ping",
            ]
        )
    },
    optional={
        "index": st.integers(-1, 3) | any_json,
        "delta": any_json
        | st.fixed_dictionaries(
            {"type": st.sampled_from(["text_delta", "input_json_delta", "signature_delta"])},
            optional={"text": any_json, "partial_json": any_json, "signature": any_json},
        ),
        "content_block": any_json
        | st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "tool_use", "thinking"])},
            optional={"id": any_json, "name": any_json, "text": any_json},
        ),
        "message": any_json,
        "usage": any_json,
        "error": any_json,
    },
)


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # the SDK's line iterator, left to GC
def test_regression_malformed_stream_events_are_readable(figures: Figures) -> None:
    """Events of the wrong shape (a delta that is not an object, an index that is a list or a
    string, ...) raised TypeError or AttributeError through the Anthropic provider, which only
    converted ValueError: the turn failed with -32603. Every failure to read an event is now a
    readable ModelError (iaccode/llm/anthropic_provider.py, _events); and what the assembler
    keeps has usable tool_use ids. Drives the real provider and SDK against the fake server."""
    from iaccode.llm.anthropic_provider import AnthropicProvider

    count = 0
    with (
        FakeModelServer() as server,
        _environment(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.base_url),
    ):

        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.lists(events, max_size=6))
        @example(
            [
                {"type": "message_stop"},  # found by a --soak run: a null text was passed on
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": None}},
            ]
        )
        def run(stream: list[dict[str, Any]]) -> None:
            nonlocal count
            count += 1
            server.enqueue({"events": stream})

            async def one() -> None:
                client = AnthropicProvider(max_retries=0, timeout=10.0)
                try:
                    with trio.fail_after(10):
                        await ask(client)
                except ModelError:
                    pass
                finally:
                    if client._client is not None:
                        await client._client.close()

            trio.run(one)

        run()
    assembler = StreamAssembler()  # and the blocks kept are fit to send back
    for event in [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": 7, "name": "bash", "input": {}},
        },
        {"type": "content_block_stop", "index": 0},
    ]:
        assembler.feed(event)
    assert assembler.content() == []
    figures.add(CATEGORY, "cases", 1)


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in [*values, "ANTHROPIC_AUTH_TOKEN"]}
    os.environ.update(values)
    os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# -- the Anthropic provider, in-process --------------------------------------------------------


@pytest.fixture
async def provider(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from iaccode.llm.anthropic_provider import AnthropicProvider

    with FakeModelServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        client = AnthropicProvider(max_retries=2, timeout=10.0)
        yield client, server
        if client._client is not None:  # its connections, before the server goes
            await client._client.close()


@pytest.mark.parametrize(
    ("start", "delta"),
    [
        ({"type": "text", "text": ""}, {"type": "text_delta", "text": None}),
        ({"type": "text", "text": ""}, {"type": "text_delta", "text": 5}),
        ({"type": "thinking", "thinking": ""}, {"type": "thinking_delta", "thinking": ["x"]}),
        ({"type": "thinking", "thinking": ""}, {"type": "signature_delta", "signature": None}),
        (
            {"type": "tool_use", "id": "toolu_1", "name": "glob"},
            {"type": "input_json_delta", "partial_json": {"pattern": "*"}},
        ),
        ({"type": "text", "text": 7}, None),
    ],
)
def test_regression_delta_text_that_is_not_a_string_is_unreadable(
    start: dict[str, Any], delta: dict[str, Any] | None, figures: Figures
) -> None:
    """A delta (or a block start) whose text was null or a number went on to the editor as an
    ``agent_message_chunk`` of no text, and into the history. Now it is an event we cannot
    read (TypeError in the assembler: a readable ModelError in the provider)."""
    assembler = StreamAssembler()
    with pytest.raises(TypeError, match="not text"):
        assembler.feed({"type": "content_block_start", "index": 0, "content_block": start})
        assembler.feed({"type": "content_block_delta", "index": 0, "delta": delta})
    figures.add(CATEGORY, "cases", 1)


async def ask(provider: Any, messages: list[dict[str, Any]] | None = None) -> str:
    request = ModelRequest(
        model="claude-sonnet-5-5",
        max_tokens=100,
        thinking="off",
        messages=messages or [{"role": "user", "content": "hi"}],
    )
    texts = []
    async with provider.stream(request) as stream:
        async for event in stream:
            texts.append(getattr(event, "text", ""))
    return "".join(texts)


async def test_regression_lone_surrogate_in_history_does_not_break_the_next_request(
    provider: Any, figures: Figures
) -> None:
    """A lone surrogate in the history (a model's text, a client's prompt) made every later
    request impossible to encode (UnicodeEncodeError, -32603): the session was stuck for good.
    The request now carries "?" in its place (iaccode/llm/sdk_stream.py, encodable)."""
    client, server = provider
    server.enqueue(reply("fine"))
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "a \ud800 b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "c \udfff d"}]},
        {"role": "user", "content": "again"},
    ]
    assert await ask(client, history) == "fine"
    sent = server.requests[0].body["messages"]
    assert sent[0]["content"][0]["text"] == "a ? b" and sent[1]["content"][0]["text"] == "c ? d"
    figures.add(CATEGORY, "cases", 1)


@pytest.mark.parametrize(
    "header", [{"retry-after": "3600"}, {"retry-after-ms": "3600000"}, {"retry-after": "HTTP-DATE"}]
)
async def test_regression_long_retry_after_is_not_waited_for(
    provider: Any, figures: Figures, header: dict[str, str]
) -> None:
    """The SDK waits for any ``retry-after`` a server asks (up to 49 days), with the turn
    silent; a 429 asking for an hour held the turn for an hour. Waits over a minute are now not
    retried: the user sees the error at once (no_long_retry_waits in
    iaccode/llm/sdk_stream.py). Short waits are still honoured."""
    client, server = provider
    if header.get("retry-after") == "HTTP-DATE":
        header = {
            "retry-after": format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
        }
    server.enqueue(error_status(429, "wait an hour", headers=header), reply("never"))
    began = time.monotonic()
    with pytest.raises(ModelError, match="429"), trio.fail_after(10):
        await ask(client)
    assert time.monotonic() - began < 5 and len(server.requests) == 1
    server.enqueue(error_status(429, retry_after=0.2), reply("after a short wait"))
    assert await ask(client) == "never"  # the queue moved on: the short wait was retried
    figures.add(CATEGORY, "cases", 1)


# -- bash --------------------------------------------------------------------------------------


async def test_regression_jobs_in_their_own_process_group_do_not_outlive_the_call(
    tmp_path: Path, figures: Figures
) -> None:
    """GNU ``timeout`` and ``set -m`` put a job in a process group of its own, which the kill
    of the shell's group missed: ``timeout 99 sleep 99 &`` ran on after the call. The shell's
    whole session is now ended (iaccode/host/process_tree.py, _signal_group and group_alive)."""

    async def report(update: Any) -> None:
        pass

    context = ToolContext(
        cwd=tmp_path,
        limits=ToolLimits(kill_grace=1.0),
        files=None,  # type: ignore[arg-type]
        tool_call_id="toolu_r",
        report=report,
    )
    commands = [
        "timeout 99 sleep 99 & echo started",
        "set -m; sleep 98 & echo started",
        "echo x; timeout 97 sleep 97",
        "(set -m; sleep 96 &); echo started",
    ]
    try:
        for command in commands:
            result = await Bash().run(BashInput(command, timeout=1), context)
            assert survivors(tmp_path) == [], (command, result.text)
    finally:
        kill_quietly(survivors(tmp_path))
    figures.add(CATEGORY, "cases", 1)
