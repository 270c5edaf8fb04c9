"""Proportions: the Wilson score interval and the exact McNemar test, defined once for every part that reports a
share of questions (attack success rates, the sufficient-context breakdown).

Wilson rather than the normal (Wald) interval: the shares these reports show are often near 0 or 1 (no attack
succeeded, every context sufficient), where the Wald interval collapses to a point or leaves [0, 1]; Wilson's
stays inside and keeps close to its nominal coverage (Brown, Cai and DasGupta, Statistical Science 2001).
McNemar exact: two runs on the same questions differ only on the discordant questions, so the test is the
two-sided binomial test of how those split, against 1/2 (the sign test on the paired 0/1 differences).
"""

from __future__ import annotations

import math

from scipy import stats

__all__ = ["exact_mcnemar", "wilson"]


def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval (no continuity correction) of `successes` out of `n`, clipped to [0, 1];
    (0, 1) when `n` is 0: nothing observed, nothing excluded."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), not {confidence}")
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def exact_mcnemar(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p: `only_a` questions where only the first run has the property, `only_b` where
    only the second does; 1.0 when none is discordant (no evidence of any difference)."""
    n = only_a + only_b
    return 1.0 if n == 0 else float(stats.binomtest(only_a, n).pvalue)
