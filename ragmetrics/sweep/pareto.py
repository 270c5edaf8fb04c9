"""What each configuration costs a user, and which configurations no other beats on quality and cost at once.

Per configuration, over the selection half: quality (the sweep's metric, mean), latency (mean seconds of the
stages it reads for one question: its retrievers' searches, the fusion, its reranker; index building is a
cost of the corpus, paid once, and is not in it), tokens (mean whitespace tokens of the k passages it passes to
a generator) and cost (those tokens at `price_per_1k_tokens`). A configuration is on the Pareto front of a cost
axis when no other has quality at least as high and cost at most as high, one of them strictly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragmetrics.sweep.grid import Configuration
from ragmetrics.sweep.stages import Stages

__all__ = ["COST_AXES", "Point", "operational_points", "pareto_front"]

COST_AXES: tuple[str, ...] = ("latency_ms", "tokens", "cost_usd")


@dataclass(frozen=True)
class Point:
    name: str
    quality: float | None
    questions: int
    """Selection questions its quality is a mean over (fewer than the half when dropped early)."""
    latency_ms: float
    tokens: float
    cost_usd: float

    def axis(self, name: str) -> float:
        return float(getattr(self, name))


def operational_points(
    grid: Sequence[Configuration],
    stages: Stages,
    scores: Mapping[str, Mapping[str, float | None]],
    selection: Sequence[str],
    passages: Mapping[str, Mapping[str, str]],
    price_per_1k_tokens: float,
) -> list[Point]:
    lengths = {c: {pid: len(text.split()) for pid, text in texts.items()} for c, texts in passages.items()}
    points: list[Point] = []
    for config in grid:
        values = [v for q in selection if (v := scores[config.name].get(q)) is not None]
        latency = float(np.mean([stages.latency(config, q) for q in selection])) * 1000.0
        tokens = float(np.mean([
            sum(lengths[config.chunking][pid] for pid, _ in stages.top(config, q)) for q in selection
        ]))  # fmt: skip
        points.append(
            Point(
                config.name,
                float(np.mean(values)) if values else None,
                len(values),
                latency,
                tokens,
                tokens / 1000.0 * price_per_1k_tokens,
            )
        )
    return points


def pareto_front(points: Sequence[Point], axis: str) -> list[str]:
    """Names on the front of quality (higher better) against `axis` (lower better), by increasing cost."""
    scored = [p for p in points if p.quality is not None]
    front = [
        p
        for p in scored
        if not any(
            o.quality is not None
            and p.quality is not None
            and o.quality >= p.quality
            and o.axis(axis) <= p.axis(axis)
            and (o.quality > p.quality or o.axis(axis) < p.axis(axis))
            for o in scored
        )
    ]
    return [p.name for p in sorted(front, key=lambda p: (p.axis(axis), p.name))]
