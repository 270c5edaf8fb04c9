"""The prediction-powered confidence sequence: it covers the mean at every look, it narrows with a signal that
predicts the judged values, a signal that predicts nothing gets a weight near 0, and the dataset's own mean is
exact once every question is judged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmetrics.comparison.adaptive import verdict_of
from ragmetrics.comparison.confseq import BettingSequence
from ragmetrics.comparison.ppi_sequence import SIGNAL_ALPHA_SHARE, PredictionPoweredSequence


def _draw(rng: np.random.Generator, n: int, delta: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
    z1, z2 = rng.standard_normal(n), rng.standard_normal(n)
    d = np.clip(delta + 0.25 * z1, -1, 1)
    f = np.clip(0.5 * delta + 0.25 * (rho * z1 + math.sqrt(1 - rho * rho) * z2), -1, 1)
    return d, f


def _sequence(d: np.ndarray, f: np.ndarray | None, target: str, batch: int = 25) -> list[tuple[float, float]]:
    seq = PredictionPoweredSequence(
        alpha=0.05, population=d.size, target=target,  # type: ignore[arg-type]
        signals=f,
    )  # fmt: skip
    looks = []
    for start in range(0, d.size, batch):
        seq.update(d[start : start + batch], None if f is None else f[start : start + batch])
        looks.append((seq.low, seq.high))
    return looks


@pytest.mark.parametrize("target", ["population", "questions"])
def test_it_covers_the_mean_at_every_look(target: str) -> None:
    rng = np.random.default_rng(7)
    misses = 0
    for _ in range(200):
        d, f = _draw(rng, 300, 0.04, 0.8)
        truth = 0.04 if target == "population" else float(d.mean())
        misses += any(not (low - 1e-12 <= truth <= high + 1e-12) for low, high in _sequence(d, f, target))
    assert misses / 200 <= 0.08  # alpha 0.05 over 12 looks each


def test_a_predictive_signal_narrows_it_and_a_useless_one_does_not_widen_it() -> None:
    rng = np.random.default_rng(3)
    widths: dict[str, list[float]] = {"none": [], "predictive": [], "useless": []}
    for _ in range(60):
        d, f = _draw(rng, 2000, 0.0, 0.9)
        _, noise = _draw(rng, 2000, 0.0, 0.0)
        for name, signal in (("none", None), ("predictive", f), ("useless", noise)):
            low, high = _sequence(d, signal, "questions", batch=50)[5]  # after 300 questions
            widths[name].append(high - low)
    none, predictive, useless = (float(np.mean(widths[k])) for k in ("none", "predictive", "useless"))
    assert predictive < 0.9 * none  # a bounded (betting) sequence: the bet caps of the wider range bind
    assert useless < 1.05 * none


def test_the_weight_follows_the_signal() -> None:
    rng = np.random.default_rng(5)
    d, f = _draw(rng, 1000, 0.0, 0.9)
    _, noise = _draw(rng, 1000, 0.0, 0.0)
    useful = PredictionPoweredSequence(alpha=0.05, population=1000, target="questions", signals=f)
    useful.update(d[:400], f[:400])
    useless = PredictionPoweredSequence(alpha=0.05, population=1000, target="questions", signals=noise)
    useless.update(d[:400], noise[:400])
    assert 0.5 < useful.weight <= 1.0 and useful.correlation is not None and useful.correlation > 0.8
    assert useless.weight < 0.15


def test_the_dataset_mean_is_exact_once_every_question_is_judged() -> None:
    rng = np.random.default_rng(1)
    d, f = _draw(rng, 120, 0.1, 0.5)
    seq = PredictionPoweredSequence(alpha=0.05, population=120, target="questions", signals=f)
    for start in range(0, 120, 40):
        seq.update(d[start : start + 40], f[start : start + 40])
    assert seq.low == seq.high == pytest.approx(float(d.mean()))
    with pytest.raises(ValueError, match="population of 120"):
        seq.update([0.1], [0.2])


def test_bad_values_are_refused() -> None:
    seq = PredictionPoweredSequence(alpha=0.05, population=10)
    with pytest.raises(ValueError, match="finite"):
        seq.update([math.nan])
    with pytest.raises(ValueError, match="one length"):
        seq.update([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="alpha"):
        PredictionPoweredSequence(alpha=1.5, population=10)


def test_tied_differences_with_rare_large_ones_are_not_declared_worse() -> None:
    # 90 % exact ties, the rest +0.9 or -0.1 (mean 0): the first batch held six -0.1 and no +0.9; a sequence
    # trusting that batch's spread said "worse" here
    seq = PredictionPoweredSequence(alpha=0.05, population=100, target="questions")
    seq.update([-0.1] * 6 + [0.0] * 44, [0.0] * 50)
    assert seq.low < 0.0 < seq.high
    assert verdict_of("pair", 0.01, seq.low, seq.high, level_first=True) == "unsettled"


@pytest.mark.parametrize("target", ["population", "questions"])
def test_all_equal_differences_never_give_a_point_or_level(target: str) -> None:
    # 194 ties, five +1 and one -1 (true difference +0.02, beyond the margin): every look starts with 50 ties
    rng = np.random.default_rng(11)
    d = np.array([0.0] * 194 + [1.0] * 5 + [-1.0])
    levels = 0
    for _ in range(100):
        x = np.concatenate((np.zeros(50), rng.permutation(d[50:])))
        seq = PredictionPoweredSequence(alpha=0.05, population=200, target=target)  # type: ignore[arg-type]
        seq.update(x[:50])
        assert seq.high - seq.low > 0.05  # fifty zeros are no proof of a mean within +-0.01
        for start in range(50, 200, 50):
            if start < 200 and verdict_of("pair", 0.01, seq.low, seq.high, level_first=target == "questions") == "level":
                levels += 1
                break
            seq.update(x[start : start + 50])
    assert levels == 0


def test_verdicts_never_come_from_a_zero_width_interval() -> None:
    assert verdict_of("pair", 0.01, 0.0, 0.0) == "unsettled"
    assert verdict_of("gate", 0.05, 0.0, 0.0) == "unsettled"
    assert verdict_of("pair", 0.01, 0.004, 0.004, level_first=True, exact=True) == "level"


def test_without_a_signal_it_is_the_betting_sequence_of_the_differences() -> None:
    rng = np.random.default_rng(2)
    d = np.clip(0.03 + 0.3 * rng.standard_normal(400), -1, 1)
    powered = PredictionPoweredSequence(alpha=0.05, population=400)
    betting = BettingSequence(alpha=0.05)
    for start in range(0, 400, 50):
        powered.update(d[start : start + 50])
        betting.update((d[start : start + 50] + 1) / 2)
        assert powered.low == pytest.approx(2 * betting.low - 1, abs=1e-9)
        assert powered.high == pytest.approx(2 * betting.high - 1, abs=1e-9)


@pytest.mark.parametrize("target", ["population", "questions"])
def test_a_signal_that_predicts_nothing_keeps_the_sequence(target: str) -> None:
    # a constant signal never gets a weight: the sequence is that of d alone (population: at the 1 - share alpha the
    # signal's own mean is not spent on), never a different family
    rng = np.random.default_rng(4)
    d = np.clip(0.3 * rng.standard_normal(300), -1, 1)
    flat = PredictionPoweredSequence(alpha=0.05, population=300, target=target, signals=np.full(300, 0.2))  # type: ignore[arg-type]
    share = 1 - SIGNAL_ALPHA_SHARE if target == "population" else 1.0
    alone = PredictionPoweredSequence(alpha=0.05 * share, population=300, target=target)  # type: ignore[arg-type]
    for start in range(0, 300, 50):
        flat.update(d[start : start + 50], np.full(50, 0.2))
        alone.update(d[start : start + 50])
        assert flat.weight == 0.0
        assert (flat.low, flat.high) == pytest.approx((alone.low, alone.high))


def test_signals_must_cover_the_population_and_lie_in_range() -> None:
    with pytest.raises(ValueError, match="3 values for a population of 4"):
        PredictionPoweredSequence(alpha=0.05, population=4, signals=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        PredictionPoweredSequence(alpha=0.05, population=2, signals=[0.1, 1.5])
    with pytest.raises(ValueError, match=r"d must lie in \[-1, 1\]"):
        PredictionPoweredSequence(alpha=0.05, population=2).update([1.5])
