"""bpref: how often judged relevant documents are ranked above judged non-relevant ones.

bpref = 1/R sum over relevant retrieved r of (1 - |non-relevant ranked above r| / min(R, N)), the count capped
at R, with N the judged non-relevant documents; unjudged documents are skipped (Buckley and Voorhees,
'Retrieval evaluation with incomplete information', SIGIR 2004; trec_eval's bpref).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel


@kernel
def bpref(grades: NDArray[np.int64], depth: int, level: int, n_rel: int, n_nonrel: int) -> float:
    if n_rel == 0:
        return 0.0
    denominator = float(min(n_rel, n_nonrel))
    nonrel_above = 0
    total = 0.0
    for i in range(depth):
        grade = grades[i]
        if grade < 0:
            continue
        if grade < level:
            nonrel_above += 1
        elif nonrel_above > 0:
            total += 1.0 - min(nonrel_above, n_rel) / denominator
        else:
            total += 1.0
    return total / n_rel
