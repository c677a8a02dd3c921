"""Model scripts for the fake model APIs: builders of exchanges, and the fakes' reading of them.

A *model script* is a JSON list of *exchanges*, one played per model request, in order (or
``{"version": 1, "exchanges": [...]}``); the fakes in :mod:`acp_conformance.fakes` serve it
over HTTP, and an agent may play the same files offline. An exchange has exactly one of:

``{"events": [...], "delay": 0.0, "cut_after": null}``
    a 200 stream of Messages API events (``delay`` seconds before each; ``cut_after`` N:
    only N events, then the connection drops midway); ``"then_hang": true`` waits forever
    after the events;
``{"status": 429, "headers": {...}, "body": {...}}``
    a non-200 JSON answer (``body`` defaults to the API's error shape for the status);
``{"hang": true}``, ``{"reset": true}``
    never answered; the connection reset before any header;
``{"model_error": "message"}``
    a 500 with exactly that message;

and may carry a free-text ``"comment"``. Builders make the common exchanges:

    reply(text, *, thinking, tool_uses, stop_reason, ...)   a streamed assistant message
    stream_error(text_before, error_type, message)          text, then an ``error`` event
    error_status(status, message, retry_after)              a non-200 JSON error answer
    hang(), reset()

:func:`read_exchange` is how a fake takes an exchange (its kind known, defaults filled, a
malformed one refused with :class:`ScriptError`), :func:`load_script` how it reads a file.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Exchange = dict[str, Any]
"""One scripted answer (see the module docstring)."""

ExchangeKind = Literal["events", "status", "hang", "reset", "model_error"]

KINDS: tuple[ExchangeKind, ...] = ("events", "status", "hang", "reset", "model_error")

ERROR_TYPES: dict[int, str] = {
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
"""HTTP status -> the Messages API's error ``type`` (the fakes answer with these)."""

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
    _check_timing(delay, cut_after, len(events))
    return {"events": events, "delay": delay, "cut_after": cut_after}


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
    _check_timing(delay, None, len(events))
    return {"events": events, "delay": delay, "cut_after": None}


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
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ScriptError(f"'status' must be an integer from 400 to 599, not {status!r}")
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = _format_seconds(retry_after)
    body = error_body(status, message, error_type=error_type)
    return {"status": status, "headers": all_headers, "body": body}


def hang() -> Exchange:
    """Accept the request and never answer it."""
    return {"hang": True}


def reset() -> Exchange:
    """Close the connection before sending any response header."""
    return {"reset": True}


def error_type_for_status(status: int) -> str:
    """The API error ``type`` that goes with an HTTP status."""
    if status in ERROR_TYPES:
        return ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def error_body(
    status: int, message: str | None = None, *, error_type: str | None = None
) -> dict[str, Any]:
    """The API's error body, ``{"type": "error", "error": {"type": ..., "message": ...}}``."""
    kind = error_type or error_type_for_status(status)
    text = message if message is not None else _DEFAULT_MESSAGES.get(kind, f"HTTP {status}")
    return {"type": "error", "error": {"type": kind, "message": text}}


# ---------------------------------------------------------------------------------------
# How a fake takes an exchange


def exchange_kind(exchange: Mapping[str, Any]) -> ExchangeKind:
    """Which form an exchange has (it must already be read)."""
    for kind in KINDS:
        if kind in exchange:
            return kind
    raise ScriptError("exchange has none of the keys " + ", ".join(repr(k) for k in KINDS))


def read_exchange(obj: object, index: int = 0) -> Exchange:
    """An exchange as a fake serves it: a copy with the defaults filled in (a status
    exchange's body: the API's error shape). Raises :class:`ScriptError` (``exchange <index>:
    ...``) for what a fake cannot serve: not exactly one known form, an ``events`` that is not
    a list of typed events, a bad ``delay`` or ``cut_after``, a status outside 400-599,
    ``hang``/``reset`` not true. Other keys are left alone: checking script files in full is
    the job of the program that reads them."""
    where = f"exchange {index}"
    if not isinstance(obj, dict):
        raise ScriptError(f"{where}: must be an object")
    kinds = [kind for kind in KINDS if kind in obj]
    if len(kinds) != 1:
        raise ScriptError(f"{where}: must have exactly one of {', '.join(map(repr, KINDS))}")
    kind = kinds[0]
    out: Exchange = dict(obj)
    if kind == "events":
        events = obj["events"]
        if not isinstance(events, list) or not all(
            isinstance(e, dict) and isinstance(e.get("type"), str) for e in events
        ):
            raise ScriptError(f"{where}: 'events' must be a list of objects with a 'type'")
        try:
            _check_timing(obj.get("delay") or 0.0, obj.get("cut_after"), len(events))
        except ScriptError as exc:
            raise ScriptError(f"{where}: {exc}") from None
        out.update(
            events=[dict(e) for e in events],
            delay=obj.get("delay") or 0.0,
            cut_after=obj.get("cut_after"),
        )
    elif kind == "status":
        status = obj["status"]
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise ScriptError(f"{where}: 'status' must be an integer from 400 to 599")
        out.update(
            headers=dict(obj.get("headers") or {}),
            body=obj["body"] if "body" in obj else error_body(status),
        )
    elif kind in ("hang", "reset") and obj[kind] is not True:
        raise ScriptError(f"{where}: {kind!r} must be true, not {obj[kind]!r}")
    return out


def load_script(path: str | os.PathLike[str]) -> list[Exchange]:
    """Read a script file: a JSON list of exchanges or ``{"version": 1, "exchanges": [...]}``."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except ValueError as exc:
        raise ScriptError(f"{os.fspath(path)}: not valid JSON: {exc}") from exc
    exchanges = data.get("exchanges") if isinstance(data, dict) else data
    if not isinstance(exchanges, list):
        raise ScriptError(f"{os.fspath(path)}: not a list of exchanges")
    try:
        return [read_exchange(item, number) for number, item in enumerate(exchanges)]
    except ScriptError as exc:
        raise ScriptError(f"{os.fspath(path)}: {exc}") from exc


# ---------------------------------------------------------------------------------------
# Helpers


def _check_timing(delay: object, cut_after: object, events: int) -> None:
    if (
        isinstance(delay, bool)
        or not isinstance(delay, int | float)
        or not math.isfinite(delay)
        or delay < 0
    ):
        raise ScriptError(f"'delay' must be a non-negative number, not {delay!r}")
    if cut_after is not None and (
        isinstance(cut_after, bool)
        or not isinstance(cut_after, int)
        or not 0 <= cut_after <= events
    ):
        raise ScriptError(
            f"'cut_after' must be null or an integer from 0 to {events}, not {cut_after!r}"
        )


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
