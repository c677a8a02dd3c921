"""Checks of parsed JSON and TOML data, with messages a person can act on.

Messages from the editor are structured by the strict converter (:mod:`iaccode.protocol.convert`).
Files a person writes or a crash may damage (config.toml, a session's ``meta.json``, a model
script) are checked here instead, field by field, so each error names the one place to fix:

    >>> integer(-1, "config.toml: max_tokens", minimum=0)
    Traceback (most recent call last):
    iaccode.checks.Invalid: config.toml: max_tokens must be a non-negative integer, got -1

Every ``check(value, where, ...)`` returns the value (typed) when it fits and raises
:class:`Invalid` ("``<where> must be <what>, got <what it is>``") when it does not: a value of
the wrong type is named by its type (``got a string``), a value of the right type by itself
(``got -1``). ``toml=True`` names types as TOML does (a table, a float, a date or time).
Stdlib only, and cheap to import: the server imports it at start-up.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any, TypeGuard, TypeVar

T = TypeVar("T")

_JSON_NAMES: dict[type, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
    type(None): "null",
}
_TOML_NAMES = {**_JSON_NAMES, float: "a float", dict: "a table"}


class Invalid(ValueError):
    """A value that does not fit; the message says where, what it must be, and what it is."""


def type_name(value: object, *, toml: bool = False) -> str:
    """How a parsed value's type is named to a person: ``"an integer"``, ``"null"``, ...
    (with ``toml``, ``"a table"``, ``"a float"``, ``"a date or time"``)."""
    names = _TOML_NAMES if toml else _JSON_NAMES
    for kind, name in names.items():  # bool before int: True is an int to Python
        if isinstance(value, kind):
            return name
    if isinstance(value, datetime.date | datetime.time):
        return "a date or time"
    return type(value).__name__


def is_int(value: object) -> TypeGuard[int]:
    """An integer, and not a boolean (which Python counts as one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """An integer or a float, not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def fail(where: str, what: str, got: str) -> Invalid:
    """The error for ``where`` (raise it): ``<where> must be <what>, got <got>``."""
    return Invalid(f"{where} must be {what}, got {got}")


def string(value: object, where: str, *, nonempty: bool = False, toml: bool = False) -> str:
    if not isinstance(value, str):
        raise fail(where, "a string", type_name(value, toml=toml))
    if nonempty and not value:
        raise fail(where, "a non-empty string", "an empty one")
    return value


def optional_string(value: object, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise fail(where, "a string or null", type_name(value))
    return value


def boolean(value: object, where: str, *, toml: bool = False) -> bool:
    if not isinstance(value, bool):
        raise fail(where, "a boolean", type_name(value, toml=toml))
    return value


def integer(
    value: object,
    where: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    toml: bool = False,
) -> int:
    """An integer (not a boolean), within ``minimum`` and ``maximum`` when they are given."""
    if minimum is not None and maximum is not None:
        what = f"an integer from {minimum} to {maximum}"
    elif minimum == 0:
        what = "a non-negative integer"
    elif minimum is not None:
        what = f"an integer of at least {minimum}"
    elif maximum is not None:
        what = f"an integer of at most {maximum}"
    else:
        what = "an integer"
    if not is_int(value):
        raise fail(where, what, type_name(value, toml=toml))
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise fail(where, what, repr(value))
    return value


def number(value: object, where: str, *, minimum: float | None = None, toml: bool = False) -> float:
    """A finite number (an integer counts), at least ``minimum`` when given; as a float."""
    if not is_number(value):
        raise fail(where, "a number", type_name(value, toml=toml))
    if not math.isfinite(value):
        raise fail(where, "a finite number", repr(value))
    if minimum is not None and value < minimum:
        what = "a non-negative number" if minimum == 0 else f"a number of at least {minimum:g}"
        raise fail(where, what, repr(value))
    return float(value)


def table(value: object, where: str, *, toml: bool = False) -> dict[str, Any]:
    """A JSON object (a TOML table)."""
    if not isinstance(value, dict):
        kind = "a table" if toml else "an object"
        raise fail(where, kind, type_name(value, toml=toml))
    return value


def array(value: object, where: str, *, toml: bool = False) -> list[Any]:
    if not isinstance(value, list):
        raise fail(where, "an array", type_name(value, toml=toml))
    return value


def strings(value: object, where: str) -> list[str]:
    """An array of strings (the value itself is shown when it is not one)."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise fail(where, "an array of strings", repr(value))
    return list(value)


def table_of(
    value: object, where: str, check: Callable[[object, str], T], what: str
) -> dict[str, T]:
    """An object whose every value passes ``check`` (``what`` says what the object must be:
    ``"an object of booleans"``); the value itself is shown when it is not one."""
    if not isinstance(value, dict):
        raise fail(where, what, type_name(value))
    checked: dict[str, T] = {}
    for key, item in value.items():
        try:
            checked[key] = check(item, f"{where}.{key}")
        except Invalid:
            raise fail(where, what, repr(value)) from None
    return checked


def deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON data nests arrays and objects more than ``limit`` levels deep.

    Iterative, so an absurdly deep value cannot exhaust the stack while it is measured: check
    data from outside (request params, a model's tool input) before anything recurses into it.
    """
    level = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return True
