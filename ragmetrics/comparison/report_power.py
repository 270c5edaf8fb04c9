"""Power of every compared pair of a report, and why a CI and a test may disagree at small n.

The differences are those the comparison tested (the same alignment, failed scores left out), so the figures
belong to the very pairs the report lists. Each pair is planned at the level its correction tests it at first
(`power.family_alpha`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ragmetrics.comparison.align import aligned_query_ids, aligned_score_matrix
from ragmetrics.comparison.clusters import cluster_index, cluster_means
from ragmetrics.comparison.power import DEFAULT_POWER, PairPower, exact_floor, family_alpha, pair_power
from ragmetrics.schema import PairComparison, PairPowerFigures, Report

__all__ = ["disagreement", "report_power"]


def _family_sizes(report: Report) -> dict[str, int]:
    """Comparisons per correction family: per metric, or all pairs together."""
    if report.settings.correction_scope == "all":
        return dict.fromkeys(report.metrics, len(report.comparisons))
    sizes: dict[str, int] = {}
    for pair in report.comparisons:
        sizes[pair.metric] = sizes.get(pair.metric, 0) + 1
    return sizes


def report_power(
    report: Report,
    *,
    power: float = DEFAULT_POWER,
    targets: Mapping[str, float] | None = None,
    metrics: Sequence[str] | None = None,
) -> list[PairPowerFigures]:
    """Every pair of `report` (of `metrics`, default all): MDE and the questions the target difference needs
    (`targets[metric]`, else the observed difference). Over turns of conversations (the report's
    `clusters`), n counts conversations and the spread is that of their mean differences."""
    settings = report.settings
    by_name = {r.name: r for r in report.runs}
    query_ids = aligned_query_ids(report.runs, settings.align)
    families = _family_sizes(report)
    index = cluster_index(query_ids, report.metadata.clusters)
    rows: list[PairPowerFigures] = []
    for pair in report.comparisons:
        if metrics is not None and pair.metric not in metrics:
            continue
        base, _ = aligned_score_matrix(by_name[pair.baseline], [pair.metric], query_ids)
        cand, _ = aligned_score_matrix(by_name[pair.candidate], [pair.metric], query_ids)
        a, b = base[:, 0], cand[:, 0]
        valid = ~(np.isnan(a) | np.isnan(b))
        alpha = family_alpha(settings.alpha, settings.correction, families.get(pair.metric, 1))
        target = (targets or {}).get(pair.metric)
        diffs = b[valid] - a[valid]
        if index is not None:  # conversations are the unit: their mean differences (comparison.clusters)
            diffs = cluster_means(diffs, index[valid])
        figures = pair_power(
            diffs,
            alpha=alpha,
            test=settings.test,
            power=power,
            target=target if target is not None else abs(pair.mean_diff) or None,
            permutations=settings.permutations,
        )
        rows.append(
            PairPowerFigures(
                metric=pair.metric,
                baseline=pair.baseline,
                candidate=pair.candidate,
                n=figures.n,
                nonzero=figures.nonzero,
                mean_diff=figures.mean_diff,
                sd_diff=figures.sd_diff,
                alpha=figures.alpha,
                power=figures.power,
                mde=figures.mde,
                target=figures.target,
                needed=figures.needed,
                min_p=figures.min_p,
                why=disagreement(pair, figures, settings.alpha),
            )
        )
    return rows


def disagreement(pair: PairComparison, figures: PairPower, alpha: float) -> str | None:
    """Why the bootstrap CI and the test point different ways for this pair, or None when they agree."""
    ci_excludes_zero = pair.ci_low > 0 or pair.ci_high < 0
    if ci_excludes_zero == pair.significant:
        return None
    if ci_excludes_zero:
        if figures.min_p > figures.alpha:
            return (
                f"the CI excludes 0 but the test cannot reach p <= {figures.alpha:.3g} with {figures.nonzero} "
                f"non-zero differences: its smallest possible p is {figures.min_p:.4g} (2 / 2^{figures.nonzero}). "
                f"At least {exact_floor(figures.alpha)} questions that differ are needed before any "
                "difference can be significant; trust the test, not the CI"
            )
        if pair.p_value <= alpha < pair.p_corrected:
            return (
                f"the CI excludes 0 and p = {pair.p_value:.4g} before correction, but the correction across the "
                f"comparisons raises it to {pair.p_corrected:.4g}; the CI is not corrected"
            )
        few = (
            f"only {figures.nonzero} of {pair.n} questions differ"
            if figures.nonzero < pair.n
            else f"n = {pair.n}"
        )
        return (
            f"the CI excludes 0 but p = {pair.p_corrected:.4g}: {few}, and a percentile bootstrap CI over so few "
            "differences is too narrow (it can only resample the values seen, so it misses the tails an exact "
            "test accounts for); the CI is approximate, the test exact: trust the test"
        )
    return (
        "significant by the test but the CI includes 0: the CI is the bootstrap's, at the uncorrected "
        "confidence level, and the two methods differ near the boundary; the difference is small against its "
        "spread"
    )
