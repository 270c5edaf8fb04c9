"""The one tie rule every retriever here applies: score descending, then document id descending (trec_eval's)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def id_order(ids: tuple[str, ...]) -> NDArray[np.int64]:
    """Position of each id in ascending string order, used as the tie-break key."""
    order = np.argsort(np.array(ids, dtype=object), kind="stable")
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[order] = np.arange(len(ids), dtype=np.int64)
    return ranks


def top_k(
    scores: NDArray[np.floating], id_ranks: NDArray[np.int64], k: int, *, positive_only: bool
) -> list[int]:
    """Indices of the best `k` documents under the tie rule; `positive_only` drops non-matching (score <= 0) ones."""
    candidates = np.flatnonzero(scores > 0) if positive_only else np.arange(len(scores))
    if candidates.size == 0:
        return []
    s = scores[candidates].astype(np.float64)
    order = np.lexsort((-id_ranks[candidates], -s))
    return [int(i) for i in candidates[order[:k]]]
