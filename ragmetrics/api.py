"""Functions that span parts: they score with one part and hand the results to another.

`compare()` scores runs with the retrieval core and compares them with `comparison`; it lives here, above
both, so that `comparison` compares results whatever scored them and never imports a scorer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragmetrics.comparison.pairs import check_settings, check_unique_names, compare_results
from ragmetrics.errors import InputError
from ragmetrics.options import Correction, CorrectionScope, QuerySet, Test
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.retrieval.utilities import AbstentionProbabilities
from ragmetrics.schema import Report

__all__ = ["compare"]


def compare(
    qrels: Qrels,
    runs: Sequence[Run],
    metrics: Sequence[str],
    test: Test | str = "fisher",
    correction: Correction | str = "holm",
    seed: int = 42,
    alpha: float = 0.05,
    permutations: int = 10_000,
    bootstrap_samples: int = 10_000,
    query_set: QuerySet | str = "qrels",
    *,
    confidence: float = 0.95,
    correction_scope: CorrectionScope | str = "metric",
    baseline: str | None = None,
    utilities: AbstentionProbabilities | Mapping[str, Mapping[str, float]] | None = None,
) -> Report:
    """Score each run against `qrels` with `evaluate` and compare them (see `compare_results`).

    `query_set` is passed to `evaluate`: "qrels" (the default) averages over the qrels' queries with a
    missing query scored 0; "intersection" compares over the queries every run has. Settings and run
    names are checked before any run is scored, so a typo fails at once even on large runs. `baseline`
    names the run every other run is compared with (default: every pair). `utilities` (per-passage abstention
    probabilities) are passed to `evaluate` for udcg.
    """
    from ragmetrics.retrieval.evaluate import evaluate

    align = "intersection" if query_set == "intersection" else "union"
    check_settings(
        run_count=len(runs),
        test=test,
        correction=correction,
        alpha=alpha,
        seed=seed,
        permutations=permutations,
        bootstrap_samples=bootstrap_samples,
        confidence=confidence,
        correction_scope=correction_scope,
        align=align,
    )
    # Anything that is not a Run is left for `evaluate` to reject with its own message.
    names = [run.name for run in runs if isinstance(run, Run)]
    check_unique_names(names)
    if baseline is not None and baseline not in names:
        raise InputError(
            f"baseline run {baseline!r} is not among the runs: {', '.join(names)}", field="baseline"
        )

    results = [evaluate(qrels, run, list(metrics), query_set=query_set, utilities=utilities) for run in runs]
    return compare_results(
        results,
        list(metrics),
        test=test,
        correction=correction,
        seed=seed,
        alpha=alpha,
        permutations=permutations,
        bootstrap_samples=bootstrap_samples,
        confidence=confidence,
        correction_scope=correction_scope,
        align=align,
        baseline=baseline,
    )
