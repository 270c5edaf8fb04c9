"""Set-based metrics over the top k: hits, hit_rate, precision, recall, f1 and r-precision.

With `rel@k` the relevant documents (grade >= level) among the top k and R the relevant documents of the
query: hits = rel@k; hit_rate = 1 if rel@k > 0; precision = rel@k / k (without @k: / documents retrieved);
recall = rel@k / R; f1 = 2 P R / (P + R); r-precision = rel@R / R (Manning, Raghavan and Schütze,
'Introduction to Information Retrieval', 2008, ch. 8); rprec_mult@m = rel@c / c with c = floor(m R + 0.9);
set_map = rel^2 / (n R) over the whole retrieved set (trec_eval's Rprec_mult and set_map). Specs:
`retrieval.registry`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel
from ragmetrics.retrieval.registry.spec import Kind

HITS = int(Kind.HITS)
HIT_RATE = int(Kind.HIT_RATE)
PRECISION = int(Kind.PRECISION)
RECALL = int(Kind.RECALL)
F1 = int(Kind.F1)


@kernel
def relevant_prefix(ranked: NDArray[np.int64], n: int, level: int, prefix: NDArray[np.int64]) -> None:
    """prefix[i] = relevant documents (grade >= level) among the top i, for i = 0..n: every set-based
    metric of the query at that level is then a lookup."""
    prefix[0] = 0
    for i in range(n):
        prefix[i + 1] = prefix[i] + (1 if ranked[i] >= level else 0)


@kernel
def set_based(kind: int, prefix: NDArray[np.int64], depth: int, retrieved: int, n_rel: int) -> float:
    """hits, hit_rate, precision, recall or f1 of the top `depth`; `retrieved` is precision's denominator."""
    hits = int(prefix[depth])
    precision = hits / retrieved if retrieved > 0 else 0.0
    recall = hits / n_rel if n_rel > 0 else 0.0
    if kind == HITS:
        return float(hits)
    if kind == HIT_RATE:
        return 1.0 if hits > 0 else 0.0
    if kind == PRECISION:
        return precision
    if kind == RECALL:
        return recall
    both = precision + recall
    return 2.0 * precision * recall / both if both > 0.0 else 0.0


@kernel
def r_precision(prefix: NDArray[np.int64], n: int, n_rel: int) -> float:
    """Relevant documents among the top R, over R (R = relevant documents of the query)."""
    return float(prefix[min(n, n_rel)]) / n_rel if n_rel > 0 else 0.0


@kernel
def judged_share(ranked: NDArray[np.int64], depth: int, denominator: int) -> float:
    """Documents of the top `depth` with any judgment (grade >= 0), over `denominator` (what was retrieved
    of the top k, as ir_measures' Judged@k)."""
    judged = 0
    for i in range(depth):
        if ranked[i] >= 0:
            judged += 1
    return judged / denominator if denominator > 0 else 0.0


@kernel
def r_precision_multiple(prefix: NDArray[np.int64], n: int, n_rel: int, multiple: float) -> float:
    """Precision at rank floor(multiple R + 0.9), the rank trec_eval's Rprec_mult uses."""
    cut = int(multiple * n_rel + 0.9)
    if cut <= 0:
        return 0.0
    return float(prefix[min(n, cut)]) / cut


@kernel
def set_map(prefix: NDArray[np.int64], n: int, n_rel: int) -> float:
    hits = int(prefix[n])
    return hits * hits / (n * n_rel) if n > 0 and n_rel > 0 else 0.0
