"""Model scripts: canned Anthropic Messages API answers, played one per model request.

A *model script* is a JSON-serialisable list of *exchanges*. Each model request made
against a scripted model (``iaccode acp --model-script``, or the fake model APIs of the
conformance package, ``acp_conformance.fakes``) consumes the next exchange, in order. An
exchange is a JSON object of exactly one of these four forms:

``{"events": [...], "delay": 0.0, "cut_after": null}``
    A ``200`` streaming answer (``Content-Type: text/event-stream``). ``events`` are the
    exact JSON objects of the Messages streaming API, each sent as
    ``event: <type>\\ndata: <json>\\n\\n``: ``message_start``, ``content_block_start``,
    ``content_block_delta`` (``text_delta``, ``thinking_delta``, ``signature_delta``,
    ``input_json_delta``), ``content_block_stop``, ``message_delta``, ``message_stop``,
    ``ping`` and ``error``. Every event needs a string ``"type"``; other event types are
    passed through untouched. ``delay`` (optional, default ``0``) is the number of
    seconds to wait before each event. ``cut_after`` (optional, default ``null``): when
    an integer N (``0 <= N <= len(events)``), only the first N events are sent and then
    the connection is dropped without ending the response body, as a stream broken
    midway.

``{"status": 429, "headers": {"retry-after": "1"}, "body": {...}}``
    A non-``200`` answer (status 400-599) with a JSON body. ``headers`` (optional) are
    sent as given, names and values strings. ``body`` (optional): without one, a server
    playing the script answers the API's error shape for the status, and the offline
    provider reports just the status.

``{"hang": true}``
    The request is accepted and never answered, until the client goes away or the
    server stops.

``{"reset": true}``
    The connection is closed (reset) before any response header is sent.

Two forms exist for replaying recorded transcripts (``iaccode.transcript``):
``"then_hang": true`` on an events exchange plays the events and then waits forever (a
stream the user cancelled midway), and ``{"model_error": "message"}`` fails the request with
exactly that message (the fake server answers it as a 500).

Any exchange may also carry a free-text ``"comment"``; other keys are errors, so that
typos are caught. A script *file* is JSON, either the bare list of exchanges or the
object ``{"version": 1, "exchanges": [...]}`` (:func:`dump_script` writes the latter).

:func:`load_script`, :func:`validate_script` and :func:`dump_script` read, check and write
scripts; malformed scripts raise :class:`ScriptError` naming the exchange index. Builders
of the common exchanges (``reply``, ``stream_error``, ``error_status``, ``hang``,
``reset``) are the test harness's: ``acp_conformance.script``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

__all__ = [
    "SCRIPT_VERSION",
    "Exchange",
    "ExchangeKind",
    "ScriptError",
    "dump_script",
    "load_script",
    "validate_exchange",
    "validate_script",
]

SCRIPT_VERSION = 1

Exchange = dict[str, Any]
"""One scripted answer: a JSON object in one of the four forms of the module docstring."""

ExchangeKind = Literal["events", "status", "hang", "reset", "model_error"]

_KINDS: tuple[ExchangeKind, ...] = ("events", "status", "hang", "reset", "model_error")
_ALLOWED_KEYS: dict[ExchangeKind, frozenset[str]] = {
    "events": frozenset({"events", "delay", "cut_after", "then_hang", "comment"}),
    "status": frozenset({"status", "headers", "body", "comment"}),
    "hang": frozenset({"hang", "comment"}),
    "reset": frozenset({"reset", "comment"}),
    "model_error": frozenset({"model_error", "comment"}),
}


class ScriptError(ValueError):
    """A model script (or one exchange of it) is malformed."""


# ---------------------------------------------------------------------------------------
# Reading, checking and writing


def validate_exchange(obj: object, index: int = 0) -> Exchange:
    """Check one exchange; return a copy with the optional fields filled in.

    Raises :class:`ScriptError` whose message starts with ``exchange <index>:``.
    """
    where = f"exchange {index}"
    if not isinstance(obj, dict):
        raise ScriptError(f"{where}: must be an object, not {_json_type(obj)}")
    kinds = [kind for kind in _KINDS if kind in obj]
    if len(kinds) != 1:
        found = ", ".join(repr(k) for k in kinds) or "none"
        raise ScriptError(
            f"{where}: must have exactly one of {', '.join(repr(k) for k in _KINDS)} "
            f"(found {found})"
        )
    kind = kinds[0]
    unknown = sorted(str(key) for key in obj if key not in _ALLOWED_KEYS[kind])
    if unknown:
        raise ScriptError(f"{where}: unknown key(s) for a {kind!r} exchange: {', '.join(unknown)}")
    if "comment" in obj and not isinstance(obj["comment"], str):
        raise ScriptError(f"{where}: 'comment' must be a string")

    out: Exchange = {}
    if "comment" in obj:
        out["comment"] = obj["comment"]
    if kind == "events":
        events = obj["events"]
        if not isinstance(events, list):
            raise ScriptError(f"{where}: 'events' must be a list, not {_json_type(events)}")
        for number, event in enumerate(events):
            if not isinstance(event, dict):
                raise ScriptError(
                    f"{where}: events[{number}] must be an object, not {_json_type(event)}"
                )
            if not isinstance(event.get("type"), str) or not event["type"]:
                raise ScriptError(f"{where}: events[{number}] needs a string 'type'")
        delay = obj.get("delay", 0.0)
        if delay is None:
            delay = 0.0
        if (
            isinstance(delay, bool)
            or not isinstance(delay, int | float)
            or not math.isfinite(delay)
            or delay < 0
        ):
            raise ScriptError(f"{where}: 'delay' must be a non-negative number, not {delay!r}")
        cut_after = obj.get("cut_after")
        if cut_after is not None and (
            isinstance(cut_after, bool)
            or not isinstance(cut_after, int)
            or not 0 <= cut_after <= len(events)
        ):
            raise ScriptError(
                f"{where}: 'cut_after' must be null or an integer from 0 to {len(events)}, "
                f"not {cut_after!r}"
            )
        out.update(events=[dict(event) for event in events], delay=delay, cut_after=cut_after)
        if obj.get("then_hang"):
            out["then_hang"] = True
    elif kind == "status":
        status = obj["status"]
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise ScriptError(
                f"{where}: 'status' must be an integer from 400 to 599, not {status!r}"
            )
        headers = obj.get("headers") or {}
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise ScriptError(f"{where}: 'headers' must be an object of strings")
        out.update(status=status, headers=dict(headers))
        if "body" in obj:
            out["body"] = obj["body"]
    elif kind == "model_error":
        if not isinstance(obj[kind], str):
            raise ScriptError(f"{where}: 'model_error' must be a string")
        out[kind] = obj[kind]
    else:
        if obj[kind] is not True:
            raise ScriptError(f"{where}: {kind!r} must be true, not {obj[kind]!r}")
        out[kind] = True
    return out


def validate_script(obj: object) -> list[Exchange]:
    """Check a script, either a list of exchanges or ``{"version": 1, "exchanges": [...]}``.

    Returns the exchanges, copied, with their optional fields filled in. Raises
    :class:`ScriptError` naming the index of the first bad exchange.
    """
    if isinstance(obj, dict):
        unknown = sorted(str(key) for key in obj if key not in ("version", "exchanges"))
        if unknown:
            raise ScriptError(f"script: unknown key(s): {', '.join(unknown)}")
        version = obj.get("version")
        if version != SCRIPT_VERSION or isinstance(version, bool):
            raise ScriptError(f"script: 'version' must be {SCRIPT_VERSION}, not {version!r}")
        if "exchanges" not in obj:
            raise ScriptError("script: missing 'exchanges'")
        obj = obj["exchanges"]
    if not isinstance(obj, list):
        raise ScriptError(
            f"script: must be a list of exchanges or an object with 'exchanges', "
            f"not {_json_type(obj)}"
        )
    return [validate_exchange(item, index) for index, item in enumerate(obj)]


def load_script(path: str | os.PathLike[str]) -> list[Exchange]:
    """Read and check a script file (JSON, either form)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{os.fspath(path)}: not valid JSON: {exc}") from exc
    try:
        return validate_script(data)
    except ScriptError as exc:
        raise ScriptError(f"{os.fspath(path)}: {exc}") from exc


def dump_script(exchanges: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Check ``exchanges`` and write them as ``{"version": 1, "exchanges": [...]}``."""
    checked = validate_script([dict(exchange) for exchange in exchanges])
    text = json.dumps({"version": SCRIPT_VERSION, "exchanges": checked}, indent=2)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


# ---------------------------------------------------------------------------------------
# Helpers


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
