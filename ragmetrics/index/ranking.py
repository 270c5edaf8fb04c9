"""The best k of many scores under the retrievers' tie rule (score descending, then id descending), found
without sorting everything: what a search over a million chunks needs and `retrievers._ranking.top_k` gives for
thousands. Both return the same positions; this one partitions first."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["best_k", "kth_or_better"]


def kth_or_better(scores: NDArray[np.floating], k: int) -> NDArray[np.int64]:
    """Positions of every score at least as high as the k-th highest (ties at the boundary all kept)."""
    if scores.shape[0] <= k:
        return np.arange(scores.shape[0], dtype=np.int64)
    threshold = np.partition(scores, scores.shape[0] - k)[scores.shape[0] - k]
    return np.flatnonzero(scores >= threshold).astype(np.int64)


def best_k(scores: NDArray[np.floating], positions: NDArray[np.int64], id_ranks: NDArray[np.int64], k: int,
           *, positive_only: bool) -> list[int]:  # fmt: skip
    """Of the candidates at `positions` (scores aligned with them), the best `k` positions under the tie rule;
    `positive_only` drops scores <= 0 (a BM25 document that matches no query term)."""
    if positive_only:
        keep = scores > 0
        scores, positions = scores[keep], positions[keep]
    if positions.size == 0:
        return []
    near = kth_or_better(scores, k)
    scores, positions = scores[near].astype(np.float64), positions[near]
    order = np.lexsort((-id_ranks[positions], -scores))
    return [int(p) for p in positions[order[:k]]]
