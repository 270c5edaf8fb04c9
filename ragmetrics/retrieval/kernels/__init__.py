"""The retrieval kernels: one module per metric family (formula and citation beside the code), the
dispatcher that aligns a ranking with its qrels and calls them (`score`), and vocabulary matching.

Adding a metric family: a `Kind` in `retrieval.registry.spec`, its `MetricSpec`s in a family module of
`retrieval.registry` (listed in its `REGISTRY`), a kernel module here, one branch in `score.score_query`, and
its tests against trec_eval or ranx.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import numba_for
from ragmetrics.retrieval.kernels.match import match_sorted_rows
from ragmetrics.retrieval.kernels.score import (
    NOT_IN_QRELS,
    Plan,
    QrelsArrays,
    RunArrays,
    score_all_parallel,
    score_all_serial,
)

__all__ = ["NOT_IN_QRELS", "PARALLEL_MIN_ENTRIES", "match_sorted_rows", "score_queries"]

PARALLEL_MIN_ENTRIES = 20_000  # as before the kernels became lazy
"""Run entries from which waking numba's thread pool pays (below, compiled kernels run serially)."""


def score_queries(
    qrels: QrelsArrays,
    run: RunArrays,
    qrels_rows: NDArray[np.int64],
    run_rows: NDArray[np.int64],
    plan: Plan,
    depths: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """Scores [len(qrels_rows), len(plan kinds)] of the queries `qrels_rows` (qrels CSR rows).

    `run_rows[i]` is the run's CSR row of that query, -1 if the run lacks it (an empty ranking). Small
    inputs run in Python (no numba start-up), mid-sized ones compiled on one thread, large ones in parallel.
    """
    entries = int(run[1].shape[0])
    if depths is None:  # no token budget: every metric keeps the plan's cutoff
        depths = np.full((qrels_rows.shape[0], plan[0].shape[0]), -1, dtype=np.int64)
    with numba_for(entries) as compiled:
        kernel = score_all_parallel if compiled and entries >= PARALLEL_MIN_ENTRIES else score_all_serial
        result: NDArray[np.float64] = kernel(qrels, run, qrels_rows, run_rows, plan, depths)
    return result
