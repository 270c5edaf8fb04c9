"""The naming rule: the best metric is named only when the paired bootstrap of the tau difference excludes 0."""

from __future__ import annotations

import numpy as np

from ragmetrics.validity.naming import TauSamples, name_best


def _samples(metric: str, tau: float, resampled: np.ndarray) -> TauSamples:
    return TauSamples(metric, tau, resampled)


def test_a_clear_leader_is_named_with_its_interval() -> None:
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.05, 1000)
    verdict = name_best([_samples("b", 0.30, 0.30 + noise), _samples("a", 0.60, 0.60 + noise * 0.8)], 0.95)
    assert verdict.best == "a" and verdict.leaders == ["a"] and verdict.runner_up == "b"
    assert verdict.tau is not None and verdict.tau.low is not None and verdict.tau.low < 0.6 < (verdict.tau.high or 0)
    assert verdict.difference is not None and (verdict.difference.low or 0) > 0
    assert verdict.text.startswith("a tracks the answers best: tau 0.600 [")


def test_paired_differences_tell_apart_what_overlapping_intervals_would_not() -> None:
    """Both taus move together over resamples (the same questions drawn): their own intervals overlap, but the
    difference is always positive, so the leader is named."""
    rng = np.random.default_rng(1)
    shared = rng.normal(0, 0.1, 1000)
    a = _samples("a", 0.52, 0.52 + shared + rng.normal(0, 0.005, 1000))
    b = _samples("b", 0.48, 0.48 + shared + rng.normal(0, 0.005, 1000))
    a_low = np.quantile(a.resampled, 0.025)
    assert a_low < np.quantile(b.resampled, 0.975)  # the intervals overlap
    verdict = name_best([a, b], 0.95)
    assert verdict.best == "a"


def test_when_the_difference_reaches_zero_the_data_cannot_tell() -> None:
    rng = np.random.default_rng(2)
    verdict = name_best(
        [_samples("a", 0.41, 0.41 + rng.normal(0, 0.05, 1000)), _samples("b", 0.40, 0.40 + rng.normal(0, 0.05, 1000)),
         _samples("c", 0.05, 0.05 + rng.normal(0, 0.01, 1000))],
        0.95,
    )  # fmt: skip
    assert verdict.best is None and verdict.leaders == ["a", "b"]
    assert verdict.text.startswith("the data cannot tell which metric tracks the answers best: a leads")
    assert "against b (difference 0.010 [" in verdict.text and "c (" not in verdict.text


def test_undefined_taus_never_win() -> None:
    verdict = name_best([_samples("flat", None, np.full(10, np.nan)),  # type: ignore[arg-type]
                         _samples("a", 0.2, np.full(10, 0.2))], 0.95)  # fmt: skip
    assert verdict.best == "a" and "only metric with a defined tau" in verdict.text
    nothing = name_best([_samples("flat", None, np.full(10, np.nan))], 0.95)  # type: ignore[arg-type]
    assert nothing.best is None and nothing.text == "no metric has a defined tau with the answer quality"
