"""One prompt turn: the user's blocks in, the model's answer streamed out as updates.

The caller owns the cancel scope (see ``Session.prompt``). Whatever the model produced before
a cancel or an error stays in the history, so the next turn continues from what the user saw.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from iaccode.config import Config
from iaccode.llm.base import (
    Finished,
    ModelError,
    ModelRequest,
    Provider,
    TextDelta,
    ThinkingDelta,
    TokenUsage,
)
from iaccode.protocol.content import TextContent
from iaccode.protocol.messages import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionUpdate,
    StopReason,
    UsageUpdate,
)

log = logging.getLogger(__name__)

SendUpdate = Callable[[SessionUpdate], Awaitable[None]]

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "end_turn",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}
"""The API's stop reasons -> ACP's. Unknown ones end the turn normally."""

SYSTEM_PROMPT = (
    "You are iac-code, a coding agent working in the user's project through their editor. "
    "Be direct and precise."
)


class Turn:
    """Runs one prompt against the history; ``usage`` adds up every model request."""

    def __init__(self, *, config: Config, provider: Provider, model: str,
                 history: list[dict[str, Any]], send_update: SendUpdate) -> None:
        self._config = config
        self._provider = provider
        self._model = model
        self._history = history
        self._send_update = send_update
        self.usage = TokenUsage()

    async def run(self, user_content: list[dict[str, Any]]) -> StopReason:
        """Stream the answer; return the stop reason.

        Cancellation: propagates (the caller turns it into ``cancelled``); the partial answer is
        kept in the history. A ModelError becomes a readable message and ends the turn.
        """
        _append_user(self._history, user_content)
        request = ModelRequest(
            model=self._model,
            messages=list(self._history),
            max_tokens=self._config.max_tokens,
            system=SYSTEM_PROMPT,
            thinking_budget=self._config.thinking_budget,
        )
        partial: list[str] = []
        finished: Finished | None = None
        try:
            async with self._provider.stream(request) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        partial.append(event.text)
                        await self._send_update(AgentMessageChunk(TextContent(event.text)))
                    elif isinstance(event, ThinkingDelta):
                        await self._send_update(AgentThoughtChunk(TextContent(event.text)))
                    else:
                        finished = event
        except ModelError as exc:
            log.warning("model request failed: %s", exc)
            await self._send_update(AgentMessageChunk(
                TextContent(f"\n\n⚠ {exc}\n"), meta={"iaccode": {"error": str(exc)}}))
            return "end_turn"
        finally:
            if finished is None and partial:
                self._history.append(
                    {"role": "assistant", "content": [{"type": "text", "text": "".join(partial)}]})
        assert finished is not None  # a provider ends its stream with Finished or raises
        if finished.content:
            self._history.append({"role": "assistant", "content": finished.content})
        self.usage = self.usage + finished.usage
        await self._send_update(
            UsageUpdate(used=finished.usage.context_tokens, size=self._config.context_window))
        return STOP_REASONS.get(finished.stop_reason, "end_turn")


def _append_user(history: list[dict[str, Any]], content: list[dict[str, Any]]) -> None:
    """Add the user's message; merge with a previous user message the model never answered
    (a turn cancelled before any output), since the API wants roles to alternate."""
    if history and history[-1]["role"] == "user":
        history[-1] = {"role": "user", "content": [*history[-1]["content"], *content]}
    else:
        history.append({"role": "user", "content": content})
