"""Windows of live traffic, and the rule that says a window is worse than the baseline window.

A trace belongs to the window its root span started in (UTC, aligned to the epoch, so hours start on the hour
and days at midnight). Two windows hold different traces, so the comparison is unpaired: the difference of the
two means with a percentile bootstrap interval, resampling whole conversations (`session.id`) when traces are
turns of one (turns of a conversation rise and fall together: resampling them one by one makes the interval
too narrow and alerts on noise), or traces one by one (the naive rule) otherwise. A window alerts on a metric
when its mean is below the baseline's by more than `max_drop` and the interval of the difference lies below 0:
the gate's rule, for unpaired samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

__all__ = ["WindowComparison", "compare_windows", "window_end", "window_of", "window_start"]

RESAMPLES = 2000
_FORMAT = "%Y-%m-%dT%H-%MZ"


def window_of(started_s: float, seconds: int) -> str:
    start = math.floor(started_s / seconds) * seconds
    return datetime.fromtimestamp(start, UTC).strftime(_FORMAT)


def window_start(key: str) -> float:
    return datetime.strptime(key, _FORMAT).replace(tzinfo=UTC).timestamp()


def window_end(key: str, seconds: int) -> float:
    return window_start(key) + seconds


@dataclass(frozen=True)
class WindowComparison:
    metric: str
    baseline_mean: float
    current_mean: float
    difference: float
    low: float
    high: float
    n_baseline: int
    n_current: int
    clusters_current: int
    alert: bool

    def describe(self) -> str:
        return (
            f"{self.metric}: {self.current_mean:.3f} against the baseline window's {self.baseline_mean:.3f} "
            f"({self.difference:+.3f}, {100 * (1 - 0.05):.0f} % interval [{self.low:+.3f}, {self.high:+.3f}]; "
            f"{self.n_current} traces in {self.clusters_current} conversations)"
        )


def _grouped(values: Sequence[tuple[float, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster: the sum of its values and their count."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for value, cluster in values:
        sums[cluster] = sums.get(cluster, 0.0) + value
        counts[cluster] = counts.get(cluster, 0) + 1
    keys = sorted(sums)
    return np.array([sums[k] for k in keys]), np.array([counts[k] for k in keys], dtype=np.float64)


def _boot_means(sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, len(sums), size=(RESAMPLES, len(sums)))
    out: np.ndarray = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    return out


def compare_windows(
    metric: str,
    current: Sequence[tuple[float, str]],
    baseline: Sequence[tuple[float, str]],
    *,
    max_drop: float,
    alpha: float,
    seed: int = 0,
    higher_is_better: bool = True,
) -> WindowComparison:
    """`current` and `baseline` are (value, cluster) pairs; a cluster is the trace's conversation (clustered
    rule) or the trace itself (naive rule)."""
    if not current or not baseline:
        raise ValueError("both windows need scored traces")
    rng = np.random.default_rng(seed)
    cur_sums, cur_counts = _grouped(current)
    base_sums, base_counts = _grouped(baseline)
    cur_mean = float(cur_sums.sum() / cur_counts.sum())
    base_mean = float(base_sums.sum() / base_counts.sum())
    diffs = _boot_means(cur_sums, cur_counts, rng) - _boot_means(base_sums, base_counts, rng)
    low, high = (float(x) for x in np.quantile(diffs, [alpha / 2, 1 - alpha / 2]))
    diff = cur_mean - base_mean
    worse = -diff if higher_is_better else diff
    below = high < 0 if higher_is_better else low > 0
    return WindowComparison(
        metric=metric, baseline_mean=base_mean, current_mean=cur_mean, difference=diff, low=low, high=high,
        n_baseline=int(base_counts.sum()), n_current=int(cur_counts.sum()), clusters_current=len(cur_sums),
        alert=worse > max_drop and below,
    )  # fmt: skip
