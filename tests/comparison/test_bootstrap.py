"""Bootstrap CI: reproducible for a seed, and it covers the true mean difference near the nominal rate."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.comparison.bootstrap import bootstrap_ci, bootstrap_means, percentile_interval
from ragmetrics.errors import InputError


def test_coverage_close_to_nominal() -> None:
    # 400 simulated experiments of 60 paired queries with a known mean difference of 0.05.
    rng = np.random.default_rng(20)
    true_diff, covered, trials = 0.05, 0, 400
    for trial in range(trials):
        d = rng.normal(true_diff, 0.2, 60)
        low, high = bootstrap_ci(d, samples=2000, seed=trial)
        covered += low <= true_diff <= high
    # The percentile interval slightly under-covers at n = 60; 0.95 +- 3 standard errors of 400 trials.
    assert 0.91 <= covered / trials <= 0.98


def test_same_seed_same_interval() -> None:
    d = np.random.default_rng(0).normal(0.1, 1, 500)
    assert bootstrap_ci(d, seed=1, samples=3000) == bootstrap_ci(d, seed=1, samples=3000)
    assert bootstrap_ci(d, seed=1, samples=3000) != bootstrap_ci(d, seed=2, samples=3000)


def test_columns_share_resamples() -> None:
    # Difference of resampled means == resampled mean of differences: the API relies on it.
    rng = np.random.default_rng(3)
    a, b = rng.random(333), rng.random(333)
    means = bootstrap_means(np.column_stack([a, b, b - a]), samples=500, seed=5)
    np.testing.assert_allclose(means[:, 1] - means[:, 0], means[:, 2], atol=1e-12)


def test_resample_means_are_unbiased_and_have_the_right_spread() -> None:
    x = np.random.default_rng(4).normal(0, 1, 2000)
    means = bootstrap_means(x, samples=4000, seed=8)[:, 0]
    assert abs(means.mean() - x.mean()) < 0.003
    assert means.std() == pytest.approx(x.std() / np.sqrt(x.size), rel=0.05)


def test_constant_data_gives_a_point_interval() -> None:
    assert bootstrap_ci(np.full(17, 0.25), samples=200) == pytest.approx((0.25, 0.25))


def test_percentile_interval_quantiles() -> None:
    low, high = percentile_interval(np.arange(101.0).reshape(-1, 1), 0.9)
    assert (low[0], high[0]) == pytest.approx((5.0, 95.0))


def test_bad_input() -> None:
    with pytest.raises(InputError, match="samples"):
        bootstrap_means(np.ones(3), samples=0)
    with pytest.raises(InputError, match="non-empty"):
        bootstrap_means(np.ones(0))
    with pytest.raises(InputError, match="confidence"):
        percentile_interval(np.ones((3, 1)), 1.5)
