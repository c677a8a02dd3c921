"""The protocol layer under a hostile client: a raw line client sends what Hypothesis makes up.

One agent per test function (spawning costs more than hundreds of examples), and after every
example: each request-shaped line got exactly one answer with its id, each malformed line one
error with a null id, nothing else was answered, no answer was an internal error (-32603),
every line on stdout was strict JSON-RPC (and valid ACP), and a valid request is still answered
correctly. The model is the offline scripted provider (answers "pong"), so prompts that the
fuzzer gets right run whole turns.
"""

from __future__ import annotations

import copy
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp_conformance.script import reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iaccode.server.routes import NOTIFICATIONS, REQUESTS
from tests.adversarial.conftest import Figures
from tests.adversarial.support import NULL_ID, LineAgent, rss_kib, scripted_env

CATEGORY = "protocol"
INIT = {
    "protocolVersion": 1,
    "clientCapabilities": {},
    "clientInfo": {"name": "adv", "version": "0"},
}
PONGS = 4000


def examples(soak_run: bool, default: int) -> int:
    return default * 10 if soak_run else default


def fuzz_settings(count: int) -> settings:
    """``count`` examples; the same ones on every run (tests/conftest.py's ``ci`` profile),
    new random ones under ``--hypothesis-profile=fuzz`` (``nox -s fuzz``)."""
    return settings(
        max_examples=count, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )


def agent_for(
    tmp_path: Path,
    name: str,
    exchanges: list[dict[str, Any]] | None = None,
    extra: dict[str, str] | None = None,
    **kwargs: Any,
) -> LineAgent:
    env = scripted_env(
        tmp_path / f"{name}-home",
        exchanges if exchanges is not None else [reply("pong")] * PONGS,
        extra,
    )
    return LineAgent(env, tmp_path / f"{name}.stderr", **kwargs)


def deep_probe(agent: LineAgent, cwd: Path) -> None:
    """A whole turn still works: new session, prompt, a streamed answer, end_turn."""
    session = agent.call("session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"]
    seen = len(agent.notifications)
    result = agent.call(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "ping"}]}
    )
    assert result["stopReason"] == "end_turn", result
    texts = [
        n["params"]["update"]["content"]["text"]
        for n in agent.notifications[seen:]
        if n["params"]["sessionId"] == session
        and n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "pong" in "".join(texts), texts


def streamed_text(agent: LineAgent, session: str) -> str:
    """The agent's message text streamed to ``session`` so far."""
    return "".join(
        n["params"]["update"]["content"].get("text", "")
        for n in agent.notifications
        if n["params"].get("sessionId") == session
        and n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def finish(agent: LineAgent, figures: Figures, cases: int) -> None:
    """No traceback was logged; count the cases and the lines checked on stdout."""
    assert "Traceback" not in agent.stderr, agent.stderr[-6000:]
    figures.add(CATEGORY, "cases", cases)
    figures.add(CATEGORY, "lines_received", agent.lines_received)


# -- strategies --------------------------------------------------------------------------------

any_text = st.text(st.characters(exclude_categories=()), max_size=40)
"""Any code point, lone surrogates included (they are valid JSON escapes)."""

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | any_text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=20,
)

ENVELOPE_KEYS = ["jsonrpc", "id", "method", "params", "result", "error"]
method_names = (
    st.sampled_from(
        sorted(
            {
                *REQUESTS,
                *NOTIFICATIONS,
                "$/cancel_request",
                "session/request_permission",
                "fs/read_text_file",
                "_vendor/x",
                "",
                "initialize ",
            }
        )
    )
    | any_text
)
ids = (
    st.integers(min_value=-(2**64), max_value=2**64)
    | any_text
    | st.none()
    | st.booleans()
    | st.floats()
    | st.lists(st.integers(), max_size=2)
    | st.dictionaries(any_text, st.integers(), max_size=1)
)
ids = ids.filter(lambda v: not (isinstance(v, str) and v.startswith("probe:")))
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0"]) | json_values,
        "id": ids,
        "method": method_names | json_values,
        "params": json_values,
        "result": json_values,
        "error": json_values
        | st.fixed_dictionaries(
            {"code": st.integers() | json_values, "message": any_text | json_values}
        ),
    },
) | st.dictionaries(st.sampled_from(ENVELOPE_KEYS) | any_text, json_values, max_size=6)


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


raw_lines = st.one_of(
    st.binary(max_size=300),
    json_values.map(dumps),
    envelopes.map(dumps),
    # Invalid UTF-8 inside an otherwise valid request.
    st.binary(min_size=1, max_size=8).map(
        lambda junk: b'{"jsonrpc": "2.0", "id": 1, "method": "ses' + junk + b'"}'
    ),
    # A valid request cut short.
    st.integers(min_value=1, max_value=60).map(
        lambda n: dumps(
            {"jsonrpc": "2.0", "id": "cut", "method": "session/list", "params": {"cwd": "/"}}
        )[:n]
    ),
)
batches = st.lists(raw_lines, min_size=1, max_size=4).map(lambda lines: b"\n".join(lines) + b"\n")


# -- random lines, envelopes -------------------------------------------------------------------


def fuzz_lines(
    tmp_path: Path,
    workspace: Path,
    figures: Figures,
    name: str,
    lines: st.SearchStrategy[bytes],
    count: int,
) -> None:
    """One agent takes ``count`` Hypothesis examples of ``lines``; after each, a valid request
    is still answered; at the end a whole turn still works."""
    with agent_for(tmp_path, name) as agent:
        agent.call("initialize", INIT)
        done = 0

        @fuzz_settings(count)
        @given(lines)
        def run(data: bytes) -> None:
            nonlocal done
            done += 1
            agent.send(data)
            agent.probe()

        run()
        deep_probe(agent, workspace)
        finish(agent, figures, done)


def as_lines(messages: list[Any]) -> bytes:
    return b"".join(dumps(m) + b"\n" for m in messages)


def test_random_lines_keep_the_agent_serving(
    tmp_path: Path, workspace: Path, figures: Figures, soak_run: bool
) -> None:
    fuzz_lines(tmp_path, workspace, figures, "lines", batches, examples(soak_run, 250))


def test_jsonrpc_messages_of_every_shape(
    tmp_path: Path, workspace: Path, figures: Figures, soak_run: bool
) -> None:
    fuzz_lines(
        tmp_path,
        workspace,
        figures,
        "shapes",
        st.lists(envelopes, min_size=1, max_size=3).map(as_lines),
        examples(soak_run, 250),
    )


# -- wrong params for every routed method ------------------------------------------------------

STR, INT, BOOL, OBJ, ARR = "str", "int", "bool", "obj", "arr"
ANY = "any"
"""Any JSON value is right (``protocolVersion``: one we cannot read is negotiated, not refused)."""
JSON_KIND: dict[type, str] = {
    str: STR,
    int: INT,
    bool: BOOL,
    dict: OBJ,
    list: ARR,
    float: "float",
    type(None): "null",
}


def kind_of(value: Any) -> str:
    return JSON_KIND[type(value)]


# path -> (kind, required, nullable)
Spec = dict[tuple[Any, ...], tuple[str, bool, bool]]
META: Spec = {("_meta",): (OBJ, False, True)}
SESSION_ONLY: Spec = {("sessionId",): (STR, True, False), **META}
LOAD: Spec = {
    ("sessionId",): (STR, True, False),
    ("cwd",): (STR, True, False),
    ("mcpServers",): (ARR, False, False),
    ("mcpServers", 0): (OBJ, False, False),
    ("additionalDirectories",): (ARR, False, True),
    ("additionalDirectories", 0): (STR, False, False),
    **META,
}


def templates(
    session: str, victim: Callable[[], str], cwd: str
) -> dict[str, tuple[Callable[[], dict[str, Any]], Spec]]:
    """Valid params and their field specs, for every method the agent routes. Half the prompts
    go to a fresh session: only a first prompt sets the title."""
    flip = itertools.cycle([True, False])
    load = lambda: {  # noqa: E731
        "sessionId": session,
        "cwd": cwd,
        "mcpServers": [{"name": "m", "command": "x"}],
        "additionalDirectories": [cwd],
    }
    config = lambda: {"sessionId": session, "configId": "mode", "value": "default"}  # noqa: E731
    config_spec: Spec = {
        ("sessionId",): (STR, True, False),
        ("configId",): (STR, True, False),
        ("value",): (STR, True, False),
        **META,
    }
    listing = lambda: {"cwd": cwd, "cursor": None}  # noqa: E731
    listing_spec: Spec = {("cwd",): (STR, False, True), ("cursor",): (STR, False, True), **META}
    return {
        "initialize": (
            lambda: {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
                "clientInfo": {"name": "adv", "version": "0", "title": "t"},
            },
            {
                ("protocolVersion",): (ANY, True, False),
                ("clientCapabilities",): (OBJ, False, False),
                ("clientCapabilities", "fs"): (OBJ, False, False),
                ("clientCapabilities", "fs", "readTextFile"): (BOOL, False, False),
                ("clientCapabilities", "fs", "writeTextFile"): (BOOL, False, False),
                ("clientCapabilities", "terminal"): (BOOL, False, False),
                ("clientInfo",): (OBJ, False, True),
                ("clientInfo", "name"): (STR, True, False),
                ("clientInfo", "version"): (STR, True, False),
                ("clientInfo", "title"): (STR, False, True),
                **META,
            },
        ),
        "authenticate": (
            lambda: {"methodId": "anthropic-api-key"},
            {("methodId",): (STR, True, False), **META},
        ),
        "logout": (lambda: {}, {**META}),
        "session/new": (
            lambda: {"cwd": cwd, "mcpServers": [], "additionalDirectories": [cwd]},
            {
                ("cwd",): (STR, True, False),
                ("mcpServers",): (ARR, False, False),
                ("additionalDirectories",): (ARR, False, True),
                ("additionalDirectories", 0): (STR, False, False),
                **META,
            },
        ),
        "session/prompt": (
            lambda: {
                "sessionId": victim() if next(flip) else session,
                "prompt": [{"type": "text", "text": "hi", "annotations": {"priority": 1}}],
            },
            {
                ("sessionId",): (STR, True, False),
                ("prompt",): (ARR, True, False),
                ("prompt", 0): (OBJ, False, False),
                ("prompt", 0, "type"): (STR, True, False),
                ("prompt", 0, "text"): (STR, True, False),
                ("prompt", 0, "annotations"): (OBJ, False, True),
                **META,
            },
        ),
        "session/close": (lambda: {"sessionId": victim()}, SESSION_ONLY),
        "session/delete": (lambda: {"sessionId": victim()}, SESSION_ONLY),
        "session/load": (load, LOAD),
        "session/resume": (load, LOAD),
        "session/fork": (load, LOAD),
        "session/list": (listing, listing_spec),
        "sessions/list": (listing, listing_spec),
        "session/set_mode": (
            lambda: {"sessionId": session, "modeId": "default"},
            {("sessionId",): (STR, True, False), ("modeId",): (STR, True, False), **META},
        ),
        "session/set_config_option": (config, config_spec),
        "config/set": (config, config_spec),
        "_session/steering": (
            lambda: {
                "sessionId": session,
                "prompt": [{"type": "text", "text": "hi"}],
                "idleBehavior": "promptRequired",
            },
            {
                ("sessionId",): (STR, True, False),
                ("prompt",): (ARR, True, False),
                ("prompt", 0): (OBJ, False, False),
                ("prompt", 0, "type"): (STR, True, False),
                ("prompt", 0, "text"): (STR, True, False),
                ("idleBehavior",): (STR, False, True),
                **META,
            },
        ),
    }


def wire_path(path: tuple[Any, ...]) -> str:
    out = "params"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def reported_path(path: tuple[Any, ...]) -> str:
    """Where the agent names the problem: a content block's ``type`` picks its class, so a bad
    one is reported on the block."""
    if len(path) == 3 and path[:2] == ("prompt", 0) and path[2] == "type":
        return wire_path(path[:2])
    return wire_path(path)


def set_at(params: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool = False) -> None:
    target: Any = params
    for part in path[:-1]:
        target = target[part]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value


@st.composite
def mutations(draw: st.DrawFn, methods: list[str]) -> tuple[str, str, int, Any]:
    method = draw(st.sampled_from(methods))
    return (
        method,
        draw(st.sampled_from(["retype", "retype", "retype", "delete", "extra", "revalue"])),
        draw(st.integers(min_value=0, max_value=10**6)),
        draw(json_values),
    )


def test_wrong_param_types_for_every_routed_method(
    tmp_path: Path, workspace: Path, figures: Figures, soak_run: bool
) -> None:
    with agent_for(tmp_path, "params") as agent:
        agent.call("initialize", INIT)
        session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]

        def victim() -> str:
            return str(agent.call("session/new", {"cwd": str(workspace)})["sessionId"])

        table = templates(session, victim, str(workspace))
        assert set(table) == set(REQUESTS), "a routed method has no template here"
        count = 0
        checked: set[str] = set()

        @fuzz_settings(examples(soak_run, 350))
        @given(mutations(sorted(table)))
        def run(case: tuple[str, str, int, Any]) -> None:
            nonlocal count
            count += 1
            method, operation, pick, value = case
            make, spec = table[method]
            params = copy.deepcopy(make())
            expected: str | None = None
            if operation == "extra":
                params[f"unknownField{pick}"] = value
            elif operation == "revalue":  # the right type, any value: never an internal error
                paths = sorted(spec, key=str)
                path = paths[pick % len(paths)]
                try:
                    set_at(
                        params,
                        path,
                        value if spec[path][0] in (ANY, kind_of(value)) else str(value),
                    )
                except (KeyError, IndexError, TypeError):
                    return
            else:
                paths = sorted(spec, key=str)
                path = paths[pick % len(paths)]
                want, required, nullable = spec[path]
                parent = params
                for part in path[:-1]:
                    parent = parent[part]
                if isinstance(parent, list) or path[-1] not in parent and operation == "delete":
                    return
                if operation == "delete":
                    set_at(params, path, None, delete=True)
                    if required:
                        expected = reported_path(path)
                else:
                    if want in (ANY, kind_of(value)) or (
                        want == INT and isinstance(value, int) and not isinstance(value, bool)
                    ):
                        return  # not a wrong type after all
                    set_at(params, path, value)
                    if value is not None or not nullable:
                        expected = reported_path(path)
            answer = agent.request(method, params)
            if expected is not None:
                assert "error" in answer and answer["error"]["code"] == -32602, (
                    method,
                    params,
                    answer,
                )
                assert expected in answer["error"]["data"], (expected, answer)
                checked.add(method)
            agent.probe()

        run()
        deep_probe(agent, workspace)
        finish(agent, figures, count)
        figures.set(CATEGORY, "methods_with_wrong_params", len(checked))


# -- responses, notifications, ids -------------------------------------------------------------


def test_responses_to_ids_we_never_sent_are_never_answered(
    tmp_path: Path, workspace: Path, figures: Figures, soak_run: bool
) -> None:
    responses = st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "id": ids},
        optional={"result": json_values, "error": json_values},
    )
    notifications = st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "method": st.sampled_from(["session/cancel", "$/cancel_request", "_x/y", "nope"]),
            "params": json_values
            | st.fixed_dictionaries({"sessionId": json_values})
            | st.fixed_dictionaries({"requestId": ids}),
        }
    )
    fuzz_lines(
        tmp_path,
        workspace,
        figures,
        "responses",
        st.lists(responses | notifications, min_size=1, max_size=5).map(as_lines),
        examples(soak_run, 120),
    )


def test_requests_before_initialize(
    tmp_path: Path, workspace: Path, figures: Figures, soak_run: bool
) -> None:
    with agent_for(tmp_path, "preinit") as agent:
        count = 0
        methods = sorted(m for m in REQUESTS if m != "initialize")

        @fuzz_settings(examples(soak_run, 100))
        @given(
            st.sampled_from(methods) | any_text.filter(lambda m: m != "initialize"),
            json_values | st.just({"cwd": str(workspace), "mcpServers": []}),
        )
        def run(method: str, params: Any) -> None:
            nonlocal count
            count += 1
            answer = agent.request(method, params)
            code = answer["error"]["code"]
            if method in REQUESTS or method in NOTIFICATIONS:
                assert code == -32600, answer
            else:
                assert code == -32601, answer
            # Still not initialized: a valid request is refused the same way.
            assert agent.request("session/list", {})["error"]["code"] == -32600

        run()
        # A malformed initialize is refused and does not count as the handshake.
        assert (
            agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": []})["error"][
                "code"
            ]
            == -32602
        )
        assert agent.request("session/list", {})["error"]["code"] == -32600
        agent.call("initialize", INIT)
        deep_probe(agent, workspace)
        finish(agent, figures, count)


def test_a_second_initialize_changes_nothing_that_runs(
    tmp_path: Path, workspace: Path, figures: Figures
) -> None:
    with agent_for(tmp_path, "reinit") as agent:
        agent.call("initialize", INIT)
        session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
        for version in (1, 2, 0, -5, 2**40):
            again = agent.call(
                "initialize",
                {**INIT, "protocolVersion": version, "clientCapabilities": {"terminal": True}},
            )
            assert again["protocolVersion"] == 1
        result = agent.call(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}
        )
        assert result["stopReason"] == "end_turn"
        deep_probe(agent, workspace)
        finish(agent, figures, 6)


def streams_then_hangs(text: str) -> dict[str, Any]:
    """A model answer that starts (its first text delta) and never ends: a test that sees
    the text knows the turn's model request is in flight."""
    exchange = reply(text)
    exchange["events"] = exchange["events"][:3]  # message_start, block start, the delta
    exchange["then_hang"] = True
    return exchange


def test_duplicate_request_ids_in_flight(tmp_path: Path, workspace: Path, figures: Figures) -> None:
    exchanges = [
        streams_then_hangs("working 7"),
        streams_then_hangs("working seven"),
        reply("pong"),
        reply("pong"),
    ]
    with agent_for(tmp_path, "dupes", exchanges) as agent:
        agent.call("initialize", INIT)
        for request_id in (7, "seven"):
            session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
            agent.send_message(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hang"}]},
                },
                expect=False,
            )
            agent.owe(request_id, "session/prompt")
            # In flight once its model answer has begun (a fixed sleep raced the first
            # prompt's lazy imports: a cancel before the request left its exchange unplayed).
            begun = f"working {request_id}"

            def has_begun(s: str = session, t: str = begun) -> bool:
                return t in streamed_text(agent, s)

            agent.settle(until=has_begun)
            again = agent.request("session/list", {}, request_id=request_id, only=True)
            assert again["error"]["code"] == -32600, again
            assert "in flight" in again["error"]["data"]["detail"]
            agent.notify("session/cancel", {"sessionId": session})
            agent.settle()
            answers = agent.answers[(type(request_id).__name__, request_id)]
            assert len(answers) == 2 and answers[-1]["result"]["stopReason"] == "cancelled"
        deep_probe(agent, workspace)
        finish(agent, figures, 2)


# -- chunking ----------------------------------------------------------------------------------


def mixed_stream(tag: str) -> bytes:
    """Lines of every kind the reader must cut right: answered, refused, malformed, ignored;
    CRLF, blank lines, multi-byte UTF-8 and invalid UTF-8 among them."""

    def line(message: dict[str, Any]) -> bytes:
        return json.dumps(message, ensure_ascii=False).encode()

    return (
        b"\n".join(
            [
                line({"jsonrpc": "2.0", "id": f"{tag}:1", "method": "session/list", "params": {}}),
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": f"{tag}:2",
                        "method": "session/list",
                        "params": {"cwd": "/tmp/\u00fcn\u00ef/\U0001f642/\u4e2d"},
                    }
                )
                + b"\r",
                b"",
                b'{"jsonrpc": "2.0", "id": "' + tag.encode() + b':3", "method"',
                line({"jsonrpc": "2.0", "id": f"{tag}:4", "method": "nope/\u00e9", "params": {}}),
                line(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/cancel",
                        "params": {"sessionId": "sess_" + "0" * 32},
                    }
                ),
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": f"{tag}:5",
                        "method": "session/prompt",
                        "params": {"sessionId": 5},
                    }
                ),
                b'{"jsonrpc": "2.0", "id": "' + tag.encode() + b':6", "method": "\xff\xfe"}',
                line({"jsonrpc": "2.0", "id": f"never-sent-{tag}", "result": None}),
                b"   ",
                line({"jsonrpc": "2.0", "id": f"{tag}:7", "method": "initialize", "params": INIT}),
            ]
        )
        + b"\n"
    )


def test_a_stream_split_at_every_byte_boundary_parses_the_same(
    tmp_path: Path, figures: Figures
) -> None:
    """The same stream, sent whole, in two pieces cut at every byte boundary, and one byte at
    a time: the same answers every time (ids aside), and nothing else."""
    with agent_for(tmp_path, "chunks") as agent:
        agent.call("initialize", INIT)

        def answers(tag: str, pieces: list[bytes], pause: float) -> list[Any]:
            keys = [NULL_ID] + [("str", f"{tag}:{n}") for n in range(1, 8)]
            before = {key: len(agent.answers.get(key, [])) for key in keys}
            agent.expect(b"".join(pieces))
            for piece in pieces:
                agent.send(piece, expect=False)
                time.sleep(pause)  # the agent reads each piece on its own
            agent.settle()
            return [
                [
                    {k: v for k, v in a.items() if k != "id"}
                    for a in agent.answers.get(key, [])[before[key] :]
                ]
                for key in keys
            ]

        whole = answers("w", [mixed_stream("w")], 0)
        assert [len(a) for a in whole] == [2, 1, 1, 0, 1, 1, 0, 1], whole
        cuts = 0
        for cut in range(1, len(mixed_stream("s"))):
            data = mixed_stream("s")
            assert answers("s", [data[:cut], data[cut:]], 0.001) == whole, f"cut at byte {cut}"
            cuts += 1
        data = mixed_stream("b")
        assert answers("b", [data[i : i + 1] for i in range(len(data))], 0.0005) == whole
        agent.probe()
        finish(agent, figures, cuts + 2)
    figures.add(CATEGORY, "byte_boundaries_cut", cuts + len(data) - 1)


# -- size and depth ----------------------------------------------------------------------------


def nested(depth: int, leaf: Any = 0) -> bytes:
    return b'{"a":' * depth + json.dumps(leaf).encode() + b"}" * depth


@pytest.mark.parametrize("depth", [50, 200, 400, 800, 960, 990, 2_000, 100_000])
def test_deep_nesting(tmp_path: Path, workspace: Path, figures: Figures, depth: int) -> None:
    deep = nested(depth)
    with agent_for(tmp_path, f"deep{depth}") as agent:
        agent.call("initialize", INIT)
        session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
        lines = [
            b"[" * depth + b"]" * depth,
            b'{"jsonrpc":"2.0","id":"d1","method":"initialize","params":{"protocolVersion":1,'
            b'"_meta":' + deep + b"}}",
            b'{"jsonrpc":"2.0","id":"d2","method":"session/new","params":{"cwd":'
            + dumps(str(workspace))
            + b',"mcpServers":['
            + deep
            + b"]}}",
            b'{"jsonrpc":"2.0","id":"d3","method":"session/prompt","params":{"sessionId":"'
            + session.encode()
            + b'","prompt":[{"type":"text","text":"deep","_meta":'
            + deep
            + b',"annotations":'
            + deep
            + b"}]}}",
            b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":' + deep + b"}}",
        ]
        for line in lines:
            agent.send(line + b"\n")
            agent.probe()
        # The session that got the deep prompt loads and answers again.
        agent.call("session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
        deep_probe(agent, workspace)
        finish(agent, figures, len(lines))


def test_huge_strings(tmp_path: Path, workspace: Path, figures: Figures) -> None:
    with agent_for(tmp_path, "huge") as agent:
        agent.call("initialize", INIT)
        session = agent.call("session/new", {"cwd": str(workspace)})["sessionId"]
        start = rss_kib(agent.process.pid)
        cases = 0
        for size in (1 << 20, 8 << 20):
            big = "\u00e9" * (size // 2)
            for method, params in [
                ("session/new", {"cwd": big}),
                ("session/load", {"sessionId": big, "cwd": str(workspace)}),
                ("session/set_mode", {"sessionId": session, "modeId": big}),
                (
                    "session/set_config_option",
                    {"sessionId": session, "configId": "model", "value": big},
                ),
                (big, {}),
                ("session/list", {"cursor": big}),
                ("initialize", {**INIT, "_meta": {"k": big}}),
            ]:
                answer = agent.request(method, params, timeout=60)
                assert answer.get("error", {}).get("code") in (None, -32601, -32602), answer
                cases += 1
                agent.probe()
        # A huge prompt runs a whole turn (the scripted model answers pong).
        result = agent.call(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "x" * (8 << 20)}]},
            timeout=60,
        )
        assert result["stopReason"] == "end_turn"
        grown = rss_kib(agent.process.pid) - start
        assert grown < 512 * 1024, f"RSS grew by {grown} KiB"
        deep_probe(agent, workspace)
        finish(agent, figures, cases + 1)


def test_over_long_line_is_discarded_with_memory_bounded(
    tmp_path: Path, workspace: Path, figures: Figures, soak_run: bool
) -> None:
    limit = 1 << 20
    with agent_for(tmp_path, "long", extra={"IAC_CODE_MAX_LINE_BYTES": str(limit)}) as agent:
        agent.call("initialize", INIT)
        start = rss_kib(agent.process.pid)
        peak = start
        total = (512 if soak_run else 192) << 20
        chunk = b'{"jsonrpc":"2.0","id":"long","method":"session/list","params":{"x":"' + b"y" * (
            4 << 20
        )
        sent = 0
        while sent < total:
            agent.send(chunk, expect=False)
            sent += len(chunk)
            peak = max(peak, rss_kib(agent.process.pid))
        # The end of the long line and a valid request in the same write.
        agent.send(b'"}}\n{"jsonrpc":"2.0","id":"after","method":"session/list"}\n')
        agent.settle(timeout=60)
        null_errors = agent.answers[("null", None)]
        assert null_errors[-1]["error"]["code"] == -32600
        assert f"longer than {limit} bytes" in null_errors[-1]["error"]["data"]["detail"]
        assert "result" in agent.answers[("str", "after")][0]
        # Exactly at the limit is fine; one byte over is not.
        padding = limit - len(
            dumps({"jsonrpc": "2.0", "id": "edge", "method": "session/list", "params": {"x": ""}})
        )
        fits = dumps(
            {
                "jsonrpc": "2.0",
                "id": "edge",
                "method": "session/list",
                "params": {"x": "z" * padding},
            }
        )
        assert len(fits) == limit
        assert "result" in agent.request("session/list", {"x": "z" * padding}, request_id="edge")
        agent.send(fits[:-3] + b'z"}}\n', expect=False)  # one byte over, valid JSON
        agent.owe(None)
        agent.settle()
        assert agent.answers[("null", None)][-1]["error"]["code"] == -32600
        agent.probe()
        deep_probe(agent, workspace)
        grown = peak - start
        assert grown < 64 * 1024, f"RSS grew by {grown} KiB while discarding {sent} bytes"
        figures.set(CATEGORY, "over_long_line_mib_discarded", sent >> 20)
        figures.set(CATEGORY, "over_long_line_rss_growth_kib", grown)
        finish(agent, figures, 3)
