"""Systems run with several seeds (or cross-validation folds): is one better, beyond the luck of the seed?

Comparing one seed of A with one seed of B confuses the seed's luck with the system; pooling every seed's
queries as if they were more queries overstates the evidence. Here each system is a group of runs over the
same queries, and for each metric and pair of systems:

- the point estimate is the difference of the means over queries and seeds;
- the test respects the pairing: each system's per-query score is averaged over its seeds, and the usual
  paired test (Fisher randomisation by default) runs over queries, the unit that is paired (and the
  variation between seeds then widens each query's difference as it should);
- the confidence interval comes from a hierarchical (two-level) bootstrap: resample the queries (the same
  resample for both systems, keeping the pairing), then resample each system's seeds independently, and
  take the difference of the means (Davison and Hinkley, 'Bootstrap methods', 1997, 3.8; the seed level as
  in Dror et al., 'Deep dominance', ACL 2019, and Bouthillier et al., 'Accounting for variance in machine
  learning benchmarks', MLSys 2021);
- the spread of each system's per-seed means is reported, so a reader sees how much a single seed moves.

p-values are corrected within each metric's family of pairs (Holm by default). Only queries every run of
both systems scored enter a pair (a failed judge score is never filled in).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from ragmetrics.comparison.corrections import adjust
from ragmetrics.comparison.stats import paired_p_value
from ragmetrics.errors import InputError
from ragmetrics.options import Correction, Test, is_significant
from ragmetrics.schema import Report, RunResult, SeedPairComparison

__all__ = ["compare_seed_groups", "hierarchical_bootstrap", "seed_mean_result", "seed_report"]

_CHUNK = 500


def hierarchical_bootstrap(
    baseline: NDArray[np.float64],
    candidate: NDArray[np.float64],
    *,
    samples: int = 10_000,
    seed: int = 42,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of mean(candidate) - mean(baseline) for [queries x seeds] matrices: queries
    resampled together, then each matrix's seeds resampled on their own (module doc)."""
    if baseline.shape[0] != candidate.shape[0] or baseline.ndim != 2 or candidate.ndim != 2:
        raise InputError("the two systems' score matrices need the same queries as rows")
    n = baseline.shape[0]
    rng = np.random.default_rng(seed)
    draws = np.empty(samples, dtype=np.float64)
    for start in range(0, samples, _CHUNK):
        size = min(_CHUNK, samples - start)
        query_weights = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(size)]) / n
        means = []
        for matrix in (baseline, candidate):
            s = matrix.shape[1]
            seed_weights = (
                np.stack([np.bincount(rng.integers(0, s, s), minlength=s) for _ in range(size)]) / s
            )
            per_query = matrix @ seed_weights.T  # [queries x samples]: each sample's seed-averaged scores
            means.append(np.einsum("bq,qb->b", query_weights, per_query))
        draws[start : start + size] = means[1] - means[0]
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def _matrix(runs: Sequence[RunResult], queries: list[str], metric: str) -> NDArray[np.float64]:
    return np.asarray(
        [[float(r.per_query[q][metric] or 0.0) for r in runs] for q in queries], dtype=np.float64
    )


def compare_seed_groups(
    groups: Mapping[str, Sequence[RunResult]],
    metrics: Sequence[str],
    *,
    test: Test = "fisher",
    correction: Correction = "holm",
    alpha: float = 0.05,
    seed: int = 42,
    permutations: int = 10_000,
    bootstrap_samples: int = 10_000,
    confidence: float = 0.95,
    p_values: Mapping[tuple[str, str, str], float] | None = None,
) -> list[SeedPairComparison]:
    """Every pair of systems (in the given order; the earlier is the baseline) on every metric.

    `p_values` ((metric, baseline, candidate) -> p) are p-values already computed on the same seed-averaged
    differences (`seed_report` takes its report's), so the test is not run twice."""
    names = list(groups)
    if len(names) < 2:
        raise InputError(f"seed comparisons need at least two systems, got {len(names)}", field="groups")
    for name, runs in groups.items():
        if not runs:
            raise InputError(f"system {name!r} has no runs", field="groups")
        for run in runs:
            absent = [
                m
                for m in metrics
                if m not in run.metadata.metrics and not any(m in s for s in run.per_query.values())
            ]
            if absent:
                raise InputError(f"run {run.name!r} of {name!r} has no scores for {absent}", field="metrics")
    out: list[SeedPairComparison] = []
    for metric in metrics:
        family: list[tuple[SeedPairComparison, float]] = []
        for a, b in itertools.combinations(names, 2):
            runs = [*groups[a], *groups[b]]
            shared = [
                q
                for q in runs[0].per_query
                if all(r.per_query.get(q, {}).get(metric) is not None for r in runs)
            ]
            if len(shared) < 2:
                raise InputError(
                    f"{metric}: {a} and {b} share {len(shared)} query scored by every seed; need at least 2",
                    field="groups",
                )
            base, cand = _matrix(groups[a], shared, metric), _matrix(groups[b], shared, metric)
            diffs = cand.mean(axis=1) - base.mean(axis=1)
            if p_values is not None:
                p = p_values[(metric, a, b)]
            else:
                p = paired_p_value(test, diffs.tolist(), seed=seed, permutations=permutations)
            low, high = hierarchical_bootstrap(
                base, cand, samples=bootstrap_samples, seed=seed, confidence=confidence
            )
            figures = SeedPairComparison(
                metric=metric,
                baseline=a,
                candidate=b,
                seeds_baseline=[r.name for r in groups[a]],
                seeds_candidate=[r.name for r in groups[b]],
                n=len(shared),
                mean_baseline=float(base.mean()),
                mean_candidate=float(cand.mean()),
                mean_diff=float(cand.mean() - base.mean()),
                seed_sd_baseline=float(base.mean(axis=0).std(ddof=1)) if base.shape[1] > 1 else 0.0,
                seed_sd_candidate=float(cand.mean(axis=0).std(ddof=1)) if cand.shape[1] > 1 else 0.0,
                test=test,
                p_value=p,
                p_corrected=p,
                significant=False,
                ci_low=low,
                ci_high=high,
            )
            family.append((figures, p))
        corrected = adjust([p for _, p in family], correction)
        for (figures, _), p_adj in zip(family, corrected, strict=True):
            out.append(
                figures.model_copy(update={"p_corrected": p_adj, "significant": is_significant(p_adj, alpha)})
            )
    return out


def seed_mean_result(name: str, runs: Sequence[RunResult], metrics: Sequence[str]) -> RunResult:
    """One system's runs over several seeds as one result: per query, the mean over its seeds; a query some
    seed did not score stays unscored (None), never 0 and never the mean of the others (which would let
    a failing seed change what is averaged)."""
    from ragmetrics.schema import RunMetadata

    queries = list(dict.fromkeys(q for run in runs for q in run.per_query))
    per_query: dict[str, dict[str, float | None]] = {}
    for q in queries:
        scores: dict[str, float | None] = {}
        for metric in metrics:
            values = [v for run in runs if (v := run.per_query.get(q, {}).get(metric)) is not None]
            scores[metric] = float(np.mean(values)) if len(values) == len(runs) else None
        per_query[q] = scores
    result = RunResult(
        name=name,
        per_query=per_query,
        metadata=RunMetadata(
            kind=runs[0].metadata.kind,
            metrics=list(metrics),
            metric_settings={"seeds": [r.name for r in runs], "per_query": "mean over the seeds"},
            num_queries=len(queries),
        ),
    )
    result.recompute_aggregate()
    return result


def seed_report(
    groups: Mapping[str, Sequence[RunResult]],
    metrics: Sequence[str],
    *,
    test: Test = "fisher",
    correction: Correction = "holm",
    alpha: float = 0.05,
    seed: int = 42,
    permutations: int = 10_000,
    bootstrap_samples: int = 10_000,
) -> Report:
    """A comparison `Report` of systems run with several seeds: each system's runs become one run whose
    per-query score is the seed mean; the paired tests run on those (over the queries every seed of both
    systems scored), and each pair's CI is the hierarchical bootstrap's, which the seed spread widens.
    `metadata.seed_comparisons` keeps the seeds and their spread."""
    from ragmetrics.comparison.pairs import compare_results

    means = [seed_mean_result(name, runs, metrics) for name, runs in groups.items()]
    report = compare_results(
        means, metrics, test=test, correction=correction, seed=seed, alpha=alpha,
        permutations=permutations, bootstrap_samples=bootstrap_samples, align="intersection",
    )  # fmt: skip
    # One test per pair, the report's (over the same seed-averaged queries); its CI the hierarchical one.
    figures = compare_seed_groups(
        groups, metrics, test=test, correction=correction, alpha=alpha, seed=seed,
        permutations=permutations, bootstrap_samples=bootstrap_samples,
        p_values={(c.metric, c.baseline, c.candidate): c.p_value for c in report.comparisons},
    )  # fmt: skip
    by_pair = {(f.metric, f.baseline, f.candidate): f for f in figures}
    report.comparisons = [
        c.model_copy(update={"ci_low": by_pair[(c.metric, c.baseline, c.candidate)].ci_low,
                             "ci_high": by_pair[(c.metric, c.baseline, c.candidate)].ci_high})
        for c in report.comparisons
    ]  # fmt: skip
    report.metadata.seed_comparisons = figures
    report.metadata.notes.append(
        "each run is a system's seeds averaged per query ("
        + "; ".join(f"{name}: {len(runs)} seeds" for name, runs in groups.items())
        + "); the CIs are hierarchical bootstraps over queries and seeds"
    )
    return report
