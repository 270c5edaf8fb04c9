"""Tukey's honestly significant difference: every pair of k runs at once, one family per metric.

Pairwise tests with Holm or Bonferroni correct k (k - 1) / 2 p-values after the fact; Tukey's HSD builds the
family into the test. With m_i the mean of run i over the n queries, the error mean square MSE and its
degrees of freedom df:

    q_ij = |m_i - m_j| / sqrt(MSE / n),   p_ij = P(Q_{k, df} >= q_ij)   (Q: the studentized range)
    simultaneous CI: (m_j - m_i) +- q_{1-alpha; k, df} sqrt(MSE / n)

Blocked (the default, for IR: Carterette, 'Multiple testing in statistical analysis of systems-based
information retrieval experiments', ACM TOIS 30(1), 2012; Sakai, 2014): queries are blocks of a two-way
ANOVA without replication, so the variation between queries, which every run shares, leaves the error:
MSE = sum_ij (x_ij - m_i - t_j + m)^2 / ((k - 1)(n - 1)). Unblocked: one-way ANOVA, MSE = sum_ij (x_ij -
m_i)^2 / (k (n - 1)), which is what scipy.stats.tukey_hsd and ranx compute (the pairing of queries unused).

Only queries every run scored enter (complete blocks); a failed judge score is never filled in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.schema import RunResult, TukeyPair

__all__ = ["tukey_hsd", "tukey_pairs"]


def tukey_hsd(
    scores: NDArray[np.float64], *, alpha: float = 0.05, blocked: bool = True
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, int]:
    """For a [queries x runs] matrix: the p-value of every pair (k x k), the runs' means, the half-width of
    the simultaneous CI, and the error degrees of freedom."""
    from scipy.stats import studentized_range

    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"Tukey's HSD needs a [queries x runs] matrix, got shape {x.shape}")
    n, k = x.shape
    if k < 2:
        raise InputError(f"Tukey's HSD compares at least 2 runs, got {k}")
    if n < 2:
        raise InputError(f"Tukey's HSD needs at least 2 queries every run scored, got {n}")
    if not np.all(np.isfinite(x)):
        raise InputError("Tukey's HSD: scores contain NaN or infinity")
    means = x.mean(axis=0)
    if blocked:
        residual = x - means[None, :] - x.mean(axis=1)[:, None] + x.mean()
        df = (k - 1) * (n - 1)
    else:
        residual = x - means[None, :]
        df = k * (n - 1)
    mse = float(np.sum(residual**2)) / df
    se = math.sqrt(mse / n)
    diff = np.abs(means[:, None] - means[None, :])
    if se == 0.0:
        # No error variance: any difference is certain, none is no evidence of one.
        p = np.where(diff > 0, 0.0, 1.0)
        half = 0.0
    else:
        p = np.asarray(studentized_range.sf(diff / se, k, df), dtype=np.float64)
        half = float(studentized_range.ppf(1 - alpha, k, df)) * se
    p = np.clip(p, 0.0, 1.0)
    np.fill_diagonal(p, 1.0)
    return p, means, half, df


def tukey_pairs(
    results: Sequence[RunResult],
    metrics: Sequence[str],
    *,
    alpha: float = 0.05,
    blocked: bool = True,
) -> list[TukeyPair]:
    """Tukey's HSD over `results` for each metric: every pair (i < j; i the baseline), on the queries every
    run scored."""
    if len(results) < 2:
        raise InputError(f"Tukey's HSD compares at least 2 runs, got {len(results)}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie in (0, 1), got {alpha}", field="alpha")
    out: list[TukeyPair] = []
    for metric in metrics:
        shared = [
            q
            for q in results[0].per_query
            if all(r.per_query.get(q, {}).get(metric) is not None for r in results)
        ]
        matrix = np.asarray(
            [[float(r.per_query[q][metric] or 0.0) for r in results] for q in shared], dtype=np.float64
        ).reshape(len(shared), len(results))
        try:
            p, means, half, df = tukey_hsd(matrix, alpha=alpha, blocked=blocked)
        except InputError as exc:
            raise InputError(f"{metric}: {exc.what}", field="metrics") from exc
        for i in range(len(results)):
            for j in range(i + 1, len(results)):
                diff = float(means[j] - means[i])
                out.append(
                    TukeyPair(
                        metric=metric,
                        baseline=results[i].name,
                        candidate=results[j].name,
                        n=len(shared),
                        mean_baseline=float(means[i]),
                        mean_candidate=float(means[j]),
                        mean_diff=diff,
                        p_value=float(p[i, j]),
                        significant=bool(p[i, j] <= alpha),
                        ci_low=diff - half,
                        ci_high=diff + half,
                        blocked=blocked,
                        df=df,
                    )
                )
    return out
