"""Paired t, Wilcoxon and sign tests agree with scipy.stats on the same data (to 1e-12)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics.comparison.stats import paired_t_test, sign_test, wilcoxon_test
from ragmetrics.errors import InputError

TOL = 1e-12


def _samples(kind: str, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(40):
        n = int(rng.integers(3, 120))
        a = rng.random(n)
        if kind == "continuous":
            b = a + rng.normal(0.03, 0.2, n)
        elif kind == "rounded":  # ties and zero differences, like graded metrics
            a = np.round(a, 1)
            b = np.round(np.clip(a + rng.normal(0.02, 0.2, n), 0, 1), 1)
        else:  # binary metrics (hit@k): many zeros, heavy ties
            a = (a > 0.5).astype(float)
            b = (rng.random(n) > 0.45).astype(float)
        out.append((a, b))
    return out


@pytest.mark.parametrize("kind", ["continuous", "rounded", "binary"])
def test_t_test_matches_ttest_rel(kind: str) -> None:
    for a, b in _samples(kind, 1):
        d = b - a
        if np.var(d) == 0:
            continue
        assert paired_t_test(d) == pytest.approx(ss.ttest_rel(b, a).pvalue, abs=TOL)


@pytest.mark.parametrize("kind", ["continuous", "rounded", "binary"])
def test_wilcoxon_auto_matches_scipy_default(kind: str) -> None:
    checked = 0
    for a, b in _samples(kind, 2):
        d = b - a
        if not np.any(d != 0):
            continue
        assert wilcoxon_test(d) == pytest.approx(ss.wilcoxon(b, a).pvalue, abs=TOL)
        checked += 1
    assert checked > 30


@pytest.mark.parametrize("kind", ["continuous", "rounded", "binary"])
def test_wilcoxon_approx_matches_asymptotic_with_tie_correction(kind: str) -> None:
    for a, b in _samples(kind, 3):
        d = b - a
        if np.count_nonzero(d) < 2:
            continue
        expected = ss.wilcoxon(b, a, method="asymptotic").pvalue
        assert wilcoxon_test(d, "approx") == pytest.approx(expected, abs=TOL)


def test_wilcoxon_exact_matches_scipy_exact() -> None:
    rng = np.random.default_rng(4)
    for n in [1, 2, 5, 13, 14, 25, 50, 60]:
        for _ in range(5):
            d = rng.normal(0.1, 1.0, n)
            d[: n // 10] = 0.0  # zeros are dropped before ranking, as scipy does
            if not np.any(d):
                continue
            expected = ss.wilcoxon(d, method="exact").pvalue
            assert wilcoxon_test(d, "exact") == pytest.approx(expected, abs=TOL)


def test_wilcoxon_small_sample_with_ties_enumerates_sign_flips() -> None:
    d = np.array([0.1, -0.1, 0.2, 0.2, 0.3, 0.0, -0.4, 0.5, 0.5, 0.5])
    assert wilcoxon_test(d) == pytest.approx(ss.wilcoxon(d).pvalue, abs=TOL)


def test_sign_test_matches_binomtest() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        d = rng.integers(-2, 3, int(rng.integers(1, 80))).astype(float)
        positive, nonzero = int(np.sum(d > 0)), int(np.sum(d != 0))
        if nonzero == 0:
            continue
        assert sign_test(d) == pytest.approx(ss.binomtest(positive, nonzero).pvalue, abs=TOL)


def test_hand_computed_sign_test() -> None:
    # 9 wins, 1 loss: p = 2 * (C(10,0) + C(10,1)) / 2^10 = 22 / 1024.
    assert sign_test([1.0] * 9 + [-1.0]) == pytest.approx(22 / 1024, abs=1e-15)


def test_no_difference_gives_p_one() -> None:
    zeros = np.zeros(12)
    assert paired_t_test(zeros) == 1.0
    assert wilcoxon_test(zeros) == 1.0
    assert sign_test(zeros) == 1.0
    assert paired_t_test(np.full(5, 0.25)) == 0.0


def test_bad_input_is_rejected() -> None:
    with pytest.raises(InputError, match="at least 2"):
        paired_t_test([0.5])
    with pytest.raises(InputError, match="NaN"):
        wilcoxon_test([0.1, float("nan")])
    with pytest.raises(InputError, match="limited to 1000"):
        wilcoxon_test(np.arange(1.0, 1200.0), "exact")
    with pytest.raises(InputError, match="auto, exact, approx"):
        wilcoxon_test([0.1, 0.2], "permutation")  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-6, 6).map(lambda v: v / 4), min_size=2, max_size=60))
def test_property_agrees_with_scipy_on_tied_grids(values: list[float]) -> None:
    d = np.asarray(values)
    if not np.any(d):
        return
    assert wilcoxon_test(d) == pytest.approx(ss.wilcoxon(d).pvalue, abs=TOL)
    assert wilcoxon_test(d, "approx") == pytest.approx(ss.wilcoxon(d, method="asymptotic").pvalue, abs=TOL)
    if np.var(d) > 0:
        assert paired_t_test(d) == pytest.approx(ss.ttest_1samp(d, 0.0).pvalue, abs=TOL)
