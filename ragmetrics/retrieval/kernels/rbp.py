"""Rank-biased precision with persistence p: (1 - p) sum_i p^(i-1) g_i, with graded g_i = grade / max grade
(Moffat and Zobel, 'Rank-biased precision for measurement of retrieval effectiveness', ACM TOIS 2008;
graded as ranx does). rbp_resid: the weight unjudged documents and the unread tail leave open,
p^n + (1 - p) sum_{unjudged i} p^(i-1), 0 when nothing retrieved is unjudged (trec_eval's rbp_resid)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def rbp(ranked: NDArray[np.int64], depth: int, level: int, p: float, max_grade: int) -> float:
    weight = 1.0
    total = 0.0
    scale = float(max_grade) if max_grade > 1 else 1.0
    for i in range(depth):
        grade = ranked[i]
        if grade >= level and grade > 0:
            total += weight * (grade / scale)
        weight *= p
    return (1.0 - p) * total


@kernel
def rbp_residual(ranked: NDArray[np.int64], depth: int, p: float) -> float:
    weight = 1.0
    unjudged = 0
    total = 0.0
    for i in range(depth):
        if ranked[i] < 0:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1.0 - p) * total if unjudged > 0 else 0.0
