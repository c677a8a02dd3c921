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
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from iaccode import checks

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
    """A model script (or one exchange of it) is malformed; the message names the place
    (``exchange 2: 'delay' must be a non-negative number, got -1``: :mod:`iaccode.checks`)."""


# ---------------------------------------------------------------------------------------
# Reading, checking and writing


def validate_exchange(obj: object, index: int = 0) -> Exchange:
    """Check one exchange; return a copy with the optional fields filled in.

    Raises :class:`ScriptError` whose message starts with ``exchange <index>:``.
    """
    try:
        return _checked_exchange(obj, f"exchange {index}:")
    except checks.Invalid as exc:
        raise ScriptError(str(exc)) from None


def _checked_exchange(obj: object, where: str) -> Exchange:
    exchange = checks.table(obj, where)
    kinds = [kind for kind in _KINDS if kind in exchange]
    if len(kinds) != 1:
        raise checks.Invalid(
            f"{where} must have exactly one of "
            f"{', '.join(repr(k) for k in _KINDS)} "
            f"(found {', '.join(repr(k) for k in kinds) or 'none'})"
        )
    kind = kinds[0]
    unknown = sorted(str(key) for key in exchange if key not in _ALLOWED_KEYS[kind])
    if unknown:
        raise checks.Invalid(
            f"{where} unknown key(s) for a {kind!r} exchange: {', '.join(unknown)}"
        )
    out: Exchange = {}
    if "comment" in exchange:
        out["comment"] = checks.string(exchange["comment"], f"{where} 'comment'")
    if kind == "events":
        events = checks.array(exchange["events"], f"{where} 'events'")
        for number, event in enumerate(events):
            checks.table(event, f"{where} events[{number}]")
            checks.string(event.get("type"), f"{where} events[{number}].type", nonempty=True)
        delay = exchange.get("delay")
        delay = 0.0 if delay is None else checks.number(delay, f"{where} 'delay'", minimum=0)
        cut_after = exchange.get("cut_after")
        if cut_after is not None and not (
            checks.is_int(cut_after) and 0 <= cut_after <= len(events)
        ):
            raise checks.fail(
                f"{where} 'cut_after'",
                f"null or an integer from 0 to {len(events)}",
                repr(cut_after),
            )
        out.update(events=[dict(event) for event in events], delay=delay, cut_after=cut_after)
        if exchange.get("then_hang"):
            out["then_hang"] = True
    elif kind == "status":
        status = checks.integer(exchange["status"], f"{where} 'status'", minimum=400, maximum=599)
        headers = checks.table_of(
            exchange.get("headers") or {},
            f"{where} 'headers'",
            checks.string,
            "an object of strings",
        )
        out.update(status=status, headers=headers)
        if "body" in exchange:
            out["body"] = exchange["body"]
    elif kind == "model_error":
        out[kind] = checks.string(exchange[kind], f"{where} 'model_error'")
    else:
        if exchange[kind] is not True:
            raise checks.fail(f"{where} {kind!r}", "true", repr(exchange[kind]))
        out[kind] = True
    return out


def validate_script(obj: object) -> list[Exchange]:
    """Check a script, either a list of exchanges or ``{"version": 1, "exchanges": [...]}``.

    Returns the exchanges, copied, with their optional fields filled in. Raises
    :class:`ScriptError` naming the index of the first bad exchange.
    """
    try:
        if isinstance(obj, dict):
            unknown = sorted(str(key) for key in obj if key not in ("version", "exchanges"))
            if unknown:
                raise checks.Invalid(f"script: unknown key(s): {', '.join(unknown)}")
            version = obj.get("version")
            if version != SCRIPT_VERSION or isinstance(version, bool):
                raise checks.fail("script: 'version'", str(SCRIPT_VERSION), repr(version))
            if "exchanges" not in obj:
                raise checks.Invalid("script: missing 'exchanges'")
            obj = obj["exchanges"]
        if not isinstance(obj, list):
            raise checks.fail(
                "script", "a list of exchanges or an object with 'exchanges'", checks.type_name(obj)
            )
    except checks.Invalid as exc:
        raise ScriptError(str(exc)) from None
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
