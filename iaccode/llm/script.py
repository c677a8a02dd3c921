"""Model scripts: canned Anthropic Messages API answers, played one per model request.

A *model script* is a JSON-serialisable list of *exchanges*. Each model request made
against a scripted model (for instance the fake server in ``tests/fakes/model_server.py``)
consumes the next exchange, in order. An exchange is a JSON object of exactly one of
these four forms:

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
    sent as given, names and values strings. ``body`` (optional) defaults to the API's
    error shape ``{"type": "error", "error": {"type": ..., "message": ...}}`` with the
    error type that matches the status (see :func:`error_body`).

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

Builders make the common exchanges:

    reply(text, *, thinking, tool_uses, stop_reason, ...)   a streamed assistant message
    stream_error(text_before, error_type, message)          text, then an ``error`` event
    error_status(status, message, retry_after)              a non-200 JSON error answer
    hang(), reset()

and :func:`load_script`, :func:`validate_script` and :func:`dump_script` read, check and
write scripts; malformed scripts raise :class:`ScriptError` naming the exchange index.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "SCRIPT_VERSION",
    "Exchange",
    "ExchangeKind",
    "ScriptError",
    "ToolUse",
    "dump_script",
    "error_body",
    "error_status",
    "error_type_for_status",
    "exchange_kind",
    "hang",
    "load_script",
    "reply",
    "reset",
    "stream_error",
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

_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_DEFAULT_MESSAGES: dict[str, str] = {
    "invalid_request_error": "Invalid request",
    "authentication_error": "invalid x-api-key",
    "billing_error": "Billing error",
    "permission_error": "Permission denied",
    "not_found_error": "Not found",
    "request_too_large": "Request exceeds the maximum allowed number of bytes",
    "rate_limit_error": "Rate limited",
    "api_error": "Internal server error",
    "timeout_error": "Request timed out",
    "overloaded_error": "Overloaded",
}


class ScriptError(ValueError):
    """A model script (or one exchange of it) is malformed."""


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` content block for :func:`reply`."""

    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Builders


def reply(
    text: str | list[str] = "",
    *,
    thinking: str | list[str] | None = None,
    tool_uses: Sequence[ToolUse] | None = None,
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read_input_tokens: int | None = None,
    cache_creation_input_tokens: int | None = None,
    model: str = "claude-sonnet-4-5",
    message_id: str | None = None,
    signature: str = "fake-signature",
    delay: float = 0.0,
    cut_after: int | None = None,
) -> Exchange:
    """A streamed assistant message.

    Content blocks come in this order: a thinking block (when ``thinking`` is given; its
    ``signature_delta`` comes just before its stop), a text block (when ``text`` is not
    empty), then one ``tool_use`` block per entry of ``tool_uses``, whose input is
    streamed as 2-3 ``input_json_delta`` chunks. A list for ``text`` or ``thinking``
    means one delta per item, in order; a string is a single delta.

    ``stop_reason`` defaults to ``"tool_use"`` when there are tool uses, else
    ``"end_turn"``. Usage is reported in ``message_start`` (input and cache tokens, one
    output token) and as cumulative totals in ``message_delta``, like the real API.
    """
    tools = list(tool_uses or [])
    if stop_reason is None:
        stop_reason = "tool_use" if tools else "end_turn"
    usage: dict[str, Any] = {"input_tokens": input_tokens}
    if cache_creation_input_tokens is not None:
        usage["cache_creation_input_tokens"] = cache_creation_input_tokens
    if cache_read_input_tokens is not None:
        usage["cache_read_input_tokens"] = cache_read_input_tokens

    events: list[dict[str, Any]] = [_message_start(model, message_id, usage)]
    index = 0
    thinking_chunks = _chunks(thinking)
    if thinking is not None:
        events.append(_block_start(index, {"type": "thinking", "thinking": "", "signature": ""}))
        for chunk in thinking_chunks:
            events.append(_delta(index, {"type": "thinking_delta", "thinking": chunk}))
        events.append(_delta(index, {"type": "signature_delta", "signature": signature}))
        events.append(_block_stop(index))
        index += 1
    text_chunks = [chunk for chunk in _chunks(text) if chunk]
    if text_chunks:
        events.append(_block_start(index, {"type": "text", "text": ""}))
        for chunk in text_chunks:
            events.append(_delta(index, {"type": "text_delta", "text": chunk}))
        events.append(_block_stop(index))
        index += 1
    for tool in tools:
        block = {"type": "tool_use", "id": tool.id, "name": tool.name, "input": {}}
        events.append(_block_start(index, block))
        for piece in _split_json(json.dumps(tool.input)):
            events.append(_delta(index, {"type": "input_json_delta", "partial_json": piece}))
        events.append(_block_stop(index))
        index += 1
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {**usage, "output_tokens": output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return _checked({"events": events, "delay": delay, "cut_after": cut_after})


def stream_error(
    text_before: str = "",
    error_type: str = "overloaded_error",
    message: str = "Overloaded",
    *,
    model: str = "claude-sonnet-4-5",
    message_id: str | None = None,
    delay: float = 0.0,
) -> Exchange:
    """A 200 stream that starts a message, sends ``text_before`` (if any) as one text
    delta, then an ``error`` event (``{"type": "error", "error": {...}}``), and ends."""
    events: list[dict[str, Any]] = [_message_start(model, message_id, {"input_tokens": 10})]
    if text_before:
        events.append(_block_start(0, {"type": "text", "text": ""}))
        events.append(_delta(0, {"type": "text_delta", "text": text_before}))
    events.append({"type": "error", "error": {"type": error_type, "message": message}})
    return _checked({"events": events, "delay": delay, "cut_after": None})


def error_status(
    status: int,
    message: str | None = None,
    retry_after: float | None = None,
    *,
    error_type: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Exchange:
    """A non-200 answer with the API's JSON error body (see :func:`error_body`).

    ``retry_after`` (seconds) becomes a ``retry-after`` header; ``headers`` are added
    as given (for instance ``{"x-should-retry": "false"}``).
    """
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = _format_seconds(retry_after)
    body = error_body(status, message, error_type=error_type)
    return _checked({"status": status, "headers": all_headers, "body": body})


def hang() -> Exchange:
    """Accept the request and never answer it."""
    return {"hang": True}


def reset() -> Exchange:
    """Close the connection before sending any response header."""
    return {"reset": True}


def error_type_for_status(status: int) -> str:
    """The API error ``type`` that goes with an HTTP status."""
    if status in _ERROR_TYPES:
        return _ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def error_body(
    status: int, message: str | None = None, *, error_type: str | None = None
) -> dict[str, Any]:
    """The API's error body, ``{"type": "error", "error": {"type": ..., "message": ...}}``."""
    kind = error_type or error_type_for_status(status)
    text = message if message is not None else _DEFAULT_MESSAGES.get(kind, f"HTTP {status}")
    return {"type": "error", "error": {"type": kind, "message": text}}


# ---------------------------------------------------------------------------------------
# Reading, checking and writing


def exchange_kind(exchange: Mapping[str, Any]) -> ExchangeKind:
    """Which of the four forms an exchange has (it must already be valid)."""
    for kind in _KINDS:
        if kind in exchange:
            return kind
    raise ScriptError("exchange has none of the keys " + ", ".join(repr(k) for k in _KINDS))


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
        body = obj["body"] if "body" in obj else error_body(status)
        out.update(status=status, headers=dict(headers), body=body)
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


def _checked(exchange: Exchange) -> Exchange:
    try:
        return validate_exchange(exchange)
    except ScriptError as exc:
        raise ScriptError(str(exc).removeprefix("exchange 0: ")) from None


def _message_start(model: str, message_id: str | None, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id or f"msg_fake_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        },
    }


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def _chunks(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return list(value)


def _split_json(text: str) -> list[str]:
    """Split ``text`` into 2-3 consecutive non-empty pieces (1 if it is too short)."""
    if len(text) < 2:
        return [text]
    size = -(-len(text) // min(3, len(text)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


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
