"""The prediction-powered confidence sequence: it covers the mean at every look, it narrows with a signal that
predicts the judged values, a signal that predicts nothing gets a weight near 0, and the dataset's own mean is
exact once every question is judged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmetrics.comparison.ppi_sequence import PredictionPoweredSequence, mixture_margin


def _draw(rng: np.random.Generator, n: int, delta: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
    z1, z2 = rng.standard_normal(n), rng.standard_normal(n)
    d = np.clip(delta + 0.25 * z1, -1, 1)
    f = np.clip(0.5 * delta + 0.25 * (rho * z1 + math.sqrt(1 - rho * rho) * z2), -1, 1)
    return d, f


def _sequence(d: np.ndarray, f: np.ndarray | None, target: str, batch: int = 25) -> list[tuple[float, float]]:
    seq = PredictionPoweredSequence(
        alpha=0.05, population=d.size, target=target,  # type: ignore[arg-type]
        signal_total=None if f is None else float(f.sum()), signal_sd=None if f is None else float(f.std()),
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
    assert predictive < 0.7 * none
    assert useless < 1.05 * none


def test_the_weight_follows_the_signal() -> None:
    rng = np.random.default_rng(5)
    d, f = _draw(rng, 1000, 0.0, 0.9)
    _, noise = _draw(rng, 1000, 0.0, 0.0)
    useful = PredictionPoweredSequence(alpha=0.05, population=1000, target="questions",
                                       signal_total=float(f.sum()), signal_sd=float(f.std()))  # fmt: skip
    useful.update(d[:400], f[:400])
    useless = PredictionPoweredSequence(alpha=0.05, population=1000, target="questions",
                                        signal_total=float(noise.sum()), signal_sd=float(noise.std()))  # fmt: skip
    useless.update(d[:400], noise[:400])
    assert 0.75 < useful.weight <= 1.0 and useful.correlation is not None and useful.correlation > 0.8
    assert useless.weight < 0.15


def test_the_dataset_mean_is_exact_once_every_question_is_judged() -> None:
    rng = np.random.default_rng(1)
    d, f = _draw(rng, 120, 0.1, 0.5)
    seq = PredictionPoweredSequence(alpha=0.05, population=120, target="questions",
                                    signal_total=float(f.sum()), signal_sd=float(f.std()))  # fmt: skip
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


def test_the_margin_grows_slower_than_the_sample() -> None:
    # the normal-mixture boundary: about sqrt(t log t), so the interval (margin / t) shrinks
    assert mixture_margin(400, 1.0, 0.05, 250) / 400 < mixture_margin(100, 1.0, 0.05, 250) / 100 / 1.6
