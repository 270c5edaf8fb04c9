"""How many questions a comparison needs, and what the questions it has can detect.

From the per-query differences of a pair (candidate - baseline) the spread `sd` (ddof 1) is known; the paired
t-test's power at a true mean difference `delta` over `n` questions is

    power(delta, n) = P(|T| > t_{1 - alpha/2, n-1}),   T ~ noncentral t(df = n - 1, nc = delta * sqrt(n) / sd)

(Cohen 1988, ch. 2). The minimum detectable difference (MDE) is the `delta` where that power reaches the wanted
level (80 % by default), and the questions a target difference needs is the smallest `n` where it does. The rank
and randomization tests are within a few per cent of the t-test's efficiency on these data (Wilcoxon's
asymptotic relative efficiency is >= 0.864 for any distribution, 0.955 for the normal), so the t figure is the
planning figure for every test, with one hard limit the t-test does not have: an exact test on `n` non-zero
differences cannot give a two-sided p below 2 / 2^n (every sign the same is the most extreme outcome), so with
five questions no difference, however large, reaches p <= 0.05.

`alpha` here is the level each pair is tested at: with Holm or Bonferroni across m comparisons the first
(strictest) step tests at alpha / m, which is what `family_alpha` returns and the report uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragmetrics.options import Test

__all__ = [
    "DEFAULT_POWER",
    "PairPower",
    "exact_floor",
    "family_alpha",
    "minimum_attainable_p",
    "minimum_detectable_difference",
    "pair_power",
    "questions_needed",
    "t_test_power",
]

DEFAULT_POWER = 0.8
MAX_QUESTIONS = 10_000_000
"""Beyond this a target difference is reported as out of reach rather than searched further."""


def t_test_power(delta: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test at level `alpha` to detect a true mean difference `delta`."""
    from scipy.stats import nct, t

    if n < 2:
        return 0.0
    if sd <= 0:
        return 1.0 if delta != 0 else alpha
    df = n - 1
    critical = float(t.ppf(1 - alpha / 2, df))
    noncentrality = abs(delta) * math.sqrt(n) / sd
    value = float(nct.sf(critical, df, noncentrality) + nct.cdf(-critical, df, noncentrality))
    if math.isfinite(value):
        return min(1.0, value)
    # scipy's noncentral t loses its way far in the tail (NaN at a noncentrality of thousands); there the
    # normal approximation is exact to many digits.
    from scipy.stats import norm

    return float(min(1.0, norm.sf(critical - noncentrality) + norm.cdf(-critical - noncentrality)))


def minimum_detectable_difference(
    sd: float, n: int, alpha: float, power: float = DEFAULT_POWER
) -> float | None:
    """The smallest |mean difference| the paired t-test detects with probability `power` over `n`
    questions; None below two questions. 0 when the differences have no spread (any shift is certain)."""
    from scipy.optimize import brentq

    if n < 2:
        return None
    if sd <= 0:
        return 0.0
    high = sd
    while t_test_power(high, sd, n, alpha) < power:
        high *= 2
    return float(brentq(lambda d: t_test_power(d, sd, n, alpha) - power, 0.0, high, xtol=1e-10 * sd))


def questions_needed(delta: float, sd: float, alpha: float, power: float = DEFAULT_POWER) -> int | None:
    """The fewest questions at which the paired t-test detects `delta` with probability `power` (power grows
    with n, so a doubling search then bisection); None when more than MAX_QUESTIONS would be needed."""
    if delta == 0:
        return None
    if sd <= 0:
        return 2
    low, high = 1, 2
    while t_test_power(delta, sd, high, alpha) < power:
        low, high = high, high * 2
        if high > MAX_QUESTIONS:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        if t_test_power(delta, sd, middle, alpha) >= power:
            high = middle
        else:
            low = middle
    return high


def minimum_attainable_p(test: Test, nonzero: int, permutations: int | None = None) -> float:
    """The smallest two-sided p the test can return on `nonzero` non-zero differences (0 for the t-test, whose
    statistic is continuous). The randomization test also cannot go below 1 / (permutations + 1)."""
    if test == "t":
        return 0.0
    if nonzero == 0:
        return 1.0
    exact = min(1.0, 2.0 / 2.0**nonzero)
    if test == "fisher" and permutations:
        return max(exact, 1.0 / (permutations + 1))
    return exact


def family_alpha(alpha: float, correction: str, family: int) -> float:
    """The level the strictest step of the correction tests a pair at: alpha / m for Holm and Bonferroni, alpha
    for Benjamini-Hochberg's last step and for no correction (BH's first step is alpha / m too: conservative)."""
    if correction in ("holm", "bonferroni") and family > 1:
        return alpha / family
    return alpha


@dataclass(frozen=True)
class PairPower:
    """What one pair's questions can detect: the MDE at `alpha` and `power`, the questions `target` needs,
    and the smallest p the test can reach with these questions."""

    n: int
    nonzero: int
    mean_diff: float
    sd_diff: float
    alpha: float
    power: float
    mde: float | None
    target: float | None
    needed: int | None
    min_p: float


def exact_floor(alpha: float) -> int:
    """Non-zero differences an exact test needs before p <= alpha is possible at all: 2 / 2^n <= alpha."""
    return max(1, math.ceil(math.log2(2.0 / alpha)))


def pair_power(
    diffs: NDArray[np.float64] | Sequence[float],
    *,
    alpha: float,
    test: Test = "t",
    power: float = DEFAULT_POWER,
    target: float | None = None,
    permutations: int | None = None,
) -> PairPower:
    """Power figures of one pair from its per-query differences (failed pairs already left out)."""
    d = np.asarray(diffs, dtype=np.float64)
    n = int(d.size)
    sd = float(np.std(d, ddof=1)) if n >= 2 else 0.0
    nonzero = int(np.count_nonzero(d))
    min_p = minimum_attainable_p(test, nonzero, permutations)
    mde = minimum_detectable_difference(sd, n, alpha, power)
    if min_p > alpha:
        mde = None  # no difference reaches significance with these questions
    needed = questions_needed(target, sd, alpha, power) if target else None
    if (
        needed is not None and test != "t"
    ):  # an exact test needs enough differing questions to reach alpha at all
        needed = max(needed, exact_floor(alpha))
    return PairPower(
        n=n,
        nonzero=nonzero,
        mean_diff=float(np.mean(d)) if n else 0.0,
        sd_diff=sd,
        alpha=alpha,
        power=power,
        mde=mde,
        target=target,
        needed=needed,
        min_p=min_p,
    )
