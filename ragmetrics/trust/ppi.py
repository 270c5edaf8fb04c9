"""Prediction-powered estimates of a judge metric's mean: the judge's scores on every sample, corrected by the
samples that people labelled.

Notation: n labelled samples with human label Y and judge score f(X); N further samples with judge scores
only, f(X~). Three intervals answer three questions:

- **judge-only**: mean of f over all n + N samples, normal interval. Narrow, and wrong by exactly the
  judge's bias: it estimates the judge's mean, not the people's.
- **classical**: mean of Y over the n labels, normal interval. Unbiased, but as wide as n allows.
- **PPI** (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered inference", Science 2023):
  theta = mean_N(f(X~)) - mean_n(f(X) - Y), the judge's mean over the unlabelled samples minus its average
  error on the labelled ones ("the rectifier"); variance var(f(X~))/N + var(f(X) - Y)/n. Unbiased whatever the
  judge's bias; narrower than classical when the judge tracks the labels.
- **PPI++** (Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference", 2023): the same with
  the judge's weight tuned, theta_lambda = mean_n(Y) + lambda * (mean_N(f(X~)) - mean_n(f(X))), with the
  variance-minimising lambda = cov(Y, f(X)) / ((1 + n/N) var(f(X))) estimated from the data (clipped to
  [0, 1]). lambda = 1 is PPI, lambda = 0 is classical, so PPI++ is never worse than either, asymptotically.

Intervals are normal (z) intervals, as in both papers' mean estimators; with very few labels (n < 30) they
are optimistic, and the report says so. The same estimators give the paired difference of two runs on
shared samples by applying them to the per-sample differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

__all__ = ["MeanEstimates", "NormalInterval", "estimate_mean", "z_value"]

SMALL_N = 30


@dataclass(frozen=True)
class NormalInterval:
    estimate: float
    low: float
    high: float
    se: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class MeanEstimates:
    """The four intervals for one metric (see the module doc); `lam` is PPI++'s tuned weight."""

    n_labeled: int
    n_unlabeled: int
    judge_only: NormalInterval
    classical: NormalInterval | None
    ppi: NormalInterval | None
    ppi_plus: NormalInterval | None
    lam: float | None


def z_value(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), not {confidence}")
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def _interval(estimate: float, variance: float, z: float) -> NormalInterval:
    se = math.sqrt(max(variance, 0.0))
    return NormalInterval(estimate=estimate, low=estimate - z * se, high=estimate + z * se, se=se)


def _vector(values: ArrayLike, what: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(array).all():
        raise ValueError(f"{what} holds a missing or non-finite value")
    return array


def estimate_mean(
    labeled_judge: ArrayLike,
    labeled_human: ArrayLike,
    unlabeled_judge: ArrayLike,
    *,
    confidence: float = 0.95,
) -> MeanEstimates:
    """Judge-only, classical, PPI and PPI++ estimates of the people's mean (module doc).

    `labeled_judge[i]` and `labeled_human[i]` are the judge's score and the human label of the same sample;
    `unlabeled_judge` holds the judge's scores on the samples nobody labelled. PPI needs at least 2 labels and
    2 unlabelled samples; with fewer, those intervals are None.
    """
    f_lab = _vector(labeled_judge, "labeled_judge")
    y = _vector(labeled_human, "labeled_human")
    f_unl = _vector(unlabeled_judge, "unlabeled_judge")
    if f_lab.shape != y.shape:
        raise ValueError(f"{f_lab.size} judge scores for {y.size} labels: they must pair up")
    n, big_n = y.size, f_unl.size
    z = z_value(confidence)
    every = np.concatenate([f_lab, f_unl])
    if every.size == 0:
        raise ValueError("no judge scores")
    judge_only = _interval(
        float(every.mean()), float(every.var(ddof=1)) / every.size if every.size > 1 else 0.0, z
    )
    classical = _interval(float(y.mean()), float(y.var(ddof=1)) / n, z) if n >= 2 else None
    if n < 2 or big_n < 2:
        return MeanEstimates(n, big_n, judge_only, classical, None, None, None)
    rectifier = f_lab - y
    ppi = _interval(
        float(f_unl.mean() - rectifier.mean()),
        float(f_unl.var(ddof=1)) / big_n + float(rectifier.var(ddof=1)) / n,
        z,
    )
    var_f = float(np.concatenate([f_lab, f_unl]).var(ddof=1))
    cov = float(np.cov(y, f_lab, ddof=1)[0, 1]) if n > 1 else 0.0
    lam = 0.0 if var_f <= 0 else min(1.0, max(0.0, cov / ((1.0 + n / big_n) * var_f)))
    ppi_plus = _interval(
        float(y.mean() + lam * (f_unl.mean() - f_lab.mean())),
        float((y - lam * f_lab).var(ddof=1)) / n + lam * lam * float(f_unl.var(ddof=1)) / big_n,
        z,
    )
    return MeanEstimates(n, big_n, judge_only, classical, ppi, ppi_plus, lam)
