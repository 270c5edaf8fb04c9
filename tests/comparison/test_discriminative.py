"""Discriminative power (Sakai 2006): pairs separated after the correction, against scipy's paired t-test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ttest_rel

from ragmetrics.comparison.corrections import holm
from ragmetrics.comparison.discriminative import discriminative_power


def _runs(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.random(40)
    return np.column_stack([base, base + 0.3 + rng.normal(0, 0.1, 40), base + rng.normal(0, 0.1, 40),
                            base + 0.31 + rng.normal(0, 0.1, 40)])  # fmt: skip


def test_share_of_pairs_separated_equals_scipy_t_tests_under_holm() -> None:
    scores = _runs()
    p = [float(ttest_rel(scores[:, j], scores[:, i]).pvalue) for i in range(4) for j in range(i + 1, 4)]
    expected = sum(1 for q in holm(p) if q <= 0.05)
    power = discriminative_power(scores, test="t", correction="holm", alpha=0.05)
    assert (power.pairs, power.separated) == (6, expected)
    assert power.share == pytest.approx(expected / 6)
    assert 0 < expected < 6  # the example separates some pairs, not all (b vs d, a vs c are close)


def test_a_pair_with_fewer_than_two_shared_questions_is_untestable_not_unseparated() -> None:
    scores = _runs()[:, :3].copy()
    scores[1:, 2] = np.nan  # run 2 has one question
    power = discriminative_power(scores, test="t")
    assert power.pairs == 1 and set(power.untestable) == {(0, 2), (1, 2)}


def test_no_testable_pair_has_no_share() -> None:
    scores = np.array([[0.1, np.nan], [np.nan, 0.2]])
    assert discriminative_power(scores).share is None
