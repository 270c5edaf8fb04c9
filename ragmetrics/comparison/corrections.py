"""Multiple-testing corrections of a family of p-values (family-wise error rate control).

Holm's step-down procedure is uniformly more powerful than Bonferroni and needs no independence
assumption, so it is the default. Adjusted p-values are reported (compare them with alpha directly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragmetrics.errors import InputError
from ragmetrics.options import CORRECTIONS, Correction


def check_correction(name: str) -> Correction:
    if name not in CORRECTIONS:
        raise InputError(
            f"unknown correction {name!r}; choose one of {', '.join(CORRECTIONS)}", field="correction"
        )
    return name  # type: ignore[return-value]


def _check(p_values: Sequence[float]) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InputError(f"p-values must be a flat list of numbers in [0, 1], got {list(p_values)!r}")
    return p


def bonferroni(p_values: Sequence[float]) -> list[float]:
    """min(1, m * p) for a family of m tests."""
    p = _check(p_values)
    return [float(v) for v in np.minimum(1.0, p * p.size)]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni: the i-th smallest p (1-based) times (m - i + 1), made monotone, capped at 1."""
    p = _check(p_values)
    m = p.size
    order = np.argsort(p, kind="mergesort")
    scaled = p[order] * (m - np.arange(m))
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate(scaled)) if m else scaled
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = adjusted_sorted
    return [float(v) for v in adjusted]


def adjust(p_values: Sequence[float], method: Correction | str) -> list[float]:
    """Adjusted p-values of one family under `method` (holm, bonferroni or none)."""
    method = check_correction(method)
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    return [float(v) for v in _check(p_values)]
