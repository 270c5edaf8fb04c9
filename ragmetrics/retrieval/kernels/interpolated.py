"""Interpolated precision at recall levels, and its 11-point average.

iprec@r = max over ranks j at or below the c-th relevant retrieved document of hits@j / j, with c = round(r R)
(half away from zero, as trec_eval 10), 0 when fewer than c relevant documents are retrieved; for c = 0 the
highest precision at any rank. 11pt_avg = the mean of iprec at 0.0, 0.1, ..., 1.0 (Manning, Raghavan and
Schütze, 'Introduction to Information Retrieval', 2008, ch. 8.4; trec_eval's iprec_at_recall and 11pt_avg).
Specs: `retrieval.registry`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def precision_curve(ranked: NDArray[np.int64], n: int, level: int, curve: NDArray[np.float64],
                    relevant_at: NDArray[np.int64]) -> int:  # fmt: skip
    """Fill `curve[i]` with the best precision at rank i + 1 or below (interpolated precision) and
    `relevant_at` with the 0-based ranks of the relevant documents; returns how many there are. Computed once
    per query and level, then every recall point is a lookup."""
    hits = 0
    for i in range(n):
        if ranked[i] >= level:
            relevant_at[hits] = i
            hits += 1
        curve[i] = hits / (i + 1.0)
    for i in range(n - 2, -1, -1):
        curve[i] = max(curve[i], curve[i + 1])
    return hits


@kernel
def interpolated_at(curve: NDArray[np.float64], relevant_at: NDArray[np.int64], hits: int, n: int, n_rel: int,
                    recall: float) -> float:  # fmt: skip
    """iprec at `recall` from a `precision_curve`: at the rank of the c-th relevant document, c = round(r R)."""
    cut = int(recall * n_rel + 0.5)  # half away from zero (both are >= 0), as trec_eval's lround
    if n == 0 or cut > hits:
        return 0.0
    if cut == 0:
        return float(curve[0])
    return float(curve[relevant_at[cut - 1]])


@kernel
def interpolated_precision(ranked: NDArray[np.int64], n: int, level: int, n_rel: int, recall: float) -> float:
    curve = np.empty(n, dtype=np.float64)
    relevant_at = np.empty(n, dtype=np.int64)
    hits = precision_curve(ranked, n, level, curve, relevant_at)
    return interpolated_at(curve, relevant_at, hits, n, n_rel, recall)


@kernel
def eleven_point_at(curve: NDArray[np.float64], relevant_at: NDArray[np.int64], hits: int, n: int,
                    n_rel: int) -> float:  # fmt: skip
    total = 0.0
    for step in range(11):
        total += interpolated_at(curve, relevant_at, hits, n, n_rel, step / 10.0)
    return total / 11.0


@kernel
def eleven_point(ranked: NDArray[np.int64], n: int, level: int, n_rel: int) -> float:
    curve = np.empty(n, dtype=np.float64)
    relevant_at = np.empty(n, dtype=np.int64)
    hits = precision_curve(ranked, n, level, curve, relevant_at)
    return eleven_point_at(curve, relevant_at, hits, n, n_rel)
