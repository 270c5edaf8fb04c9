"""Turns of one conversation are not independent questions: statistics over them are clustered.

Two turns of the same conversation share its topic, its retrieved material and the user's way of asking, so
their score differences are correlated. A test or an interval that treats every turn as an independent
question counts the same evidence several times: its p-values are too small and its intervals too narrow
(the simulation in tests/comparison/test_clusters.py: turn-level 95 % intervals cover the true difference
far less often than 95 % when conversations differ, clustered ones keep ~95 %).

So, when the queries come in clusters (conversation id per turn):
- the paired test runs on the clusters' mean differences (one value per conversation: the unit that is
  independent), with the same test the comparison names (Fisher's randomization flips a whole
  conversation's sign; t, Wilcoxon and sign test the conversation means);
- the interval of the mean difference is a cluster bootstrap: conversations are drawn with replacement and
  the mean over all their turns is recomputed (the point estimate stays the mean over turns);
- power and the minimum detectable difference count conversations, with the spread of their means.

A query without a cluster is a cluster of its own, so a dataset without conversations is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["cluster_bootstrap_interval", "cluster_index", "cluster_means"]


def cluster_index(query_ids: Sequence[str], clusters: Mapping[str, str] | None) -> NDArray[np.int64] | None:
    """Per query, the number of its cluster (in first-seen order); None when no cluster holds two queries
    (nothing to cluster: every statistic is the per-query one)."""
    if not clusters:
        return None
    numbers: dict[str, int] = {}
    index = np.empty(len(query_ids), dtype=np.int64)
    for i, qid in enumerate(query_ids):
        key = clusters.get(qid)
        label = f"\x00{qid}" if key is None else key  # no cluster: a cluster of its own
        index[i] = numbers.setdefault(label, len(numbers))
    return index if len(numbers) < len(query_ids) else None


def cluster_means(values: NDArray[np.float64], index: NDArray[np.int64]) -> NDArray[np.float64]:
    """The mean of `values` within each cluster present in `index` (clusters in first-seen order)."""
    _, first, inverse = np.unique(index, return_index=True, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    order = np.argsort(first, kind="stable")
    means: NDArray[np.float64] = (sums / counts)[order]
    return means


def cluster_bootstrap_interval(
    values: NDArray[np.float64],
    index: NDArray[np.int64],
    *,
    samples: int,
    seed: int,
    confidence: float,
) -> tuple[float, float]:
    """Percentile interval of the mean over queries when whole clusters are resampled with replacement."""
    _, inverse = np.unique(index, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse).astype(np.float64)
    clusters = sums.size
    rng = np.random.default_rng(seed)
    tail = (1.0 - confidence) / 2.0
    means = np.empty(samples)
    step = max(1, 4_000_000 // max(clusters, 1))  # bounded memory: at most ~32 MB of draws at once
    for start in range(0, samples, step):
        stop = min(samples, start + step)
        draws = rng.integers(0, clusters, size=(stop - start, clusters))
        means[start:stop] = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)
