"""A run's mean with its confidence interval, from the report's descriptive statistics (one definition, for
every place that shows a mean with its interval: the PR summary, MLflow)."""

from __future__ import annotations

import math

from scipy import stats

from ragmetrics.schema import DescriptiveStats

__all__ = ["mean_interval"]


def mean_interval(d: DescriptiveStats, confidence: float = 0.95) -> tuple[float, float] | None:
    """The t interval of the mean over the scored queries: mean +- t_{n-1} std / sqrt(n); None below two."""
    if d.count < 2 or not math.isfinite(d.std):
        return None
    half = float(stats.t.ppf(0.5 + confidence / 2, d.count - 1)) * d.std / math.sqrt(d.count)
    return d.mean - half, d.mean + half
