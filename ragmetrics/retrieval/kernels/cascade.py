"""Expected reciprocal rank and its normalised form: a cascade user who stops at each document with the
probability its grade gives.

err@k = sum_{i <= k} R_i / i prod_{j < i} (1 - R_j), R_i = (2^g_i - 1) / 2^g_max (Chapelle, Metzler, Zhang and
Grinspan, 'Expected reciprocal rank for graded relevance', CIKM 2009; gdeval's g_max = 4). nerr@k = err@k over
the err@k of the qrels' ideal ranking. R_i is computed as 2^(g - g_max) - 2^-g_max, which never overflows.
Grades below the relevance level and negative ones give R = 0. Specs: `retrieval.registry`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def stop_probability(grade: int, level: int, g_max: float) -> float:
    if grade < level or grade <= 0:
        return 0.0
    probability: float = 2.0 ** (grade - g_max) - 2.0 ** (-g_max)
    return probability


@kernel
def err(grades: NDArray[np.int64], depth: int, level: int, g_max: float) -> float:
    total = 0.0
    reach = 1.0
    for i in range(depth):
        stop = stop_probability(grades[i], level, g_max)
        if stop > 0.0:
            total += reach * stop / (i + 1.0)
            reach *= 1.0 - stop
    return total


@kernel
def nerr(
    ranked: NDArray[np.int64], ideal: NDArray[np.int64], depth: int, k: int, level: int, g_max: float
) -> float:
    """err of the ranking over err of the ideal ranking `ideal` (the qrels' grades, descending)."""
    ideal_depth = ideal.shape[0] if k == 0 or k > ideal.shape[0] else k
    best = err(ideal, ideal_depth, level, g_max)
    return err(ranked, depth, level, g_max) / best if best > 0.0 else 0.0
