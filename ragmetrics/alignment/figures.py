"""Agreement statistics of judge scores with people's labels, their bootstrap CIs, and the paired gain of one
set of scores over another on the same labels (what decides whether an alignment step is kept).

Both sides are in [0, 1]; decisions cut both at `threshold` (0.5). ROC AUC is of the scores against the
labels cut at `threshold`; Spearman and Kendall's tau-b are of the scores against the labels themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ragmetrics.trust.agreement import (
    decision_accuracy,
    decision_balanced_accuracy,
    decision_kappa,
    rank_correlation,
    roc_auc,
)

__all__ = ["STATISTICS", "Figure", "figure", "paired_gain", "statistic"]

STATISTICS = ("balanced_accuracy", "accuracy", "kappa", "roc_auc", "spearman", "kendall")
RESAMPLES = 1000

Stat = Callable[[NDArray[np.float64], NDArray[np.float64]], float]


def _cut(x: NDArray[np.float64], threshold: float) -> NDArray[np.bool_]:
    return x >= threshold


def statistic(name: str, threshold: float = 0.5) -> Stat:
    """The statistic `name` of (scores, labels), NaN where undefined (one class, constant scores)."""

    def on_decisions(fn: Callable[[NDArray[np.bool_], NDArray[np.bool_]], float]) -> Stat:
        return lambda s, y: fn(_cut(s, threshold), _cut(y, threshold))

    def auc(s: NDArray[np.float64], y: NDArray[np.float64]) -> float:
        return roc_auc(s, _cut(y, threshold).astype(np.int64))

    accuracy = on_decisions(decision_accuracy)
    balanced = on_decisions(decision_balanced_accuracy)
    kappa = on_decisions(decision_kappa)
    spearman, kendall = rank_correlation("spearman"), rank_correlation("kendall")
    table: dict[str, Stat] = {
        "balanced_accuracy": balanced,
        "accuracy": accuracy,
        "kappa": kappa,
        "roc_auc": auc,
        "spearman": spearman,
        "kendall": kendall,
    }
    if name not in table:
        raise ValueError(f"unknown statistic {name!r}; choose one of {', '.join(STATISTICS)}")
    return table[name]


class Figure:
    """A statistic's value with a percentile-bootstrap 95 % CI (None where undefined)."""

    __slots__ = ("high", "low", "value")

    def __init__(self, value: float | None, low: float | None, high: float | None) -> None:
        self.value, self.low, self.high = value, low, high

    def as_dict(self) -> dict[str, float | None]:
        return {"estimate": self.value, "low": self.low, "high": self.high}


def _clean(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _draws(n: int, seed: int) -> NDArray[np.intp]:
    return np.random.default_rng(seed).integers(0, n, size=(RESAMPLES, n))


def figure(
    name: str, scores: ArrayLike, labels: ArrayLike, *, threshold: float = 0.5, seed: int = 0
) -> Figure:
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    fn = statistic(name, threshold)
    value = fn(s, y) if len(s) else math.nan
    if not math.isfinite(value):
        return Figure(None, None, None)
    values = np.array([fn(s[i], y[i]) for i in _draws(len(s), seed)])
    values = values[np.isfinite(values)]
    if values.size < RESAMPLES // 2:
        return Figure(value, None, None)
    low, high = np.quantile(values, [0.025, 0.975])
    return Figure(value, float(low), float(high))


def paired_gain(
    name: str,
    before: ArrayLike,
    after: ArrayLike,
    labels: ArrayLike,
    *,
    threshold: float = 0.5,
    seed: int = 0,
) -> Figure:
    """statistic(after) - statistic(before) on the same labels, with a paired bootstrap 95 % CI (the same
    resampled labels for both sides, so what the two share cancels out)."""
    b, a = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    fn = statistic(name, threshold)
    value = fn(a, y) - fn(b, y) if len(y) else math.nan
    if not math.isfinite(value):
        return Figure(None, None, None)
    diffs = np.array([fn(a[i], y[i]) - fn(b[i], y[i]) for i in _draws(len(y), seed)])
    diffs = diffs[np.isfinite(diffs)]
    if diffs.size < RESAMPLES // 2:
        return Figure(value, None, None)
    low, high = np.quantile(diffs, [0.025, 0.975])
    return Figure(_clean(value), float(low), float(high))


def confusion(scores: ArrayLike, labels: ArrayLike, threshold: float = 0.5) -> dict[str, int]:
    """Counts of (people, judge) decisions at `threshold`: yes/yes, yes/no, no/yes, no/no."""
    s, y = np.asarray(scores) >= threshold, np.asarray(labels) >= threshold
    return {
        "people_yes_judge_yes": int((y & s).sum()),
        "people_yes_judge_no": int((y & ~s).sum()),
        "people_no_judge_yes": int((~y & s).sum()),
        "people_no_judge_no": int((~y & ~s).sum()),
    }
