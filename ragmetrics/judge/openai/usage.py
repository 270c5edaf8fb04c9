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
    batch_prompt_tokens: int = 0
    """Of prompt_tokens, those of requests answered through the Batch API (billed at batch prices)."""
    batch_completion_tokens: int = 0

    def add(self, other: CallUsage) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def token_usage(usage: CallUsage, prices: Mapping[str, float] | None, *, batch_factor: float = 1.0) -> TokenUsage:
    """Totals with cost when a price table (USD per million tokens: prompt, completion, embedding) is given;
    tokens answered through the Batch API cost `batch_factor` times the price."""
    cost = None
    if prices is not None:
        prompt, completion = prices.get("prompt", 0.0), prices.get("completion", 0.0)
        full = usage.prompt_tokens * prompt + usage.completion_tokens * completion
        batched = usage.batch_prompt_tokens * prompt + usage.batch_completion_tokens * completion
        cost = (full - (1.0 - batch_factor) * batched + usage.embedding_tokens * prices.get("embedding", 0.0)) / 1e6
    return TokenUsage(cost_usd=cost, **usage.as_dict())
