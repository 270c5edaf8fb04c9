"""Inferred average precision: average precision estimated from a judged random sample of the pool.

For each judged relevant document d at rank k (1-based): 1 if k = 1, else
1/k + (k-1)/k * (P / (k-1)) * (r + eps) / (r + n + 2 eps), with r and n the judged relevant and non-relevant
documents above d and P those plus the pooled-but-unjudged ones above it; the sum over R (Yilmaz and Aslam,
'Estimating average precision with incomplete and imperfect judgments', CIKM 2006; trec_eval's infAP, eps =
1e-5). A document absent from the qrels is outside the pool and skipped; a negative qrels grade marks one
pooled but not judged. Specs: `retrieval.registry`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel

EPSILON = 1e-5


@kernel
def inferred_ap(ranked: NDArray[np.int64], depth: int, level: int, n_rel: int, outside: int) -> float:
    """`outside` is the grade the alignment gives a document absent from the qrels (`score.NOT_IN_QRELS`)."""
    total = 0.0
    rel_above = 0
    nonrel_above = 0
    pooled_unjudged_above = 0
    for j in range(depth):
        grade = ranked[j]
        if grade == outside:
            continue
        if grade < 0:
            pooled_unjudged_above += 1
            continue
        if grade < level:
            nonrel_above += 1
            continue
        if j == 0:
            total += 1.0
        else:
            fj = float(j)
            pool = (rel_above + nonrel_above + pooled_unjudged_above) / fj
            share = (rel_above + EPSILON) / (rel_above + nonrel_above + 2.0 * EPSILON)
            total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * pool * share
        rel_above += 1
    return total / n_rel if n_rel > 0 else 0.0
