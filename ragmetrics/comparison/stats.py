"""Two-sided paired tests on per-query differences (candidate minus baseline).

Each test takes the vector of paired differences and returns a p-value. The formulas follow the
textbook definitions and agree with scipy.stats (`ttest_rel`, `wilcoxon` with its default zero handling,
`binomtest`) to rounding; the degenerate case scipy answers with NaN (every difference zero) returns
p = 1 here, because "no difference at all" is not evidence of one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError

WilcoxonMethod = Literal["auto", "exact", "approx"]

# scipy's cut-offs for method="auto": the exact null distribution up to 50 pairs without ties or zeros;
# with ties or zeros, complete enumeration of the 2^n sign flips up to 13 pairs; otherwise the normal
# approximation with tie correction.
EXACT_MAX_N = 50
ENUMERATE_MAX_N = 13
# method="exact" on request: the subset-sum table grows as n^3; beyond this the normal approximation is
# accurate to far below any alpha anyone uses.
EXACT_LIMIT = 1000


def _as_diffs(diffs: NDArray[np.float64] | list[float], test: str) -> NDArray[np.float64]:
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 1:
        raise InputError(f"{test}: differences must be a 1-d array, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise InputError(f"{test}: differences contain NaN or infinity")
    return d


def paired_t_test(diffs: NDArray[np.float64] | list[float]) -> float:
    """Student's paired t-test: t = mean(d) / (sd(d) / sqrt(n)) on n - 1 degrees of freedom."""
    from scipy.special import stdtr

    d = _as_diffs(diffs, "t-test")
    n = d.size
    if n < 2:
        raise InputError(f"t-test needs at least 2 paired queries, got {n}")
    mean = float(np.mean(d))
    var = float(np.var(d, ddof=1))
    if var == 0.0:
        # Every difference equal: p = 1 when they are all zero, otherwise the shift is certain.
        return 1.0 if mean == 0.0 else 0.0
    t = mean / math.sqrt(var / n)
    return float(min(1.0, 2.0 * stdtr(n - 1, -abs(t))))


def sign_test(diffs: NDArray[np.float64] | list[float]) -> float:
    """Exact binomial test on the number of positive among the non-zero differences (zeros dropped)."""
    from scipy.special import bdtr

    d = _as_diffs(diffs, "sign test")
    positive = int(np.count_nonzero(d > 0))
    n = positive + int(np.count_nonzero(d < 0))
    if n == 0:
        return 1.0
    k = min(positive, n - positive)
    if 2 * k == n:
        return 1.0
    return float(min(1.0, 2.0 * bdtr(k, n, 0.5)))


def _rank_abs(nonzero: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Average ranks of |d| (1-based) and the size of every tie group."""
    a = np.abs(nonzero)
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    boundaries = np.flatnonzero(np.diff(sorted_a) != 0) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [a.size]))
    sizes = ends - starts
    average = (starts + ends + 1) / 2.0  # mean of the 1-based positions start+1 .. end
    ranks = np.empty(a.size, dtype=np.float64)
    ranks[order] = np.repeat(average, sizes)
    return ranks, sizes.astype(np.int64)


def _signed_rank_counts(doubled_ranks: NDArray[np.int64]) -> NDArray[np.float64]:
    """Number of sign assignments giving each value of 2 * R+ (subset-sum counts of the doubled ranks)."""
    total = int(doubled_ranks.sum())
    counts = np.zeros(total + 1, dtype=np.float64)
    counts[0] = 1.0
    reach = 0
    for r in doubled_ranks.tolist():
        counts[r : reach + r + 1] += counts[: reach + 1].copy()
        reach += r
    return counts


def _exact_two_sided(r_plus: float, doubled_ranks: NDArray[np.int64]) -> float:
    """Two-sided p from the exact distribution of R+ under random signs: 2 * min(P(R+ <= r), P(R+ >= r))."""
    counts = _signed_rank_counts(doubled_ranks)
    total = counts.sum()
    # R+ takes half-integer values at most, so 2 * R+ is an integer; round guards float noise.
    observed = round(2.0 * r_plus)
    lower = counts[: observed + 1].sum() / total
    upper = counts[observed:].sum() / total
    return float(min(1.0, 2.0 * min(lower, upper)))


def wilcoxon_test(diffs: NDArray[np.float64] | list[float], method: WilcoxonMethod = "auto") -> float:
    """Wilcoxon signed-rank test; zero differences are dropped before ranking (Wilcoxon's rule).

    `exact` uses the null distribution of R+ over all sign assignments of the ranks (with ties, of their
    average ranks, which is exact conditional on the tie pattern); `approx` the normal approximation
    with tie correction and no continuity correction; `auto` picks like scipy: exact up to 50 pairs
    when there are no ties or zeros, complete enumeration up to 13 pairs otherwise, else approximate.
    """
    from scipy.special import ndtr

    if method not in ("auto", "exact", "approx"):
        raise InputError(f"unknown Wilcoxon method {method!r}; choose one of auto, exact, approx")
    d = _as_diffs(diffs, "Wilcoxon test")
    nonzero = d[d != 0]
    count = nonzero.size
    if count == 0:
        return 1.0
    ranks, tie_sizes = _rank_abs(nonzero)
    r_plus = float(np.sum(ranks[nonzero > 0]))
    has_ties = bool(np.any(tie_sizes > 1))
    if method == "auto":
        if (d.size <= EXACT_MAX_N and not has_ties and count == d.size) or d.size <= ENUMERATE_MAX_N:
            method = "exact"
        else:
            method = "approx"
    if method == "exact":
        if count > EXACT_LIMIT:
            raise InputError(
                f"exact Wilcoxon distribution is limited to {EXACT_LIMIT} non-zero differences, got {count}; "
                "use method='approx' (or 'auto')"
            )
        doubled = np.rint(2.0 * ranks).astype(np.int64)
        return _exact_two_sided(r_plus, doubled)
    mean = count * (count + 1) / 4.0
    tie_term = float(np.sum(tie_sizes.astype(np.float64) ** 3 - tie_sizes))
    var = (count * (count + 1.0) * (2.0 * count + 1.0) - tie_term / 2.0) / 24.0
    z = (r_plus - mean) / math.sqrt(var)
    return float(min(1.0, 2.0 * ndtr(-abs(z))))


def paired_p_value(test: str, diffs: Sequence[float], *, seed: int, permutations: int) -> float:
    """Two-sided p-value of the paired differences with one of the comparison tests.

    Raises InputError when the test cannot assess the differences (a t-test on one query).
    """
    from ragmetrics.comparison.fisher import fisher_test
    from ragmetrics.comparison.stats import paired_t_test, sign_test, wilcoxon_test

    tests: dict[str, Callable[[np.ndarray], float]] = {
        "fisher": lambda x: fisher_test(x, permutations=permutations, seed=seed),
        "t": paired_t_test,
        "wilcoxon": wilcoxon_test,
        "sign": sign_test,
    }
    if test not in tests:
        raise InputError(f"unknown test {test!r}; tests: {', '.join(tests)}")
    d = np.asarray(diffs, dtype=np.float64)
    if not d.size or not np.any(d):
        return 1.0
    return float(tests[test](d))
