"""Rerankers named in the sweep tests' configs ('sweeps.scorers:flip'), counting their calls."""

from __future__ import annotations

CALLS: list[str] = []


def _overlap(question: str, passage: str) -> int:
    return len(set(question.lower().split()) & set(passage.lower().split()))


def flip(question: str, passages: list[str]) -> list[float]:
    """A reranker that prefers what matches the question least: configurations with it clearly lose."""
    CALLS.append(question)
    return [-float(_overlap(question, p)) for p in passages]
