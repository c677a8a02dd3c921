"""The provider interface: one model request in, a stream of events out.

A provider turns a :class:`ModelRequest` into events, in the order the model produced them:
:class:`TextDelta` and :class:`ThinkingDelta` as they arrive, then one :class:`Finished` with
the assembled assistant message, the stop reason and the token usage. Failures are
:class:`ModelError`, whose message is fit to show a user.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from attrs import field, frozen


@frozen
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    """Anthropic Messages API format (role + content blocks)."""
    max_tokens: int
    system: str | None = None
    thinking: str = "off"
    """Thinking effort: off, low, medium or high (the provider maps it to the model's form)."""
    tools: list[dict[str, Any]] = field(factory=list)


@frozen
class TextDelta:
    text: str


@frozen
class ThinkingDelta:
    text: str


@frozen
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    thought_tokens: int = 0
    """Of ``output_tokens``, those spent thinking, where the API says."""

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.thought_tokens + other.thought_tokens,
        )

    @property
    def context_tokens(self) -> int:
        """Tokens the request and its answer occupy in the context window."""
        return (
            self.input_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
            + self.output_tokens
        )


@frozen
class Finished:
    stop_reason: str
    """The API's stop reason: end_turn, max_tokens, stop_sequence, tool_use, refusal, ..."""
    content: list[dict[str, Any]]
    """The assistant message's content blocks, ready to append to the history."""
    usage: TokenUsage
    invalid_tool_inputs: dict[str, str] = field(factory=dict)
    """Tool-use id -> input text that was not valid JSON (such calls are never run)."""


ModelEvent = TextDelta | ThinkingDelta | Finished

RawTap = Callable[[dict[str, Any]], None]


class ModelError(Exception):
    """The model could not answer; ``str(error)`` is a message for the user."""


class MissingCredentials(ModelError):
    """No API key is configured."""


class Provider(Protocol):
    def check_credentials(self) -> None:
        """Raise MissingCredentials if this provider cannot authenticate."""

    def stream(
        self, request: ModelRequest, tap: RawTap | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[ModelEvent]]:
        """Open a streamed answer. Leaving the context closes the underlying connection.

        ``tap`` sees every raw API event as received (what a transcript records).

        Cancellation: leaving early (a cancelled turn) closes the HTTP stream promptly.
        Errors: ModelError, with a readable message, before or during iteration.
        """
        ...
