"""Gain-based metrics: dcg and ndcg with linear gains, and their Burges variants with exponential gains.

dcg@k = sum_{i<=k} gain(grade_i) / log2(i + 1); ndcg@k = dcg@k / ideal dcg@k, the ideal from the qrels'
grades sorted descending (Järvelin and Kekäläinen, ACM TOIS 2002). gain = grade for dcg/ndcg, 2^grade - 1
for the Burges variants (Burges et al., ICML 2005); grades below the relevance level gain 0.

Exponential gains overflow float64 from grade 1024. ndcg_burges never needs the raw gains: every gain is
scaled by 2^-shift with shift = max(0, max grade - 1000), which is exact (a power of two) and cancels in
the ratio, so its values are identical to the unscaled ones wherever those are finite. dcg_burges is the
raw sum and becomes infinite; `evaluate` turns that into an InputError naming the grade.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel

MAX_UNSCALED_GRADE = 1000
_OVERFLOW_GRADE = 1024  # 2.0 ** 1024 is beyond float64


@kernel
def gain(grade: int, level: int, burges: bool, shift: int) -> float:
    if grade < level or grade <= 0:
        return 0.0
    if burges:
        if grade - shift >= _OVERFLOW_GRADE:
            return math.inf
        return 2.0 ** (grade - shift) - 2.0 ** (-shift)
    return float(grade)


@kernel
def dcg(grades: NDArray[np.int64], depth: int, level: int, burges: bool, shift: int) -> float:
    total = 0.0
    for i in range(depth):
        value = gain(grades[i], level, burges, shift)
        if value != 0.0:
            total += value / math.log2(i + 2.0)
    return total


@kernel
def ndcg(
    ranked: NDArray[np.int64], ideal: NDArray[np.int64], depth: int, k: int, level: int, burges: bool
) -> float:
    """dcg of the ranking over dcg of the ideal ranking `ideal` (the qrels' grades, descending)."""
    shift = 0
    if burges and ideal.shape[0] > 0 and ideal[0] > MAX_UNSCALED_GRADE:
        shift = int(ideal[0]) - MAX_UNSCALED_GRADE
    ideal_depth = ideal.shape[0] if k == 0 or k > ideal.shape[0] else k
    best = dcg(ideal, ideal_depth, level, burges, shift)
    return dcg(ranked, depth, level, burges, shift) / best if best > 0.0 else 0.0
