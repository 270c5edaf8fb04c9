"""Anytime-valid confidence sequences: they cover the mean at every look (checked by simulation against a
t-test re-run after every batch, which does not), tighten as values come, reach the exact mean once a finite
population is exhausted, and settle adaptive decisions once and for all."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.comparison.adaptive import Decision, settle, verdict_of
from ragmetrics.comparison.confseq import BettingSequence, difference_confseq, mean_confseq


def test_coverage_at_every_look() -> None:
    rng = np.random.default_rng(0)
    misses_eb = misses_bet = 0
    for _ in range(60):
        x = (rng.random(400) < 0.3).astype(float)
        cs = mean_confseq(x, alpha=0.1)
        misses_eb += bool(np.any((cs.low > 0.3) | (cs.high < 0.3)))
        bet = BettingSequence(alpha=0.1, grid_points=501)
        for start in range(0, 400, 25):
            bet.update(x[start : start + 25])
            if not bet.low <= 0.3 <= bet.high:
                misses_bet += 1
                break
    assert misses_eb <= 6 and misses_bet <= 6  # at most alpha = 10 % of 60 runs ever miss, whatever the look


def test_without_replacement_ends_at_the_exact_mean() -> None:
    rng = np.random.default_rng(1)
    population = rng.beta(2, 5, 300)
    cs = mean_confseq(rng.permutation(population), population=300)
    estimate, low, high = cs.at(300)
    assert estimate == pytest.approx(population.mean())
    assert low == high == pytest.approx(population.mean())
    widths = cs.high - cs.low
    assert np.all(np.diff(widths) <= 1e-12)  # the running intersection never widens
    assert cs.at(150)[2] - cs.at(150)[1] < mean_confseq(population[:150]).at(150)[2] - mean_confseq(population[:150]).at(150)[1]


def test_bad_values_are_named() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mean_confseq([0.2, 1.5])
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        difference_confseq([0.2, -1.5])
    with pytest.raises(ValueError, match="population"):
        mean_confseq([0.1, 0.2, 0.3], population=2)


def test_decisions_settle_once_and_stay_settled() -> None:
    rng = np.random.default_rng(2)
    n = 2000
    a = np.clip(0.5 + 0.2 * rng.standard_normal(n), 0, 1)
    b = np.clip(a + 0.1 + 0.15 * rng.standard_normal(n), 0, 1)
    ids = [f"q{i}" for i in range(n)]
    values = {"a": {q: {"m": float(v)} for q, v in zip(ids, a, strict=True)},
              "b": {q: {"m": float(v)} for q, v in zip(ids, b, strict=True)}}  # fmt: skip
    pair = Decision("pair", "m", "b", other="a", threshold=0.01)
    same = Decision("pair", "m", "a", other="a", threshold=0.01)
    precise = Decision("precision", "m", "b", threshold=0.05)
    seen: list[str] = []
    for end in range(100, n + 1, 100):
        settle([pair, same, precise], values, ids[:end], population=n, alpha=0.05)
        seen.append(pair.verdict)
        if pair.settled and same.settled and precise.settled:
            break
    assert pair.verdict == "better" and pair.settled_at is not None and pair.settled_at < n
    assert pair.low is not None and pair.low > 0
    assert same.verdict == "level"  # a run against itself: within the margin
    assert precise.verdict == "precise"
    first = seen.index("better")
    assert all(v == "better" for v in seen[first:])  # never flips back
    assert "settled after" in pair.describe(n) and "better" in pair.describe(n)


def test_verdicts_of_intervals() -> None:
    assert verdict_of("gate", 0.05, -0.2, -0.1) == "dropped"
    assert verdict_of("gate", 0.05, -0.03, 0.02) == "held"
    assert verdict_of("gate", 0.05, -0.08, 0.02) == "unsettled"
    assert verdict_of("pair", 0.01, -0.005, 0.005) == "level"
    assert verdict_of("pair", 0.01, -0.02, 0.03) == "unsettled"
