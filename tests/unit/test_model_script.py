"""The model script format as iac-code reads it: validation and load/dump
(``iaccode.llm.script``), and that it agrees with the harness's reading
(``acp_conformance.script``, whose builders are tested with the harness)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_conformance import script as builders
from acp_conformance.script import (
    ToolUse,
    error_body,
    error_status,
    hang,
    read_exchange,
    reply,
    reset,
    stream_error,
)

from iaccode.llm.script import (
    ScriptError,
    dump_script,
    load_script,
    validate_exchange,
    validate_script,
)


def test_validate_fills_defaults() -> None:
    out = validate_script(
        [
            {"events": [{"type": "ping"}]},
            {"status": 429},
            {"hang": True, "comment": "never answered"},
        ]
    )
    assert out[0] == {"events": [{"type": "ping"}], "delay": 0.0, "cut_after": None}
    assert out[1] == {"status": 429, "headers": {}}
    assert out[2] == {"comment": "never answered", "hang": True}


def test_validate_accepts_object_form() -> None:
    assert validate_script({"version": 1, "exchanges": [{"reset": True}]}) == [{"reset": True}]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("nope", "must be an object"),
        ({}, "must have exactly one of"),
        ({"hang": True, "reset": True}, "must have exactly one of"),
        ({"events": [], "status": 500}, "must have exactly one of"),
        ({"events": {}}, "'events' must be an array, got an object"),
        ({"events": [1]}, r"events\[0\] must be an object"),
        (
            {"events": [{"type": "ping"}, {"data": 1}]},
            r"events\[1\]\.type must be a string, got null",
        ),
        ({"events": [], "delay": -1}, "'delay' must be a non-negative number"),
        ({"events": [], "delay": "1"}, "'delay' must be a number, got a string"),
        ({"events": [], "delay": True}, "'delay' must be a number, got a boolean"),
        ({"events": [{"type": "ping"}], "cut_after": 2}, "'cut_after' must be null or an integer"),
        ({"events": [], "cut_after": 1.5}, "'cut_after'"),
        ({"events": [], "cutafter": 1}, "unknown key.*cutafter"),
        ({"status": 200}, "'status' must be an integer from 400 to 599"),
        ({"status": "429"}, "'status' must be an integer"),
        ({"status": 429, "headers": {"retry-after": 1}}, "'headers' must be an object of strings"),
        ({"status": 429, "delay": 1}, "unknown key"),
        ({"hang": False}, "'hang' must be true"),
        ({"reset": 1}, "'reset' must be true"),
        ({"reset": True, "comment": 3}, "'comment' must be a string"),
    ],
)
def test_validate_errors_name_the_index(bad: object, problem: str) -> None:
    good = {"hang": True}
    with pytest.raises(ScriptError, match=rf"^exchange 2: {problem}") as info:
        validate_script([good, good, bad])
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (3, "must be a list of exchanges"),
        ({"version": 2, "exchanges": []}, "'version' must be 1"),
        ({"exchanges": []}, "'version' must be 1"),
        ({"version": 1}, "missing 'exchanges'"),
        ({"version": 1, "exchanges": [], "extra": 1}, "unknown key"),
        ({"version": 1, "exchanges": {}}, "must be a list"),
    ],
)
def test_validate_script_shape_errors(bad: object, problem: str) -> None:
    with pytest.raises(ScriptError, match=problem):
        validate_script(bad)


def test_validate_exchange_index() -> None:
    with pytest.raises(ScriptError, match="^exchange 7: "):
        validate_exchange({"hang": "yes"}, 7)


def test_dump_and_load_round_trip(tmp_path: Path) -> None:
    exchanges = [
        reply(["a", "b"], thinking="t", tool_uses=[ToolUse("tu", "f", {"x": [1, 2]})]),
        stream_error("so far"),
        error_status(429, retry_after=2),
        hang(),
        reset(),
    ]
    path = tmp_path / "script.json"
    dump_script(exchanges, path)
    data = json.loads(path.read_text())
    assert data["version"] == 1 and len(data["exchanges"]) == 5
    assert load_script(path) == exchanges


def test_load_bare_list(tmp_path: Path) -> None:
    path = tmp_path / "bare.json"
    path.write_text(json.dumps([{"reset": True}, {"status": 500}]))
    assert load_script(str(path)) == [
        {"reset": True},
        {"status": 500, "headers": {}},
    ]


def test_load_errors_name_file_and_index(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"version": 1, "exchanges": [{"reset": True}, {"hang": 0}]}))
    with pytest.raises(ScriptError, match=r"bad\.json: exchange 1: 'hang' must be true"):
        load_script(path)
    path.write_text("{not json")
    with pytest.raises(ScriptError, match=r"bad\.json: not valid JSON"):
        load_script(path)


def test_dump_refuses_bad_exchanges(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="^exchange 1: "):
        dump_script([hang(), {"hang": True, "oops": 1}], tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    "exchange",
    [
        {"events": [{"type": "ping"}]},
        {"status": 429},
        {"status": 503, "headers": {"retry-after": "1"}, "comment": "busy"},
        {"hang": True},
        {"reset": True},
        {"model_error": "boom"},
        {"events": [{"type": "ping"}], "delay": 0.5, "cut_after": 1, "then_hang": True},
    ],
)
def test_the_fakes_read_an_exchange_as_iaccode_does(exchange: dict[str, Any]) -> None:
    """The fakes (acp_conformance) and iac-code's script loader read one format: the same
    defaults (the fakes also make a status answer's body), so a script plays the same against
    either."""
    expected = validate_exchange(exchange)
    if "status" in exchange:
        expected.setdefault("body", error_body(exchange["status"]))
    assert read_exchange(exchange) == expected


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"hang": True, "reset": True},
        {"hang": False},
        {"reset": 1},
        {"status": 200},
        {"events": {}},
        {"events": [1]},
        {"events": [], "delay": -1},
        {"events": [{"type": "ping"}], "cut_after": 2},
    ],
)
def test_the_fakes_refuse_what_iaccode_refuses(bad: dict[str, Any]) -> None:
    with pytest.raises(ScriptError):
        validate_exchange(bad)
    with pytest.raises(builders.ScriptError):
        read_exchange(bad)
