"""Folds of labelled samples, stratified by label, so every fold holds each label in the share the labels do."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["stratified_folds", "stratified_subsample"]


def _strata(labels: Sequence[float]) -> dict[float, list[int]]:
    groups: dict[float, list[int]] = {}
    for i, value in enumerate(labels):
        groups.setdefault(round(float(value), 3), []).append(i)
    return groups


def stratified_folds(labels: Sequence[float], folds: int, seed: int) -> NDArray[np.int64]:
    """Fold index (0..folds-1) of each label: within each label value, shuffled with `seed` and dealt round
    robin, continuing the deal across values so fold sizes differ by at most one."""
    rng = np.random.default_rng(seed)
    out = np.empty(len(labels), dtype=np.int64)
    position = 0
    for key in sorted(_strata(labels)):
        members = rng.permutation(_strata(labels)[key])
        for i in members:
            out[i] = position % folds
            position += 1
    return out


def stratified_subsample(
    indices: Sequence[int], labels: Sequence[float], share: float, seed: int
) -> list[int]:
    """About `share` of `indices`, the same share of each label value (at least one of each)."""
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for members in _strata([labels[i] for i in indices]).values():
        picked = rng.permutation(members)[: max(1, round(share * len(members)))]
        chosen.extend(indices[int(j)] for j in picked)
    return sorted(chosen)
