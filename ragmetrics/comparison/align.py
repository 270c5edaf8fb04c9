"""Aligning runs on one query list: the single place that decides which score each query contributes.

Used by the comparison itself, the per-query CSV and the plots, so all three always agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.options import ALIGNMENTS, Align
from ragmetrics.schema import RunResult

__all__ = ["Align", "aligned_query_ids", "aligned_score_matrix"]


def aligned_query_ids(results: Sequence[RunResult], align: Align | str) -> list[str]:
    """The union of the runs' query ids in first-seen order, or the ids every run has."""
    if align == "union":
        return list(dict.fromkeys(q for r in results for q in r.per_query))
    if align == "intersection":
        shared = set(results[0].per_query).intersection(*(r.per_query for r in results[1:]))
        return [q for q in results[0].per_query if q in shared]
    raise InputError(f"unknown alignment {align!r}; choose one of {', '.join(ALIGNMENTS)}", field="align")


def aligned_score_matrix(
    result: RunResult, metrics: Sequence[str], query_ids: Sequence[str]
) -> tuple[NDArray[np.float64], list[str]]:
    """queries x metrics: 0 where the run lacks the query, NaN (an internal mask) where its score failed.

    Returns the matrix and the queries the run lacks. A query the run has but without an entry for a
    metric is an error: a failure must be recorded as None, never left out.
    """
    values = np.zeros((len(query_ids), len(metrics)))
    missing: list[str] = []
    for row, qid in enumerate(query_ids):
        scores = result.per_query.get(qid)
        if scores is None:
            missing.append(qid)
            continue
        for col, metric in enumerate(metrics):
            if metric not in scores:
                raise InputError(
                    f"run {result.name!r}, query {qid!r} has no entry for {metric!r} "
                    "(a failed score must be recorded as None with a failure)",
                    field="per_query",
                )
            score = scores[metric]
            values[row, col] = np.nan if score is None else score
    return values, missing
