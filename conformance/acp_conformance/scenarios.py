"""What the fake model says in each scenario, and which tools the agent under test has.

The suite runs a fake Anthropic Messages API per test (``acp_conformance/fakes/messages.py``) and
points the agent at it (``ANTHROPIC_BASE_URL``, a dummy ``ANTHROPIC_API_KEY``). A test plans
the model's answers in order; once they are used up the model answers a plain text, so that
an agent making extra requests (titles, summaries) still gets answers. Agents that do not talk
to the Messages API simply never ask; tests that depend on the model say ``n/a`` for them.
With ``--model-api chat`` the same plans are played by a fake Chat Completions API
(``acp_conformance/fakes/chat.py`` translates each scripted answer), for agents on that API.

Tool scenarios need the agent's own tool names and input shapes: a :class:`ToolProfile`,
built in (:data:`PROFILES`, chosen with ``--tools NAME`` or found from ``agentInfo.name``) or
read from a JSON file (``--tools PATH``, :func:`load_profile`). Agents with none have their
tool scenarios ``n/a``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from acp_conformance.driver import AgentConnection
from acp_conformance.fakes.chat import FakeChatServer
from acp_conformance.fakes.messages import FakeModelServer
from acp_conformance.requirements import not_applicable
from acp_conformance.script import Exchange, ToolUse, reply

FALLBACK_TEXT = "Conformance check answer."


class Padded(FakeModelServer):
    """A fake model answering :data:`FALLBACK_TEXT` once the plan is used up (the plain fake
    answers 500 then), so agents making extra requests (titles, summaries) and tests that plan
    nothing still get answers."""

    def _next_exchange(self, body: dict[str, Any]) -> Exchange | None:
        return super()._next_exchange(body) or copy.deepcopy(_FALLBACK)


class PaddedModelServer(Padded):
    """The padded fake Messages API."""


class PaddedChatServer(Padded, FakeChatServer):
    """The padded fake Chat Completions API (``--model-api chat``)."""


_FALLBACK = reply(FALLBACK_TEXT)


class Model:
    """The per-test fake model: ``plan`` its answers, then inspect what it was asked."""

    def __init__(self, server: FakeModelServer) -> None:
        self.server = server

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def plan(self, *exchanges: Mapping[str, Any]) -> None:
        """Queue the model's next answers, in order (after those queued before)."""
        self.server.enqueue(*exchanges)

    @property
    def used(self) -> bool:
        """Did the agent talk to the fake Messages API at all?"""
        return bool(self.server.requests)

    async def wait_for_request(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait until the agent made ``count`` model requests in all; False on time-out."""
        try:
            await trio.to_thread.run_sync(self.server.wait_for_requests, count, timeout)
        except TimeoutError:
            return False
        return True

    def request_count(self) -> int:
        return len(self.server.requests)

    def asked_text(self, start: int = 0) -> str:
        """Everything the agent sent the model (request bodies, from request ``start`` on)."""
        return "\n".join(r.raw_body.decode(errors="replace") for r in self.server.requests[start:])

    def offered_tool_names(self) -> list[str]:
        """The tool names of the latest model request, in either API's shape (Messages:
        ``{"name"}``; Chat Completions: ``{"type": "function", "function": {"name"}}``)."""
        requests = [r.body for r in self.server.requests if isinstance(r.body, dict)]
        tools = (requests[-1].get("tools") or []) if requests else []
        return [
            str((t["function"] if isinstance(t.get("function"), dict) else t).get("name"))
            for t in tools
            if isinstance(t, dict)
        ]

    def last_messages_text(self) -> str:
        """The conversation (``messages``) of the latest model request, as JSON text."""
        requests = [r for r in self.server.requests if isinstance(r.body, dict)]
        return json.dumps(requests[-1].body.get("messages")) if requests else ""


def slow_text(words: int = 60, delay: float = 0.05) -> dict[str, Any]:
    """An answer that streams for a while (``words`` deltas, ``delay`` seconds apart)."""
    return reply([f"word{i} " for i in range(words)], delay=delay)


ToolCall = tuple[str, dict[str, Any]]
"""A tool's name and its input, as the model asks for it."""


@dataclass(frozen=True)
class ToolProfile:
    name: str
    write: Callable[[Path, str], ToolCall]
    read: Callable[[Path], ToolCall]
    shell: Callable[[str], ToolCall]

    def call(self, call_id: str, tool: ToolCall) -> dict[str, Any]:
        """One model answer asking for one tool."""
        name, arguments = tool
        return reply(tool_uses=[ToolUse(call_id, name, arguments)])


PROFILES = {
    "claude-code": ToolProfile(
        "claude-code",
        write=lambda path, content: ("Write", {"file_path": str(path), "content": content}),
        read=lambda path: ("Read", {"file_path": str(path)}),
        shell=lambda command: ("Bash", {"command": command, "description": "conformance"}),
    ),
}
"""The profiles built in, for agents others often check (any agent's can be given as a file)."""

AGENT_PROFILES = {
    "@zed-industries/claude-agent-acp": "claude-code",
    "@zed-industries/claude-code-acp": "claude-code",
}
"""``agentInfo.name`` -> profile, for agents whose tools the suite knows."""

PLACEHOLDERS = {"write": ("path", "content"), "read": ("path",), "shell": ("command",)}
"""What each tool of a profile file is given: ``"{path}"`` as an argument's whole value is
replaced with the file's absolute path, and so on."""


class ProfileError(ValueError):
    """A tool profile file that cannot be used."""


def load_profile(path: Path) -> ToolProfile:
    """A tool profile from a JSON file, for example::

        {"name": "my-agent",
         "write": {"tool": "write_file", "arguments": {"path": "{path}", "content": "{content}"}},
         "read": {"tool": "read_file", "arguments": {"path": "{path}"}},
         "shell": {"tool": "bash", "arguments": {"command": "{command}", "timeout": 60}}}

    An argument whose value is a placeholder of :data:`PLACEHOLDERS` gets the scenario's value;
    the others are sent as written."""
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ProfileError(f"tool profile {path}: {exc}") from exc
    if not isinstance(spec, dict):
        raise ProfileError(f"tool profile {path}: not a JSON object")
    fills = {what: _filler(path, what, spec.get(what)) for what in PLACEHOLDERS}
    return ToolProfile(
        str(spec.get("name") or path.stem),
        write=lambda file, content: fills["write"]({"path": str(file), "content": content}),
        read=lambda file: fills["read"]({"path": str(file)}),
        shell=lambda command: fills["shell"]({"command": command}),
    )


def _filler(path: Path, what: str, spec: object) -> Callable[[dict[str, str]], ToolCall]:
    """The tool call ``spec`` describes, with its placeholders filled from the values given."""
    if not (
        isinstance(spec, dict)
        and isinstance(spec.get("tool"), str)
        and isinstance(spec.get("arguments"), dict)
    ):
        raise ProfileError(
            f'tool profile {path}: "{what}" needs "tool" (a name) and "arguments" (an object)'
        )
    tool: str = spec["tool"]
    arguments: dict[str, Any] = spec["arguments"]
    placeholders = {f"{{{name}}}": name for name in PLACEHOLDERS[what]}
    missing = set(placeholders) - {v for v in arguments.values() if isinstance(v, str)}
    if missing:
        raise ProfileError(f'tool profile {path}: "{what}" never uses {sorted(missing)}')

    def fill(values: dict[str, str]) -> ToolCall:
        return tool, {
            key: values[placeholders[value]]
            if isinstance(value, str) and value in placeholders
            else copy.deepcopy(value)
            for key, value in arguments.items()
        }

    return fill


def tools_option(choice: str, base: Path) -> ToolProfile | str:
    """``--tools``: ``auto``, ``none``, a built-in profile's name, or a profile file (relative
    to ``base``, the folder the suite was started in), loaded once."""
    if choice in ("auto", "none") or choice in PROFILES:
        return choice
    return load_profile(base / choice)


def profile_for(choice: ToolProfile | str, init_result: Mapping[str, Any]) -> ToolProfile | None:
    """The profile ``--tools`` gave (``auto``: by ``agentInfo.name``; ``none``: none)."""
    if isinstance(choice, ToolProfile):
        return choice
    if choice == "none":
        return None
    if choice != "auto":
        return PROFILES[choice]
    name = (init_result.get("agentInfo") or {}).get("name")
    return PROFILES.get(AGENT_PROFILES.get(str(name), ""))


# -- steps many tests share --------------------------------------------------------------

STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
HISTORY_KINDS = (
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
)
"""Update kinds that replay a conversation."""


def capability_or_na(agent: AgentConnection, path: str) -> Any:
    """The advertised agent capability at ``path`` (``sessionCapabilities.fork``), or end
    the test as n/a."""
    value = agent.capability(path)
    if value is None or value is False:
        not_applicable(f"agent does not advertise {path}")
    return value


async def start(agent: AgentConnection, workspace: Path, **capabilities: Any) -> str:
    """initialize (with these client capabilities) and open a session in ``workspace``."""
    await agent.initialize(**capabilities)
    return await agent.new_session(workspace)


def stop_reason(answer: dict[str, Any]) -> str:
    """The stopReason of a session/prompt answer; fails on an error answer."""
    assert "result" in answer, f"session/prompt answered an error: {answer.get('error')}"
    reason = (answer["result"] or {}).get("stopReason")
    assert reason in STOP_REASONS, f"stopReason {reason!r} is not one of {sorted(STOP_REASONS)}"
    return str(reason)


def error_code(answer: dict[str, Any]) -> int | None:
    """The error code of an answer (None when it is a result)."""
    error = answer.get("error")
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    return code if isinstance(code, int) else None


def assert_error(answer: dict[str, Any], what: str, *codes: int) -> int:
    """The answer is an error (with one of ``codes`` when given); returns the code."""
    assert "error" in answer, f"{what}: expected an error, got result {answer.get('result')!r}"
    code = error_code(answer)
    assert code is not None, f"{what}: error without an integer code: {answer['error']!r}"
    if codes:
        assert code in codes, f"{what}: error code {code}, expected one of {list(codes)}"
    return code


def text_block(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **extra}
