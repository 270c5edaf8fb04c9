"""Discriminative power (Sakai, SIGIR 2006): the share of run pairs a metric separates significantly.

A metric that tracks the answers but separates no pair of systems on the questions a team has cannot decide
anything for them; one that separates every pair may be measuring noise the answers do not feel. Each pair of
runs is tested over the questions both have a value for (paired test, the project's tests), the p-values of
all pairs of one metric form one family under the chosen correction, and a pair counts as separated when its
corrected p is at most alpha (`options.is_significant`, the project's one definition).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragmetrics.comparison.corrections import adjust
from ragmetrics.comparison.stats import paired_p_value
from ragmetrics.errors import InputError
from ragmetrics.options import is_significant

__all__ = ["DiscriminativePower", "discriminative_power"]


@dataclass(frozen=True)
class DiscriminativePower:
    """Of `pairs` run pairs (each with at least 2 shared questions), `separated` are significant after the
    correction; `share` is None when no pair could be tested. `untestable` names the pairs with too few
    shared questions (counted apart, never as not separated)."""

    pairs: int
    separated: int
    share: float | None
    untestable: tuple[tuple[int, int], ...] = ()


def discriminative_power(
    scores: NDArray[np.float64],
    *,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 42,
    permutations: int = 10_000,
) -> DiscriminativePower:
    """`scores` is questions x runs (NaN: no value); every pair of runs is tested over its shared questions."""
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 2:
        raise InputError(f"discriminative power: scores must be questions x runs, got shape {values.shape}")
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be in (0, 1), got {alpha}", field="alpha")
    runs = values.shape[1]
    p_values: list[float] = []
    untestable: list[tuple[int, int]] = []
    for i in range(runs):
        for j in range(i + 1, runs):
            both = ~np.isnan(values[:, i]) & ~np.isnan(values[:, j])
            if int(both.sum()) < 2:
                untestable.append((i, j))
                continue
            diffs = values[both, j] - values[both, i]
            p_values.append(paired_p_value(test, diffs.tolist(), seed=seed, permutations=permutations))
    if not p_values:
        return DiscriminativePower(0, 0, None, tuple(untestable))
    corrected = adjust(p_values, correction)
    separated = sum(1 for p in corrected if is_significant(p, alpha))
    return DiscriminativePower(len(p_values), separated, separated / len(p_values), tuple(untestable))
