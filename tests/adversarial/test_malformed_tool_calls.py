"""Malformed tool calls from the model (raw stream events through the fake Messages API and the
real SDK): an unknown tool, input that is not JSON, input cut by ``max_tokens``, inputs of the
wrong shape, bad ids, absurd depth and size.

For each: the call is never executed (every payload would create a ``ran_*`` file, and
permission questions are answered *allow*), the model gets an error result for every tool_use
in the next request, the history stays valid for the API, the turn ends with a stop reason
(never a JSON-RPC error), and the session answers the next prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.script import reply

from tests.adversarial.conftest import Figures
from tests.adversarial.support import (
    allow,
    history_problems,
    http_agent,
    ran_files,
    request_tool_results,
)

CATEGORY = "malformed_tool_calls"
MISSING = object()


def message_start() -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_adv",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }


def tool(
    index: Any, call_id: Any, name: Any, partial: str | None, close: bool = True
) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    if call_id is MISSING:
        del block["id"]
    events = [{"type": "content_block_start", "index": index, "content_block": block}]
    if partial is not None:
        events.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": partial},
            }
        )
    if close:
        events.append({"type": "content_block_stop", "index": index})
    return events


def text(index: Any, value: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "text_delta", "text": value},
        },
        {"type": "content_block_stop", "index": index},
    ]


def answer(*blocks: list[dict[str, Any]], stop_reason: str = "tool_use") -> dict[str, Any]:
    events = [message_start()]
    for block in blocks:
        events += block
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]
    return {"events": events}


def bash(command: str) -> str:
    return json.dumps({"command": command})


def deep(depth: int) -> str:
    return '{"path": "x", "a": ' + '{"a": ' * depth + "1" + "}" * depth + "}"


CASES: dict[str, tuple[dict[str, Any], bool | None, set[str]]] = {
    # name: (the model's answer, is the model asked again (None: either), the stop reasons).
    # A tool_use without a usable id (missing, not a string, repeated) is dropped from the
    # answer: it could never be answered, so it is never run nor kept.
    "unknown_tool": (
        answer(tool(0, "toolu_u", "rm_everything", bash("touch ran_u"))),
        True,
        {"end_turn"},
    ),
    "empty_name": (answer(tool(0, "toolu_e", "", bash("touch ran_e"))), True, {"end_turn"}),
    "name_not_a_string": (answer(tool(0, "toolu_n", 5, bash("touch ran_n"))), True, {"end_turn"}),
    "input_not_json": (
        answer(tool(0, "toolu_j", "bash", '{"command": "touch ran_j')),
        True,
        {"end_turn"},
    ),
    "cut_by_max_tokens": (
        answer(
            text(0, "Let me run it."),
            tool(1, "toolu_c", "bash", '{"command": "touch ran_c'),
            stop_reason="max_tokens",
        ),
        True,
        {"end_turn", "max_tokens"},
    ),
    "cut_by_max_tokens_unclosed": (
        answer(
            text(0, "Let me run it."),
            tool(1, "toolu_c2", "bash", '{"command": "touch ran_c2', close=False),
            stop_reason="max_tokens",
        ),
        None,
        {"max_tokens", "end_turn"},
    ),
    "input_not_an_object": (
        answer(
            tool(0, "toolu_o1", "bash", "[1, 2]"),
            tool(1, "toolu_o2", "bash", '"touch ran_o2"'),
            tool(2, "toolu_o3", "bash", "null"),
            tool(3, "toolu_o4", "bash", "42"),
        ),
        True,
        {"end_turn"},
    ),
    "wrong_types": (
        answer(
            tool(0, "toolu_t1", "bash", '{"command": ["touch", "ran_t1"]}'),
            tool(1, "toolu_t2", "read_file", '{"path": 5}'),
            tool(2, "toolu_t3", "write_file", '{"path": "ran_t3", "content": {"a": 1}}'),
            tool(3, "toolu_t4", "bash", '{"command": "touch ran_t4", "x": 1}'),
            tool(4, "toolu_t5", "bash", '{"command": "touch ran_t5", "timeout": "5"}'),
        ),
        True,
        {"end_turn"},
    ),
    "duplicate_ids": (
        answer(
            tool(0, "toolu_dup", "read_file", '{"path": "f.txt"}'),
            tool(1, "toolu_dup", "bash", bash("touch ran_dup")),
        ),
        True,
        {"end_turn"},
    ),
    "id_not_a_string": (answer(tool(0, 5, "bash", bash("touch ran_i"))), False, {"end_turn"}),
    "id_missing": (answer(tool(0, MISSING, "bash", bash("touch ran_m"))), False, {"end_turn"}),
    "id_empty": (answer(tool(0, "", "bash", bash("touch ran_ie"))), False, {"end_turn"}),
    "deep_input_500": (answer(tool(0, "toolu_d1", "read_file", deep(500))), True, {"end_turn"}),
    "deep_input_5000": (answer(tool(0, "toolu_d2", "read_file", deep(5000))), True, {"end_turn"}),
    "nul_in_path": (
        answer(
            tool(0, "toolu_z", "read_file", '{"path": "f\\u0000.txt"}'),
            tool(1, "toolu_z2", "write_file", '{"path": "ran_\\u0000z", "content": "x"}'),
        ),
        True,
        {"end_turn"},
    ),
    "surrogate_in_path": (
        answer(tool(0, "toolu_s", "read_file", '{"path": "f\\ud800.txt"}')),
        True,
        {"end_turn"},
    ),
    "surrogate_in_command": (
        answer(tool(0, "toolu_s2", "bash", '{"command": "echo \\udc80 > ran_s2"}')),
        True,
        {"end_turn"},
    ),
    "surrogate_in_text": (answer(text(0, "half a pair: \ud83d.")), False, {"end_turn"}),
    "string_index": (
        answer(text(0, "hi"), tool("1", "toolu_si", "bash", bash("touch ran_si"))),
        False,
        {"end_turn"},
    ),
    "index_not_hashable": (
        answer(tool([0], "toolu_l", "bash", bash("touch ran_l"))),
        False,
        {"end_turn"},
    ),
    "delta_not_an_object": (
        answer(
            [
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                {"type": "content_block_delta", "index": 0, "delta": "text"},
            ]
        ),
        False,
        {"end_turn"},
    ),
    "message_delta_not_an_object": (
        {
            "events": [
                message_start(),
                *text(0, "x"),
                {"type": "message_delta", "delta": ["end_turn"]},
                {"type": "message_stop"},
            ]
        },
        False,
        {"end_turn"},
    ),
    "delta_without_start": (
        answer(
            [
                {
                    "type": "content_block_delta",
                    "index": 3,
                    "delta": {"type": "input_json_delta", "partial_json": bash("touch ran_x")},
                },
                {"type": "content_block_stop", "index": 3},
            ]
        ),
        False,
        {"end_turn"},
    ),
    "huge_input": (
        answer(
            tool(0, "toolu_h", "read_file", json.dumps({"path": "f.txt", "pad": "p" * (8 << 20)}))
        ),
        True,
        {"end_turn"},
    ),
    "many_calls": (
        answer(*[tool(n, f"toolu_m{n}", "read_file", '{"path": "f.txt"}') for n in range(300)]),
        True,
        {"end_turn"},
    ),
    "many_bad_calls": (
        answer(*[tool(n, f"toolu_b{n}", "bash", '{"command": 1}') for n in range(100)]),
        True,
        {"end_turn"},
    ),
}


@pytest.fixture
def model_server():  # type: ignore[no-untyped-def]
    with FakeModelServer() as server:
        yield server


@pytest.mark.parametrize("group", [0, 1])
async def test_malformed_tool_calls_are_never_run(
    tmp_path: Path, workspace: Path, model_server: FakeModelServer, figures: Figures, group: int
) -> None:
    names = sorted(CASES)[group::2]
    (workspace / "f.txt").write_text("content\n")
    problems: dict[str, str] = {}
    async with http_agent(tmp_path, model_server.base_url) as agent:
        await agent.initialize()
        for name in names:
            malformed, followup, stops = CASES[name]
            session = await agent.new_session(workspace)
            first = model_server.play(malformed, *([reply("understood")] if followup else []))
            response, _, _ = await agent.run_prompt(session, f"case {name}", allow, timeout=60)
            if "result" not in response:
                problems[name] = f"the prompt failed: {response}"
                continue
            if response["result"]["stopReason"] not in stops:
                problems[name] = f"stop reason {response['result']['stopReason']}"
            made = len(model_server.requests) - first
            if made not in ((1, 2) if followup is None else (2 if followup else 1,)):
                problems[name] = f"{made} model requests"
                continue
            if made == 2:
                body = model_server.requests[first + 1].body
                bad = history_problems(body["messages"])
                uses = [b for b in body["messages"][-2]["content"] if b.get("type") == "tool_use"]
                results = request_tool_results(body)
                valid = name in ("many_calls", "duplicate_ids")  # these calls may run
                unanswered = [
                    u.get("id")
                    for u in uses
                    if u.get("id") not in results
                    or (not valid and results[u["id"]].get("is_error") is not True)
                ]
                if bad or unanswered or not uses:
                    problems[name] = f"history {bad}, not refused {unanswered}, uses {uses}"
            model_server.play(reply("after"))
            after, _, _ = await agent.run_prompt(session, "after", allow)
            if after.get("result", {}).get("stopReason") != "end_turn":
                problems[name] = f"the next prompt: {after}"
            elif history_problems(model_server.requests[-1].body["messages"]):
                problems[name] = "the next request's history: " + str(
                    history_problems(model_server.requests[-1].body["messages"])
                )
    ran = ran_files(workspace)
    if ran:
        problems["executed"] = f"malformed calls were executed: {ran}"
    assert problems == {}, "\n".join(f"{k}: {v[:700]}" for k, v in problems.items())
    assert "Traceback" not in (tmp_path / "agent.stderr").read_text()
    figures.add(CATEGORY, "cases", len(names))
