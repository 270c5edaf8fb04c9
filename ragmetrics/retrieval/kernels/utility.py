"""UDCG, utility and distraction-aware cumulative gain (Trappolini, Cuconasu, Filice, Maarek and Silvestri,
'Redefining Retrieval Evaluation in the Era of LLMs', arXiv 2510.21440, 2025; reference code
GiovanniTRA/UDCG, `compute_udcg_score`).

    udcg@k = sigmoid( 1/n sum_{i <= n} w_i u_i ),  n = min(k, documents retrieved),  sigmoid(x) = 1 / (1 + e^-x)

w_i is the relevant weight (default 1) for a passage whose grade reaches the relevance level and the
irrelevant weight (default -1/3) for every other passage, unjudged ones included (the reference's
`is_relevant` False); u_i = 1 - p_abstain(i), the generator's probability of answering given that passage
alone, or 1 when no probabilities are given (UDCG over the relevance labels alone). Relevant passages help,
distracting ones hurt: a distractor the model answers from costs more than one it ignores.

As in the reference: an empty ranking scores 0.0 (not sigmoid(0) = 0.5), the mean divides by the passages
considered (fewer than k when fewer were retrieved), and a passage whose probability is missing under the
"skip" policy arrives here with u = 0, adding nothing while counting in n. The sum runs in rank order, each
term u_i * w_i, so the value is the reference's to the last bit up to exp's rounding.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def udcg(
    ranked: NDArray[np.int64],
    useful: NDArray[np.float64],
    depth: int,
    level: int,
    relevant_weight: float,
    irrelevant_weight: float,
) -> float:
    """`ranked`: grades in rank order; `useful`: the passages' utilities u_i in the same order."""
    if depth == 0:
        return 0.0
    total = 0.0
    for i in range(depth):
        grade = ranked[i]
        if grade >= level and grade > 0:
            total += useful[i] * relevant_weight
        else:
            total += useful[i] * irrelevant_weight
    return 1.0 / (1.0 + math.exp(-(total / depth)))
