"""Interpolated precision at recall levels, and its 11-point average.

iprec@r = max over ranks j at or below the c-th relevant retrieved document of hits@j / j, with c = round(r R)
(half away from zero, as trec_eval 10), 0 when fewer than c relevant documents are retrieved; for c = 0 the
highest precision at any rank. 11pt_avg = the mean of iprec at 0.0, 0.1, ..., 1.0 (Manning, Raghavan and
Schütze, 'Introduction to Information Retrieval', 2008, ch. 8.4; trec_eval's iprec_at_recall and 11pt_avg).
Specs: `retrieval.metrics`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def interpolated_precision(ranked: NDArray[np.int64], n: int, level: int, n_rel: int, recall: float) -> float:
    cut = int(recall * n_rel + 0.5)  # half away from zero (both are >= 0), as trec_eval's lround
    hits = 0
    for i in range(n):
        if ranked[i] >= level:
            hits += 1
    if n == 0 or cut > hits:
        return 0.0
    # From the last rank up: the best precision at or below each rank, until the c-th relevant document.
    best = 0.0
    seen = hits
    for i in range(n, 0, -1):
        if seen == 0:
            break
        best = max(best, seen / i)
        if ranked[i - 1] >= level:
            if seen == cut:
                return best
            seen -= 1
    return best


@kernel
def eleven_point(ranked: NDArray[np.int64], n: int, level: int, n_rel: int) -> float:
    total = 0.0
    for step in range(11):
        total += interpolated_precision(ranked, n, level, n_rel, step / 10.0)
    return total / 11.0
