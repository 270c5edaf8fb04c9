"""Compare runs: every pair of runs on every metric, with a paired test, a correction and a bootstrap CI.

Conventions (also written into each report's metadata.notes):
- Pairs: every (i, j) with i < j in the given order; the earlier run is the baseline, differences are
  candidate minus baseline.
- Alignment: the union of the runs' query ids (or their intersection with `align="intersection"`). A run
  lacking a query scores 0 there, and the query is listed in `metadata.missing_queries[run]`.
- Failures: a score of None (a judge failure) is never replaced. Each pair is compared over the queries
  where both runs have a value, and `n` says how many that is; descriptive statistics (over the aligned
  queries, so a missing query counts as 0 there too) count failures apart.
- Corrections apply within a family: by default one family per metric (all its pairs), or every pair x
  metric together with `correction_scope="all"`. A result is significant when p_corrected <= alpha.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragmetrics.comparison.align import aligned_query_ids, aligned_score_matrix
from ragmetrics.comparison.clusters import cluster_bootstrap_interval, cluster_index, cluster_means
from ragmetrics.comparison.corrections import adjust, check_correction
from ragmetrics.comparison.descriptive import describe
from ragmetrics.errors import InputError
from ragmetrics.options import (
    ALIGNMENTS,
    CORRECTION_SCOPES,
    TESTS,
    Align,
    Correction,
    CorrectionScope,
    Test,
    is_significant,
    lower_is_better,
)
from ragmetrics.schema import (
    ComparisonSettings,
    DescriptiveStats,
    PairComparison,
    Report,
    ReportMetadata,
    RunResult,
)

__all__ = ["check_settings", "check_test", "check_unique_names", "compare_results"]


@dataclass(frozen=True)
class _Column:
    """One pair x metric: where its differences sit and which queries it pairs over."""

    metric: str
    baseline: int
    candidate: int
    valid: NDArray[np.bool_]


def check_test(name: str) -> Test:
    if name not in TESTS:
        raise InputError(f"unknown test {name!r}; choose one of {', '.join(TESTS)}", field="test")
    return name  # type: ignore[return-value]


def check_settings(
    *,
    run_count: int,
    test: str,
    correction: str,
    alpha: float,
    seed: int,
    permutations: int,
    bootstrap_samples: int,
    confidence: float,
    correction_scope: str,
    align: str,
) -> ComparisonSettings:
    """Every setting checked at once and returned typed, so a caller can reject a bad one before it spends
    time scoring runs (`ragmetrics.api.compare`) and `compare_results` reads one object, not nine values."""
    if run_count < 2:
        raise InputError(f"comparing needs at least two runs, got {run_count}", field="runs")
    test_name = check_test(test)
    correction_name = check_correction(correction)
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be in (0, 1), got {alpha}", field="alpha")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must be in (0, 1), got {confidence}", field="confidence")
    if permutations < 1:
        raise InputError(f"permutations must be >= 1, got {permutations}", field="permutations")
    if bootstrap_samples < 1:
        raise InputError(
            f"bootstrap_samples must be >= 1, got {bootstrap_samples}", field="bootstrap_samples"
        )
    if correction_scope not in CORRECTION_SCOPES:
        raise InputError(
            f"unknown correction scope {correction_scope!r}; choose one of {', '.join(CORRECTION_SCOPES)}",
            field="correction_scope",
        )
    if align not in ALIGNMENTS:
        raise InputError(f"unknown alignment {align!r}; choose one of {', '.join(ALIGNMENTS)}", field="align")
    return ComparisonSettings(
        test=test_name,
        correction=correction_name,
        alpha=alpha,
        seed=seed,
        permutations=permutations,
        bootstrap_samples=bootstrap_samples,
        confidence=confidence,
        correction_scope=correction_scope,  # type: ignore[arg-type]
        align=align,  # type: ignore[arg-type]
    )


def check_unique_names(names: Sequence[str]) -> None:
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"run names must be unique to be compared; repeated: {duplicates}", field="name")


def _metrics_of(result: RunResult) -> list[str]:
    """A result's metrics in order: declared, else aggregated, else seen per query (a hand-built result)."""
    if result.metadata.metrics:
        return list(result.metadata.metrics)
    if result.aggregate:
        return list(result.aggregate)
    return list(dict.fromkeys(m for scores in result.per_query.values() for m in scores))


def _resolve_metrics(results: Sequence[RunResult], metrics: Sequence[str] | None) -> list[str]:
    wanted = list(dict.fromkeys(metrics)) if metrics else _metrics_of(results[0])
    if not wanted:
        raise InputError(
            f"run {results[0].name!r} lists no metrics; pass metrics explicitly", field="metrics"
        )
    for result in results:
        known = set(_metrics_of(result)) | set(result.aggregate)
        absent = [m for m in wanted if m not in known]
        if absent:
            raise InputError(
                f"run {result.name!r} has no scores for {absent}; it has {sorted(known)}", field="metrics"
            )
    return wanted


def _p_values(
    test: Test,
    diffs: NDArray[np.float64],
    columns: list[_Column],
    names: list[str],
    permutations: int,
    seed: int,
) -> list[float]:
    """p-value of every column of `diffs` (failed pairs zeroed: a zero never moves a randomization sum)."""
    if test == "fisher":
        from ragmetrics.comparison.fisher import fisher_p_values

        return [float(p) for p in fisher_p_values(diffs, permutations=permutations, seed=seed)]
    from ragmetrics.comparison.stats import paired_t_test, sign_test, wilcoxon_test

    function = {"t": paired_t_test, "wilcoxon": wilcoxon_test, "sign": sign_test}[test]
    out = []
    for index, column in enumerate(columns):
        try:
            out.append(function(diffs[column.valid, index]))
        except InputError as exc:
            raise InputError(
                f"{names[column.candidate]} vs {names[column.baseline]} on {column.metric}: {exc}"
            ) from exc
    return out


def _intervals(
    scores: list[NDArray[np.float64]],
    diffs: NDArray[np.float64],
    columns: list[_Column],
    metrics: list[str],
    samples: int,
    seed: int,
    confidence: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bootstrap CI of every column's mean difference.

    Columns pairing over every query share one resampling of the per-run score columns (the difference
    of resampled means is the resampled mean of differences, at half the work for several runs); a
    column with failures is resampled over its own valid queries, grouped with any column of the same mask.
    """
    from ragmetrics.comparison.bootstrap import bootstrap_means, percentile_interval

    low = np.empty(len(columns))
    high = np.empty(len(columns))
    full = [k for k, c in enumerate(columns) if c.valid.all()]
    if full:
        needed = sorted(
            {
                (r, metrics.index(columns[k].metric))
                for k in full
                for r in (columns[k].baseline, columns[k].candidate)
            }
        )
        position = {key: i for i, key in enumerate(needed)}
        matrix = np.column_stack([scores[r][:, m] for r, m in needed])
        means = bootstrap_means(matrix, samples=samples, seed=seed)
        sample_diffs = np.column_stack(
            [
                means[:, position[(columns[k].candidate, metrics.index(columns[k].metric))]]
                - means[:, position[(columns[k].baseline, metrics.index(columns[k].metric))]]
                for k in full
            ]
        )
        lo, hi = percentile_interval(sample_diffs, confidence)
        low[full], high[full] = lo, hi
    groups: dict[bytes, list[int]] = {}
    for k, column in enumerate(columns):
        if not column.valid.all():
            groups.setdefault(
                np.packbits(column.valid).tobytes() + bytes([column.valid.size % 8]), []
            ).append(k)
    for members in groups.values():
        valid = columns[members[0]].valid
        if not valid.any():
            continue
        means = bootstrap_means(diffs[valid][:, members], samples=samples, seed=seed)
        lo, hi = percentile_interval(means, confidence)
        low[members], high[members] = lo, hi
    return low, high


def _clustered(
    test: Test,
    diffs: NDArray[np.float64],
    columns: list[_Column],
    names: list[str],
    index: NDArray[np.int64],
    permutations: int,
    samples: int,
    seed: int,
    confidence: float,
) -> tuple[list[float], NDArray[np.float64], NDArray[np.float64]]:
    """p-value and interval of every column with conversations as the unit (`comparison.clusters`)."""
    from ragmetrics.comparison.stats import paired_p_value

    p_values: list[float] = []
    low = np.empty(len(columns))
    high = np.empty(len(columns))
    for k, column in enumerate(columns):
        d, groups = diffs[column.valid, k], index[column.valid]
        try:
            p_values.append(
                paired_p_value(test, list(cluster_means(d, groups)), seed=seed, permutations=permutations)
            )
        except InputError as exc:
            raise InputError(
                f"{names[column.candidate]} vs {names[column.baseline]} on {column.metric}: {exc}"
            ) from exc
        if d.size:
            low[k], high[k] = cluster_bootstrap_interval(
                d, groups, samples=samples, seed=seed, confidence=confidence
            )
        else:
            low[k] = high[k] = np.nan
    return p_values, low, high


def _effect_size(d: NDArray[np.float64]) -> float | None:
    """Paired Cohen's d; 0 when nothing moved, None for a constant non-zero shift (d is unbounded there)."""
    mean = float(np.mean(d)) if d.size else 0.0
    std = float(np.std(d, ddof=1)) if d.size >= 2 else 0.0
    if std == 0.0:
        return None if mean != 0.0 else 0.0
    return mean / std


def _aligned_scores(
    results: Sequence[RunResult], metrics: list[str], query_ids: list[str]
) -> tuple[list[NDArray[np.float64]], dict[str, list[str]]]:
    """Each run's queries x metrics matrix, and per run the queries it lacks (declared or absent)."""
    scores: list[NDArray[np.float64]] = []
    missing_queries: dict[str, list[str]] = {}
    wanted = set(query_ids)
    for result in results:
        matrix, missing = aligned_score_matrix(result, metrics, query_ids)
        scores.append(matrix)
        declared = [q for q in result.metadata.missing_queries if q in wanted]
        absent = list(dict.fromkeys([*declared, *missing]))
        if absent:
            missing_queries[result.name] = absent
    return scores, missing_queries


def _describe_all(
    results: Sequence[RunResult], scores: list[NDArray[np.float64]], metrics: list[str]
) -> tuple[dict[str, dict[str, DescriptiveStats]], list[str]]:
    """Descriptive statistics over the aligned queries; a metric whose every score failed gets a note."""
    descriptive: dict[str, dict[str, DescriptiveStats]] = {}
    notes: list[str] = []
    for result, matrix in zip(results, scores, strict=True):
        per_metric: dict[str, DescriptiveStats] = {}
        for m, metric in enumerate(metrics):
            stats = describe(
                [None if np.isnan(v) else float(v) for v in matrix[:, m]],
                not_applicable=result.not_applicable_count(metric),
            )
            if stats is None:
                notes.append(f"{result.name}: every {metric} score failed; no descriptive statistics")
            else:
                per_metric[metric] = stats
        descriptive[result.name] = per_metric
    return descriptive, notes


def pair_indices(count: int, baseline: int | None) -> list[tuple[int, int]]:
    """(baseline, candidate) index pairs: every run against one baseline, or every i < j when none is named."""
    if baseline is not None:
        return [(baseline, j) for j in range(count) if j != baseline]
    return [(i, j) for i in range(count) for j in range(i + 1, count)]


def _pair_columns(
    scores: list[NDArray[np.float64]], metrics: list[str], names: list[str], baseline: int | None
) -> tuple[list[_Column], NDArray[np.float64]]:
    """Every metric x pair and the queries x columns matrix of differences (0 where unpaired)."""
    columns: list[_Column] = []
    diff_list: list[NDArray[np.float64]] = []
    for m, metric in enumerate(metrics):
        for i, j in pair_indices(len(scores), baseline):
            a, b = scores[i][:, m], scores[j][:, m]
            valid = ~(np.isnan(a) | np.isnan(b))
            if not valid.any():
                raise InputError(
                    f"{names[j]} vs {names[i]} on {metric}: no query where both runs have a score",
                    field="per_query",
                )
            columns.append(_Column(metric, i, j, valid))
            diff_list.append(np.where(valid, b - a, 0.0))
    return columns, np.column_stack(diff_list)


def _correct(
    p_values: list[float], columns: list[_Column], correction: Correction, scope: str
) -> list[float]:
    """Adjusted p-values, each family (one metric's pairs, or everything) corrected on its own."""
    corrected = [0.0] * len(columns)
    families: dict[str, list[int]] = {}
    for k, column in enumerate(columns):
        families.setdefault(column.metric if scope == "metric" else "", []).append(k)
    for members in families.values():
        for k, p in zip(members, adjust([p_values[k] for k in members], correction), strict=True):
            corrected[k] = p
    return corrected


def compare_results(
    results: Sequence[RunResult],
    metrics: Sequence[str] | None = None,
    *,
    test: Test | str = "fisher",
    correction: Correction | str = "holm",
    seed: int = 42,
    alpha: float = 0.05,
    permutations: int = 10_000,
    bootstrap_samples: int = 10_000,
    confidence: float = 0.95,
    correction_scope: CorrectionScope | str = "metric",
    align: Align | str = "union",
    baseline: str | None = None,
    clusters: Mapping[str, str] | None = None,
) -> Report:
    """Compare runs that are already scored (retrieval or judge metrics) and return a `Report`.

    With `baseline` (a run name) every other run is compared with it alone: k - 1 pairs instead of
    k (k - 1) / 2, so a correction has fewer tests to pay for. With `clusters` (query id -> conversation
    id), turns of one conversation are one unit of the test, the interval and power (`comparison.clusters`).

    `metrics` defaults to the first run's metrics. See the module docstring for pairing, alignment,
    failure and correction conventions. Raises InputError for fewer than two runs, duplicate names, an
    unknown test / correction, a metric a run lacks, or a pair with no query both runs scored.
    """
    settings = check_settings(
        run_count=len(results),
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
    check_unique_names([r.name for r in results])
    test_name, correction_name = settings.test, settings.correction
    metric_list = _resolve_metrics(results, metrics)
    query_ids = aligned_query_ids(results, align)
    if not query_ids:
        raise InputError("the runs share no query to compare on", field="per_query")
    names = [r.name for r in results]

    scores, missing_queries = _aligned_scores(results, metric_list, query_ids)
    descriptive, notes = _describe_all(results, scores, metric_list)
    baseline_index = _baseline_index(baseline, names)
    columns, diffs = _pair_columns(scores, metric_list, names, baseline_index)

    index = cluster_index(query_ids, clusters)
    if index is None:
        p_values = _p_values(test_name, diffs, columns, names, permutations, seed)
        low, high = _intervals(scores, diffs, columns, metric_list, bootstrap_samples, seed, confidence)
    else:
        p_values, low, high = _clustered(test_name, diffs, columns, names, index, permutations,
                                         bootstrap_samples, seed, confidence)  # fmt: skip

    corrected = _correct(p_values, columns, correction_name, correction_scope)

    comparisons = []
    for k, column in enumerate(columns):
        m = metric_list.index(column.metric)
        a = scores[column.baseline][column.valid, m]
        b = scores[column.candidate][column.valid, m]
        d = diffs[column.valid, k]
        comparisons.append(
            PairComparison(
                metric=column.metric,
                baseline=names[column.baseline],
                candidate=names[column.candidate],
                n=int(column.valid.sum()),
                mean_baseline=float(np.mean(a)),
                mean_candidate=float(np.mean(b)),
                mean_diff=float(np.mean(d)),
                p_value=p_values[k],
                p_corrected=corrected[k],
                significant=is_significant(corrected[k], alpha),
                effect_size=_effect_size(d),
                ci_low=float(low[k]),
                ci_high=float(high[k]),
                # A win is a query where the candidate is better: lower for latency, tokens and cost.
                wins=int(np.count_nonzero(d < 0 if lower_is_better(column.metric) else d > 0)),
                ties=int(np.count_nonzero(d == 0)),
                losses=int(np.count_nonzero(d > 0 if lower_is_better(column.metric) else d < 0)),
                clusters=None if index is None else int(np.unique(index[column.valid]).size),
            )
        )

    for result in results:
        if result.metadata.extra_queries:
            notes.append(
                f"{result.name}: {len(result.metadata.extra_queries)} queries absent from the qrels were left out"
            )
    notes += _convention_notes(align, correction_scope, any(not c.valid.all() for c in columns), baseline)
    if index is not None:
        notes.append(
            f"turns clustered by conversation ({int(np.unique(index).size)} conversations, {len(query_ids)} "
            "turns): paired tests on conversation means of the differences, intervals by a cluster bootstrap"
        )
    metadata = ReportMetadata(
        query_count=len(query_ids),
        missing_queries=missing_queries,
        notes=notes,
        clusters=dict(clusters) if index is not None and clusters is not None else None,
    )
    if test_name != "fisher":
        settings = settings.model_copy(update={"permutations": None})
    return Report(
        runs=list(results),
        metrics=metric_list,
        settings=settings,
        descriptive=descriptive,
        comparisons=comparisons,
        metadata=metadata,
    )


def _baseline_index(baseline: str | None, names: list[str]) -> int | None:
    if baseline is None:
        return None
    if baseline not in names:
        raise InputError(
            f"baseline run {baseline!r} is not among the runs: {', '.join(names)}", field="baseline"
        )
    return names.index(baseline)


def _convention_notes(align: str, scope: str, any_failures: bool, baseline: str | None = None) -> list[str]:
    notes = [
        (
            f"pairs: every run against the baseline {baseline!r}; differences are candidate minus baseline"
            if baseline is not None
            else "pairs: every run against each earlier run (the baseline); differences are candidate minus baseline"
        ),
        (
            "queries: the union of the runs' queries; a run lacking a query scores 0 there"
            if align == "union"
            else "queries: only those every run has"
        ),
        (
            "correction: within each metric's family of pairs"
            if scope == "metric"
            else "correction: over every pair and metric together"
        ),
    ]
    if any_failures:
        notes.append("failed scores: each pair is compared over the queries both runs scored (see n)")
    return notes
