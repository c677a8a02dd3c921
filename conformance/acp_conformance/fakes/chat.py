"""A fake OpenAI Chat Completions API: the fake Messages API's server, speaking the other API.

It plays the same model scripts (:mod:`acp_conformance.script`: ``reply(...)``, ``error_status``,
``hang``, ``reset``, ``cut_after``, ``delay``), so one test plan drives either provider; each
scripted Anthropic event becomes the Chat Completions chunks the real API would send for it:

- text deltas -> ``delta.content``; thinking deltas -> ``delta.reasoning_content`` (as DeepSeek
  and DashScope stream it); a ``tool_use`` block -> a ``delta.tool_calls`` entry (its own
  ``index``, id and name first, then the arguments in the scripted pieces);
- the stop reason -> ``finish_reason`` (end_turn -> stop, max_tokens -> length, tool_use ->
  tool_calls, refusal -> content_filter);
- usage -> a last chunk with no choices, only when the request asked for it
  (``stream_options.include_usage``, as the real API): prompt tokens include the cached ones,
  ``prompt_tokens_details.cached_tokens``; a non-Anthropic ``reasoning_tokens`` in the scripted
  usage becomes ``completion_tokens_details.reasoning_tokens``;
- an ``error`` event -> a ``data: {"error": {...}}`` chunk; a scripted event
  ``{"type": "chat.chunk", "chunk": {...}}`` is sent as that chunk, untouched (for shapes the
  translation cannot make); the stream ends with ``data: [DONE]``.

Like the real API it is strict about the request, answering 400 with the API's message: the
route is ``POST /v1/chat/completions``; tools must be ``{"type": "function", "function":
{...}}``; messages need known roles; every assistant ``tool_calls`` entry must be answered by
a ``tool`` message right after it, and a ``tool`` message must answer such a call;
Anthropic-only fields and content blocks are refused.

    with FakeChatServer() as server:
        server.enqueue(reply(["Hel", "lo"]))
        client = openai.AsyncOpenAI(api_key="test", base_url=server.base_url)  # .../v1

As a program, like the Messages fake (``READY <base_url>`` on stdout, until SIGTERM):

    python -m acp_conformance.fakes.chat --script FILE [--port N] [--loop]
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any

from acp_conformance.fakes import messages
from acp_conformance.fakes.messages import FakeModelServer

CHAT_PATH = "/v1/chat/completions"

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "stop",
}

ROLES = {"system", "developer", "user", "assistant", "tool"}
ANTHROPIC_ONLY = ("system", "thinking", "output_config", "top_k", "anthropic_version")
USER_PARTS = {"text", "image_url", "input_audio", "file"}


class FakeChatServer(FakeModelServer):
    """A scripted Chat Completions API on ``127.0.0.1``; see the module docstring."""

    path = CHAT_PATH

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``base_url=`` or ``OPENAI_BASE_URL``."""
        return f"http://{self.host}:{self.port}/v1"

    def error_body(self, status: int, message: str) -> Any:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def refuse(self, body: dict[str, Any]) -> str | None:
        return refusal(body)

    def stream_frames(self, events: list[dict[str, Any]], body: dict[str, Any]) -> list[bytes]:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        encoder = _ChunkEncoder(str(body.get("model", "")), include_usage)
        return [
            b"".join(
                b"data: %s\n\n" % json.dumps(chunk).encode() for chunk in encoder.chunks(event)
            )
            for event in events
        ]

    def stream_tail(self, body: dict[str, Any]) -> bytes:
        return b"data: [DONE]\n\n"

    def fold(self, events: list[dict[str, Any]]) -> tuple[int, Any]:
        """Non-streamed: the chunks merged into one ``chat.completion``."""
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish, usage = None, None
        calls: dict[int, dict[str, Any]] = {}
        encoder = _ChunkEncoder("", include_usage=True)
        for event in events:
            for chunk in encoder.chunks(event):
                if "error" in chunk:
                    return 500, chunk
                usage = chunk.get("usage") or usage
                for choice in chunk["choices"]:
                    delta = choice["delta"]
                    if delta.get("content"):
                        message["content"] = (message["content"] or "") + delta["content"]
                    for call in delta.get("tool_calls") or []:
                        into = calls.setdefault(
                            call["index"],
                            {
                                "id": call.get("id"),
                                "type": "function",
                                "function": {"name": call["function"].get("name"), "arguments": ""},
                            },
                        )
                        into["function"]["arguments"] += call["function"].get("arguments", "")
                    finish = choice.get("finish_reason") or finish
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return 200, {
            "id": encoder.id,
            "object": "chat.completion",
            "created": encoder.created,
            "model": encoder.model,
            "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }


class _ChunkEncoder:
    """Scripted Anthropic events -> Chat Completions chunks, one stream's worth."""

    def __init__(self, model: str, include_usage: bool) -> None:
        self.id = f"chatcmpl-fake{uuid.uuid4().hex[:20]}"
        self.created = int(time.time())
        self.model = model
        self._include_usage = include_usage
        self._tool_index: dict[int, int] = {}
        """Anthropic block index -> tool call index."""
        self._usage: dict[str, Any] = {}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def chunks(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event["type"]
        if kind == "chat.chunk":
            return [event["chunk"]]
        if kind == "message_start":
            message = event.get("message") or {}
            self.model = self.model or str(message.get("model", ""))
            self._usage.update(message.get("usage") or {})
            return [self._chunk({"role": "assistant", "content": ""})]
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") != "tool_use":
                return []
            index = self._tool_index[event["index"]] = len(self._tool_index)
            return [
                self._chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": block["id"],
                                "type": "function",
                                "function": {"name": block["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            ]
        if kind == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                return [self._chunk({"content": delta["text"]})]
            if delta["type"] == "thinking_delta":
                return [self._chunk({"reasoning_content": delta["thinking"]})]
            if delta["type"] == "input_json_delta":
                return [
                    self._chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": self._tool_index[event["index"]],
                                    "function": {"arguments": delta["partial_json"]},
                                }
                            ]
                        }
                    )
                ]
            return []
        if kind == "message_delta":
            self._usage.update(event.get("usage") or {})
            stop = (event.get("delta") or {}).get("stop_reason") or "end_turn"
            return [self._chunk({}, FINISH_REASONS.get(stop, "stop"))]
        if kind == "message_stop":
            if not self._include_usage:
                return []
            return [
                {
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": self._usage_object(),
                }
            ]
        if kind == "error":
            error = event.get("error") or {}
            return [
                {
                    "error": {
                        "message": error.get("message", ""),
                        "type": error.get("type", "server_error"),
                        "code": None,
                    }
                }
            ]
        return []  # ping, content_block_stop, signature deltas: nothing on this API

    def _usage_object(self) -> dict[str, Any]:
        usage = self._usage
        cached = usage.get("cache_read_input_tokens") or 0
        prompt = (
            (usage.get("input_tokens") or 0)
            + cached
            + (usage.get("cache_creation_input_tokens") or 0)
        )
        completion = usage.get("output_tokens") or 0
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens") or 0},
        }


def refusal(body: dict[str, Any]) -> str | None:
    """The 400 message the real API gives this request (None: it accepts it)."""
    for key in ANTHROPIC_ONLY:
        if key in body:
            return f"Unrecognized request argument supplied: {key}"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1."
    if "stream_options" in body and body.get("stream") is not True:
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    for number, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict):
            return f"Missing required parameter: 'tools[{number}].type' (and 'function')."
        if not isinstance(function.get("name"), str) or not isinstance(
            function.get("parameters", {}), dict
        ):
            return f"Invalid 'tools[{number}].function': needs a name and object parameters."
    pending: list[str] = []
    """Tool call ids of the last assistant message, not yet answered."""
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            return f"Invalid value for '{where}.role': {role!r}"
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' ({where}, id {call_id!r})."
                )
            pending.remove(call_id)
            if not isinstance(message.get("content"), str | list):
                return f"Invalid type for '{where}.content': expected a string or an array."
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not "
                f"have response messages: {', '.join(pending)}"
            )
        problem = _content_problem(where, role, message)
        if problem:
            return problem
        if role == "assistant":
            calls = message.get("tool_calls") or []
            for call in calls:
                arguments = (call.get("function") or {}).get("arguments")
                if not isinstance(arguments, str) or not call.get("id"):
                    return f"Invalid '{where}.tool_calls': each needs an id and string arguments"
            pending = [call["id"] for call in calls]
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}"
        )
    return None


def _content_problem(where: str, role: str, message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if role == "assistant":
        if content is None and not message.get("tool_calls"):
            return f"Invalid value for '{where}.content': expected a string, got null."
        if content is None or isinstance(content, str):
            return None
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"Invalid type for '{where}.content': expected a string or an array."
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in USER_PARTS or (role != "user" and kind != "text"):
            return f"Invalid value: {kind!r}. Supported values are: 'text' and 'image_url'."
        if kind == "image_url" and not str((part.get("image_url") or {}).get("url", "")).startswith(
            ("data:", "http")
        ):
            return f"Invalid '{where}.content': image_url needs a URL or a data URL."
    return None


def main(argv: list[str] | None = None) -> int:
    return messages.main(argv, FakeChatServer)


if __name__ == "__main__":
    sys.exit(main())
