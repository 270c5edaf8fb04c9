"""The trend test behind the drift flag: Mann-Kendall on the nightly means, with Sen's slope.

A slow drift (a metric losing a little every night) never trips a night-over-night gate: each step is within
noise. Mann-Kendall asks whether the series of nightly means is monotone beyond what chance ordering gives,
without assuming a linear or normal series. Without ties the p-value is exact (the null distribution of S is
that of the inversion count of a random permutation, the Mahonian numbers); with ties it uses the normal
approximation with the tie-corrected variance and a continuity correction (Kendall 1975). Sen's slope, the
median of pairwise slopes, says how much per night.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

MIN_NIGHTS = 5
"""With four nights even a perfectly monotone series has a two-sided p of 1/12: the test needs five."""


@dataclass(frozen=True)
class TrendTest:
    s: int
    p_value: float
    slope: float
    """Sen's slope: the median of (x_j - x_i) / (j - i) over i < j, in units per night."""
    exact: bool


@lru_cache(maxsize=64)
def _inversion_counts(n: int) -> tuple[int, ...]:
    """How many permutations of n items have k inversions, k = 0..n(n-1)/2 (Mahonian numbers)."""
    counts = [1]
    for m in range(2, n + 1):
        nxt = [0] * (len(counts) + m - 1)
        for k, c in enumerate(counts):
            for add in range(m):
                nxt[k + add] += c
        counts = nxt
    return tuple(counts)


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_kendall(values: Sequence[float]) -> TrendTest:
    """Two-sided Mann-Kendall test of a monotone trend in `values` (in time order, at least MIN_NIGHTS)."""
    x = [float(v) for v in values]
    n = len(x)
    if n < MIN_NIGHTS:
        raise ValueError(f"a trend test needs at least {MIN_NIGHTS} nights, got {n}")
    if not all(math.isfinite(v) for v in x):
        raise ValueError("a trend test needs finite values")
    s = 0
    slopes = []
    for i in range(n):
        for j in range(i + 1, n):
            d = x[j] - x[i]
            s += (d > 0) - (d < 0)
            slopes.append(d / (j - i))
    slopes.sort()
    mid = len(slopes) // 2
    slope = slopes[mid] if len(slopes) % 2 else (slopes[mid - 1] + slopes[mid]) / 2
    ties = [t for t in Counter(x).values() if t > 1]
    if not ties and n <= 60:
        counts = _inversion_counts(n)
        total = math.factorial(n)
        pairs = n * (n - 1) // 2
        # S = pairs - 2 * inversions; P(|S| >= |s|) summed over the inversion counts that give it.
        extreme = sum(c for k, c in enumerate(counts) if abs(pairs - 2 * k) >= abs(s))
        return TrendTest(s=s, p_value=min(1.0, extreme / total), slope=slope, exact=True)
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in ties)) / 18.0
    if var <= 0 or s == 0:
        return TrendTest(s=s, p_value=1.0, slope=slope, exact=False)
    z = (abs(s) - 1) / math.sqrt(var)
    return TrendTest(s=s, p_value=min(1.0, 2 * _normal_sf(z)), slope=slope, exact=False)
