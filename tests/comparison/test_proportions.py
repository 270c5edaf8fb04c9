"""The one Wilson interval and exact McNemar test (comparison.proportions) against hand computations and SciPy."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from ragmetrics.comparison.proportions import exact_mcnemar, wilson


def test_wilson_by_hand() -> None:
    z = 1.959963984540054
    low, high = wilson(0, 64)
    assert low == 0.0 and high == pytest.approx(z * z / (64 + z * z))  # the upper end at 0 successes
    low, high = wilson(32, 64)
    half = z * math.sqrt(0.25 / 64 + z * z / (4 * 64 * 64)) / (1 + z * z / 64)
    assert (low, high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_wilson_equals_scipys_over_every_count(confidence: float) -> None:
    for n in (1, 2, 7, 64, 301):
        for k in range(n + 1):
            ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
            low, high = wilson(k, n, confidence)
            assert low == pytest.approx(max(0.0, ci.low), abs=1e-12)
            assert high == pytest.approx(min(1.0, ci.high), abs=1e-12)


def test_bad_counts_and_levels_are_refused() -> None:
    with pytest.raises(ValueError, match="successes <= n"):
        wilson(5, 4)
    with pytest.raises(ValueError, match="confidence"):
        wilson(1, 4, confidence=1.0)


def test_exact_mcnemar_by_hand() -> None:
    assert exact_mcnemar(0, 0) == 1.0
    assert exact_mcnemar(1, 8) == pytest.approx(2 * sum(math.comb(9, k) for k in range(2)) / 2**9)
    assert exact_mcnemar(8, 1) == exact_mcnemar(1, 8)
    assert exact_mcnemar(0, 6) == pytest.approx(2 / 2**6)
