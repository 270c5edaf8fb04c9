"""Tokens, calls and cost: what a verdict cost across its retries and repairs, and what a client spent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ragmetrics.schema import TokenUsage

__all__ = ["CallUsage", "token_usage"]


@dataclass
class CallUsage:
    """Tokens and calls spent on one verdict (or accumulated over a client's life)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    retries: int = 0
    repairs: int = 0

    def add(self, other: CallUsage) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def token_usage(usage: CallUsage, prices: Mapping[str, float] | None) -> TokenUsage:
    """Totals with cost when a price table (USD per million tokens: prompt, completion, embedding) is given."""
    cost = None
    if prices is not None:
        cost = (
            usage.prompt_tokens * prices.get("prompt", 0.0)
            + usage.completion_tokens * prices.get("completion", 0.0)
            + usage.embedding_tokens * prices.get("embedding", 0.0)
        ) / 1_000_000
    return TokenUsage(cost_usd=cost, **usage.as_dict())
