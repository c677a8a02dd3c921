"""The checks of parsed JSON/TOML data (iaccode/checks.py): the messages a user reads."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from iaccode import checks


@pytest.mark.parametrize(
    ("value", "json_name", "toml_name"),
    [
        (True, "a boolean", "a boolean"),
        (3, "an integer", "an integer"),
        (1.5, "a number", "a float"),
        ("x", "a string", "a string"),
        ([1], "an array", "an array"),
        ({}, "an object", "a table"),
        (None, "null", "null"),
        (datetime.date(1979, 5, 27), "a date or time", "a date or time"),
    ],
)
def test_type_names(value: object, json_name: str, toml_name: str) -> None:
    assert checks.type_name(value) == json_name
    assert checks.type_name(value, toml=True) == toml_name


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: checks.string(5, "model"), "model must be a string, got an integer"),
        (
            lambda: checks.string("", "url", nonempty=True),
            "url must be a non-empty string, got an empty one",
        ),
        (
            lambda: checks.optional_string(3, "title"),
            "title must be a string or null, got an integer",
        ),
        (lambda: checks.boolean(1, "hang"), "hang must be a boolean, got an integer"),
        (lambda: checks.integer(True, "count"), "count must be an integer, got a boolean"),
        (lambda: checks.integer(1.5, "n", toml=True), "n must be an integer, got a float"),
        (
            lambda: checks.integer(-1, "message_count", minimum=0),
            "message_count must be a non-negative integer, got -1",
        ),
        (
            lambda: checks.integer(600, "status", minimum=400, maximum=599),
            "status must be an integer from 400 to 599, got 600",
        ),
        (lambda: checks.integer(0, "n", minimum=1), "n must be an integer of at least 1, got 0"),
        (lambda: checks.number("2m", "timeout"), "timeout must be a number, got a string"),
        (lambda: checks.number(float("nan"), "t"), "t must be a finite number, got nan"),
        (
            lambda: checks.number(-0.5, "delay", minimum=0),
            "delay must be a non-negative number, got -0.5",
        ),
        (lambda: checks.table(3, "tools", toml=True), "tools must be a table, got an integer"),
        (lambda: checks.table([], "exchange 0"), "exchange 0 must be an object, got an array"),
        (lambda: checks.array({}, "events"), "events must be an array, got an object"),
        (lambda: checks.strings([443], "hosts"), "hosts must be an array of strings, got [443]"),
        (
            lambda: checks.table_of(
                {"bash": "yes"}, "remembered", checks.boolean, "an object of booleans"
            ),
            "remembered must be an object of booleans, got {'bash': 'yes'}",
        ),
    ],
)
def test_a_bad_value_is_named_with_its_place(call: Any, message: str) -> None:
    with pytest.raises(checks.Invalid) as info:
        call()
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_good_values_come_back_typed() -> None:
    assert checks.number(3, "t") == 3.0 and isinstance(checks.number(3, "t"), float)
    assert checks.integer(5, "n", minimum=0, maximum=5) == 5
    assert checks.optional_string(None, "title") is None
    assert checks.strings(("a", "b"), "models") == ["a", "b"]
    assert checks.table_of({"a": True}, "r", checks.boolean, "x") == {"a": True}
    assert checks.is_int(2) and not checks.is_int(True) and not checks.is_int(2.0)
    assert checks.is_number(2.5) and not checks.is_number(False)


def test_depth_is_measured_without_recursion() -> None:
    assert not checks.deeper_than({"a": [1, {"b": 2}]}, 3)
    assert checks.deeper_than({"a": [1, {"b": [2]}]}, 3)
    assert not checks.deeper_than("text", 0)
    deep: Any = []
    for _ in range(100_000):  # far beyond the interpreter's recursion limit
        deep = [deep]
    assert checks.deeper_than(deep, 64)
    assert not checks.deeper_than(json.loads("[" * 64 + "]" * 64), 64)


def test_a_corrupt_meta_json_says_what_is_wrong() -> None:
    from iaccode.store.meta import SessionMeta, StoreError, new_session_id, utc_now

    sid = new_session_id()
    good = SessionMeta(sid, "/p", utc_now(), utc_now(), "m", "default").to_json()
    changes: list[tuple[dict[str, Any], str]] = [
        ({"title": 3}, "title must be a string or null, got an integer"),
        ({"cwd": None}, "cwd must be a string, got null"),
        ({"message_count": -1}, "message_count must be a non-negative integer, got -1"),
        (
            {"remembered": {"bash": "yes"}},
            "remembered must be an object of true/false answers, got {'bash': 'yes'}",
        ),
        ({"updated_at": 5}, "updated_at must be a string, got an integer"),
    ]
    for change, message in changes:
        with pytest.raises(StoreError) as info:
            SessionMeta.from_json({**good, **change})
        assert str(info.value) == f"session {sid}: invalid meta.json: {message}"
