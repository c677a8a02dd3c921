"""One prompt turn: the agent loop.

    user message -> model request -> streamed text/thinking -> tool calls -> tool results
                 -> [compaction when the context is nearly full] -> model request -> ...
                 until the model stops, or max_turn_requests

The caller owns the cancel scope (see ``Session.prompt``). The history stays valid for the API
whatever happens: a partial answer is kept, and every ``tool_use`` gets a ``tool_result`` (a
synthetic error when the turn was cancelled or cut short before the tool finished).
"""

from __future__ import annotations

import logging
from typing import Any

from iaccode.llm.base import (
    Finished,
    ModelError,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    TokenUsage,
)
from iaccode.llm.prices import CostMeter
from iaccode.protocol.content import TextContent
from iaccode.protocol.messages import (
    AgentMessageChunk,
    AgentThoughtChunk,
    Cost,
    SessionUpdate,
    StopReason,
    UsageUpdate,
    warning_text,
)
from iaccode.turn import compaction
from iaccode.turn.env import TurnEnv
from iaccode.turn.tool_runner import ToolRunner
from iaccode.turn.transcript import Transcript, api_messages, new_message_id

log = logging.getLogger(__name__)

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

LIMIT_REACHED = "Not run: the turn reached its limit of model requests."


class Turn:
    """Runs one prompt against the transcript; ``usage`` adds up every model request."""

    def __init__(self, env: TurnEnv, transcript: Transcript, *, stream_text: bool = True) -> None:
        self._model = env.model
        self._calls = env.calls
        self._config = env.config
        self._editor = env.calls.editor
        self._transcript = transcript
        self._stream_text = stream_text
        """False for a sub-agent: its text is its tool result, not a message to the user."""
        self.usage = TokenUsage()
        self.final_text = ""
        """The text of the last model answer (a sub-agent's result)."""
        self._steering: list[tuple[list[dict[str, Any]], list[Any]]] = []
        """Messages the user added while the turn runs (model content, ACP blocks), waiting
        for the next model request."""

    def steer(self, user_content: list[dict[str, Any]], prompt: list[Any]) -> None:
        """Add a user message to the running turn (``_session/steering``). It reaches the
        model with the next request: after the current tool calls finish, never cutting an
        answer that is streaming; an answer that would have ended the turn is followed by
        one more request for it."""
        self._steering.append((user_content, prompt))

    def _take_steering(self) -> None:
        """Put the waiting steering messages into the history (as user messages)."""
        while self._steering:
            content, prompt = self._steering.pop(0)
            self._transcript.append({"role": "user", "content": content}, prompt)

    async def run(
        self, user_content: list[dict[str, Any]], prompt: list[Any] | None = None
    ) -> StopReason:
        """Loop until the model stops; return the stop reason.

        Cancellation: propagates (the caller answers ``cancelled``); the history is left
        valid. A ModelError becomes a readable message and ends the turn.
        """
        self._transcript.append({"role": "user", "content": user_content}, prompt)
        try:
            for _ in range(self._config.max_turn_requests):
                self._take_steering()  # what the user added meanwhile rides with this request
                finished = await self._model_request()
                if finished is None:
                    return "end_turn"
                tool_uses = [b for b in finished.content if b.get("type") == "tool_use"]
                if not tool_uses:
                    if self._steering:
                        continue  # the user said more meanwhile: the model answers that too
                    return STOP_REASONS.get(finished.stop_reason, "end_turn")
                runner = ToolRunner(self._calls, finished.invalid_tool_inputs, self._transcript)
                results = await runner.run_all(tool_uses)
                self._transcript.append({"role": "user", "content": results})
                if self._context_nearly_full(finished.usage):
                    await self.compact()
            # The last answer's tool calls have run and their results are in the history (the
            # model reads them with the next prompt); repair only answers calls left without a
            # result, should there be any.
            self._transcript.repair(LIMIT_REACHED)
            return "max_turn_requests"
        finally:
            self._transcript.repair()  # a call the cancel cut short: transcript.INTERRUPTED
            # Steering that came too late for a request is still the user's: kept for the next.
            self._take_steering()

    def _context_nearly_full(self, usage: TokenUsage) -> bool:
        config = self._config
        return usage.context_tokens >= config.compaction_threshold * config.context_window

    async def compact(self) -> bool:
        """Summarise the older turns into one message; True if the history was compacted.

        A client with ``session.compaction`` sees it as ``compaction_update``s (in progress,
        then completed with the summary, failed or cancelled); the others get a text message
        when it is done, as before.

        Errors: a failed summary request leaves the history as it was and tells the user.
        Cancellation: propagates, the history as it was (the client hears ``cancelled``).
        """
        model = self._model
        parts = compaction.split(
            self._transcript.messages, int(self._config.context_window * compaction.KEEP_SHARE)
        )
        if parts is None:
            return False
        older, recent = parts
        shown = compaction.Shown(self._editor)
        await shown.started()
        try:
            summary, finished = await compaction.summarise(
                model.provider, model.model, older, api_messages
            )
        except ModelError as exc:
            failure = f"Could not compact the conversation: {exc}"
            self._transcript.notice(warning_text(failure))
            await shown.failed(failure)
            return False
        except BaseException:
            await shown.cancelled()
            raise
        self.usage = self.usage + finished.usage
        model.cost.add(model.model, finished.usage, in_context=False)
        text = f"\n\n[Context compacted: {compaction.describe(older, recent, finished)}]\n"
        # The notice is kept in the compaction record: a replay shows it where it happened.
        self._transcript.replace(compaction.compacted(summary, recent), notice=text)
        await shown.completed(text, summary)
        return True

    async def _model_request(self) -> Finished | None:
        """Stream one answer into the history; None when the model failed (already told)."""
        model, editor = self._model, self._editor
        request = ModelRequest(
            model=model.model,
            messages=api_messages(self._transcript.messages),
            max_tokens=self._config.max_tokens,
            system=model.system() or None,
            thinking=model.thinking(),
            tools=[tool.definition() for tool in self._calls.tools.values()],
        )
        partial: list[str] = []
        finished: Finished | None = None
        message_id = new_message_id()  # the text and the thinking of this one answer
        try:
            async with model.provider.stream(request) as events:
                async for event in events:
                    # Deltas are queued without a checkpoint; the loop awaits send_update (waits
                    # for the editor, lets other tasks run) once per burst or when it is full.
                    if isinstance(event, TextDelta):
                        partial.append(event.text)
                        if self._stream_text:
                            chunk: SessionUpdate = AgentMessageChunk(
                                TextContent(event.text), message_id=message_id
                            )
                            if not editor.queue_update(chunk):
                                await editor.send_update(chunk)
                    elif isinstance(event, ThinkingDelta):
                        if self._stream_text:
                            chunk = AgentThoughtChunk(
                                TextContent(event.text), message_id=message_id
                            )
                            if not editor.queue_update(chunk):
                                await editor.send_update(chunk)
                    else:
                        finished = event
        except ModelError as exc:
            log.warning("model request failed: %s", exc)
            self._transcript.notice(warning_text(str(exc)))
            await editor.advise(str(exc), title="The model request failed", severity="error")
            return None
        finally:
            if finished is None and partial:
                self._transcript.append(
                    {"role": "assistant", "content": [{"type": "text", "text": "".join(partial)}]},
                    message_id=message_id,
                )
        assert finished is not None  # a provider ends its stream with Finished or raises
        if finished.content:
            self._transcript.append(
                {"role": "assistant", "content": finished.content}, message_id=message_id
            )
        self.final_text = "".join(partial)
        self.usage = self.usage + finished.usage
        # A sub-agent (no streamed text) has a context of its own, not the session's.
        model.cost.add(model.model, finished.usage, in_context=self._stream_text)
        if self._stream_text:
            await editor.send_update(usage_update(model.cost, self._config.context_window))
        return finished


def usage_update(cost: CostMeter, context_window: int) -> UsageUpdate:
    """The ``usage_update`` that tells the editor where the session stands."""
    spent = cost.total
    return UsageUpdate(
        used=cost.context_tokens,
        size=context_window,
        cost=Cost(round(spent, 6)) if spent is not None else None,
    )
