"""A ModelRequest (Anthropic-shaped history) -> a Chat Completions request body.

The history is stored as Anthropic Messages (``ModelRequest.messages``), whichever provider
wrote it, so a session can change provider halfway. Here it becomes Chat Completions messages:

- ``system`` -> a first ``system`` message;
- user text blocks -> the message's text; image blocks (base64) -> ``image_url`` parts with a
  ``data:`` URL; ``tool_result`` blocks -> one ``role: "tool"`` message each, right after the
  assistant message that asked (images inside a result follow in a user message: tool messages
  carry text only);
- assistant text -> ``content``; ``tool_use`` blocks -> ``tool_calls`` (arguments as JSON text);
  thinking blocks are not sent back (the APIs want only the answer), except to DeepSeek
  (``reasoning_back``), whose thinking mode wants every assistant message's
  ``reasoning_content`` back once a turn called tools (it ignores it elsewhere).

The Chat Completions API refuses a tool call without its answer, or an answer to no call. Our
turn loop never stores either, but a history repaired after a crash or written by another
build might: an unanswered call is answered "No result was recorded", an orphan result is
dropped. So every history converts to a request the API accepts.
"""

from __future__ import annotations

import json
import re
from typing import Any

from iaccode.choices import thinks
from iaccode.llm.base import ModelRequest

NO_RESULT = "No result was recorded for this tool call."

_REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d|gpt-5)")
"""OpenAI's reasoning models (o1, o3, o4-mini, gpt-5...), also behind a gateway (openai/o3)."""

_NON_THINKING_QWEN = re.compile(r"coder")
"""Qwen models that never think (the Qwen3 Coder family): no ``enable_thinking`` for them."""


def chat_body(
    request: ModelRequest, *, thinking: str, max_tokens_field: str, reasoning_back: bool = False
) -> dict[str, Any]:
    """The request body (streamed, with usage in the last chunk).

    ``thinking`` is the preset's style (see ``Preset.thinking``); provider-specific fields go
    under ``extra_body``, as the openai SDK wants them.
    """
    body: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(request.system, request.messages, reasoning_back),
        "stream": True,
        "stream_options": {"include_usage": True},
        max_tokens_field: request.max_tokens,
    }
    if request.tools:
        body["tools"] = [chat_tool(tool) for tool in request.tools]
    if thinks(request.thinking):
        if thinking == "reasoning_effort_any" or (
            thinking == "reasoning_effort" and _REASONING_MODEL.search(request.model)
        ):
            body["reasoning_effort"] = request.thinking
        elif thinking == "enable_thinking" and not _NON_THINKING_QWEN.search(request.model):
            body["extra_body"] = {"enable_thinking": True}
    return body


def chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object"}}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def chat_messages(
    system: str | None, messages: list[dict[str, Any]], reasoning_back: bool = False
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    unanswered: list[str] = []
    """Ids of the last assistant message's tool calls not answered yet."""
    for message in messages:
        blocks = _blocks(message.get("content"))
        if message.get("role") == "assistant":
            _answer_missing(out, unanswered)
            converted = _assistant(blocks, reasoning_back)
            if converted is not None:
                out.append(converted)
                unanswered = [call["id"] for call in converted.get("tool_calls", [])]
            continue
        images: list[dict[str, Any]] = []
        rest: list[dict[str, Any]] = []
        for block in blocks:
            if block.get("type") != "tool_result":
                rest.append(block)
                continue
            call_id = block.get("tool_use_id")
            if call_id not in unanswered:
                continue  # answers no call we sent: the API would refuse the request
            unanswered.remove(call_id)
            text, result_images = _result_content(block.get("content"))
            if block.get("is_error") and not text.startswith("Error"):
                text = f"Error: {text}"
            out.append({"role": "tool", "tool_call_id": call_id, "content": text})
            images.extend(result_images)
        _answer_missing(out, unanswered)
        user = _user_content(images + rest)
        if user:
            out.append({"role": "user", "content": user})
    _answer_missing(out, unanswered)
    return out


def _answer_missing(out: list[dict[str, Any]], unanswered: list[str]) -> None:
    for call_id in unanswered:
        out.append({"role": "tool", "tool_call_id": call_id, "content": NO_RESULT})
    unanswered.clear()


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or [] if isinstance(block, dict)]


def _assistant(blocks: list[dict[str, Any]], reasoning_back: bool) -> dict[str, Any] | None:
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    reasoning = "".join(str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking")
    calls = [
        {
            "id": str(b["id"]),
            "type": "function",
            "function": {
                "name": str(b.get("name", "")),
                "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False),
            },
        }
        for b in blocks
        if b.get("type") == "tool_use" and b.get("id")
    ]
    if not text and not calls:
        return None  # only thinking: nothing the API wants back
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if reasoning_back:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    return message


def _image_part(block: dict[str, Any]) -> dict[str, Any] | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    elif source.get("type") == "url":
        url = str(source.get("url", ""))
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _result_content(content: Any) -> tuple[str, list[dict[str, Any]]]:
    """A tool result's text, and its images as user content blocks."""
    if isinstance(content, str):
        return content, []
    texts, images = [], []
    for block in _blocks(content):
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            images.append(block)
    return "\n".join(texts), images


def _user_content(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Plain text when there is only text (every compatible API takes a string), else parts."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text" and block.get("text"):
            parts.append({"type": "text", "text": str(block["text"])})
        elif block.get("type") == "image" and (image := _image_part(block)) is not None:
            parts.append(image)
    if all(part["type"] == "text" for part in parts):
        return "\n\n".join(part["text"] for part in parts)
    return parts
