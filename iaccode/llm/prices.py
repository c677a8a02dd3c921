"""What a model request cost, for the models whose published prices we list.

``usage_update.cost`` is sent only when every request of the session was to a model in
:data:`PRICES`: a model we do not list gets no figure at all (never a guess). Prices are USD
per million tokens, from Anthropic's price list; cache writes (5-minute TTL) cost 1.25x input,
cache reads 0.1x.
"""

from __future__ import annotations

import re

from attrs import frozen

from iaccode.llm.base import TokenUsage


@frozen
class Price:
    input: float
    output: float

    @property
    def cache_write(self) -> float:
        return self.input * 1.25

    @property
    def cache_read(self) -> float:
        return self.input * 0.1


PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
}
"""Model id (without a ``-YYYYMMDD`` snapshot suffix) -> price per million tokens."""

_SNAPSHOT = re.compile(r"-\d{8}$")


def price_of(model: str) -> Price | None:
    return PRICES.get(_SNAPSHOT.sub("", model))


def cost_usd(model: str, usage: TokenUsage) -> float | None:
    price = price_of(model)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    ) / 1_000_000


class CostMeter:
    """The session's cost so far, in USD (None once a request went to a model we do not price),
    and how full its context window was at the last request. Saved with the session, so a
    loaded session goes on counting from where it was."""

    def __init__(self, total: float | None = 0.0, context_tokens: int = 0) -> None:
        self._total = total or 0.0
        self._known = total is not None
        self.context_tokens = context_tokens

    def add(self, model: str, usage: TokenUsage, *, in_context: bool = True) -> float | None:
        """Count one request; ``in_context=False`` for one that is not the conversation itself
        (a compaction's summary), whose size says nothing of the context."""
        cost = cost_usd(model, usage)
        if cost is None:
            self._known = False
        else:
            self._total += cost
        if in_context:
            self.context_tokens = usage.context_tokens
        return self.total

    @property
    def total(self) -> float | None:
        return self._total if self._known else None
