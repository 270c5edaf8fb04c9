"""Kendall's tau-b and its grouped bootstrap (comparison.kendall), against scipy.stats.kendalltau."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from ragmetrics.comparison.kendall import bootstrap_counts, grouped_pairs, kendall_tau_b, tau_b_of_counts
from ragmetrics.errors import InputError


@pytest.mark.parametrize("seed", range(12))
def test_tau_b_equals_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 80))
    levels = int(rng.integers(2, 6))  # few distinct values: many ties on both sides
    x = rng.integers(0, levels, n).astype(float)
    y = np.where(rng.random(n) < 0.6, x, rng.integers(0, levels, n)).astype(float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert kendall_tau_b(x, y) is None
        return
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y, variant="b").statistic, abs=1e-12)


def test_tau_b_on_continuous_values_and_reversed_order() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    assert kendall_tau_b(x, -x) == pytest.approx(-1.0)


def test_tau_b_of_a_constant_side_is_undefined_not_nan() -> None:
    assert kendall_tau_b([0.5, 0.5, 0.5], [1.0, 2.0, 3.0]) is None
    assert kendall_tau_b([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]) is None
    assert kendall_tau_b([1.0], [2.0]) is None


def test_tau_b_refuses_nan() -> None:
    with pytest.raises(InputError, match="NaN"):
        kendall_tau_b([1.0, float("nan")], [1.0, 2.0])


def test_a_resample_of_groups_equals_tau_b_on_the_expanded_data() -> None:
    """Drawing questions with replacement and keeping each question's runs together: the closed form over the
    per-group pair sums equals tau-b recomputed on the rows the resample holds (duplicates included)."""
    rng = np.random.default_rng(7)
    groups, runs = 25, 4
    g = np.repeat(np.arange(groups), runs)
    x = rng.integers(0, 4, g.size).astype(float)
    y = np.round(x / 3 + rng.random(g.size), 1)
    pairs = grouped_pairs(x, y, g, groups)
    counts = bootstrap_counts(groups, 20, seed=11)
    taus = tau_b_of_counts(pairs, counts)
    for row, tau in zip(counts, taus, strict=True):
        rows = np.concatenate([np.flatnonzero(g == q) for q in range(groups) for _ in range(int(row[q]))])
        assert tau == pytest.approx(kendalltau(x[rows], y[rows]).statistic, abs=1e-12)
    assert tau_b_of_counts(pairs, np.ones((1, groups)))[0] == pytest.approx(kendalltau(x, y).statistic)


def test_a_resample_that_leaves_one_side_constant_is_undefined() -> None:
    x = np.array([0.0, 1.0, 0.0, 0.0])
    y = np.array([0.0, 1.0, 1.0, 0.0])
    pairs = grouped_pairs(x, y, np.array([0, 0, 1, 1]), 2)
    assert tau_b_of_counts(pairs, np.array([[0.0, 2.0]])) == [None]  # only group 1: x constant


def test_bootstrap_counts_draw_every_question_count_and_repeat_by_seed() -> None:
    counts = bootstrap_counts(30, 50, seed=5)
    assert counts.shape == (50, 30) and np.all(counts.sum(axis=1) == 30)
    assert np.array_equal(counts, bootstrap_counts(30, 50, seed=5))
    assert not np.array_equal(counts, bootstrap_counts(30, 50, seed=6))
    with pytest.raises(InputError):
        bootstrap_counts(0, 10, seed=1)


def test_the_units_order_does_not_matter() -> None:
    rng = np.random.default_rng(9)
    g = np.repeat(np.arange(12), 3)
    x, y = rng.integers(0, 3, g.size).astype(float), rng.random(g.size)
    shuffled = rng.permutation(g.size)
    counts = bootstrap_counts(12, 15, seed=2)
    expected = tau_b_of_counts(grouped_pairs(x, y, g, 12), counts)
    assert tau_b_of_counts(grouped_pairs(x[shuffled], y[shuffled], g[shuffled], 12), counts) == pytest.approx(expected)
    empty = grouped_pairs(x, y, g, 14)  # groups 12 and 13 have no unit
    assert tau_b_of_counts(empty, np.ones((1, 14)))[0] == pytest.approx(kendalltau(x, y).statistic)
