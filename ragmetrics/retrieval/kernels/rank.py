"""Rank-based metrics: reciprocal rank of the first relevant document, and average precision.

mrr = 1 / rank of the first relevant document in the top k (0 if none); map = sum over relevant documents
in the top k of precision at their rank, over R (Voorhees, 'The TREC-8 question answering track report',
1999; Manning et al. 2008, ch. 8). Specs: `retrieval.registry`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def reciprocal_rank(ranked: NDArray[np.int64], depth: int, level: int) -> float:
    for i in range(depth):
        if ranked[i] >= level:
            return 1.0 / (i + 1.0)
    return 0.0


@kernel
def average_precision(ranked: NDArray[np.int64], depth: int, level: int, n_rel: int) -> float:
    hits = 0
    total = 0.0
    for i in range(depth):
        if ranked[i] >= level:
            hits += 1
            total += hits / (i + 1.0)
    return total / n_rel if n_rel > 0 else 0.0
