"""Prediction-powered estimates: by hand on small data, and by simulation against the truth they claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmetrics.trust.ppi import estimate_mean, z_value


def test_ppi_by_hand() -> None:
    f_lab, y, f_unl = [0.9, 0.8, 0.2, 0.7], [1.0, 1.0, 0.0, 0.0], [0.6, 0.4, 0.8]
    est = estimate_mean(f_lab, y, f_unl, confidence=0.95)
    rectifier = np.array(f_lab) - np.array(y)  # [-0.1, -0.2, 0.2, 0.7], mean 0.15
    assert est.ppi is not None and est.classical is not None and est.ppi_plus is not None
    assert est.ppi.estimate == pytest.approx(0.6 - 0.15)
    se = math.sqrt(np.var(f_unl, ddof=1) / 3 + np.var(rectifier, ddof=1) / 4)
    assert est.ppi.se == pytest.approx(se)
    assert est.ppi.low == pytest.approx(0.45 - z_value(0.95) * se)
    assert est.classical.estimate == pytest.approx(0.5)
    assert est.judge_only.estimate == pytest.approx(np.mean(f_lab + f_unl))
    assert est.lam is not None and 0.0 <= est.lam <= 1.0


def test_ppi_plus_with_a_useless_judge_falls_back_to_the_labels() -> None:
    rng = np.random.default_rng(0)
    y = rng.random(200)
    est = estimate_mean(rng.random(200), y, rng.random(2000))  # judge independent of the labels
    assert est.lam is not None and est.lam < 0.2
    assert est.ppi_plus is not None and est.classical is not None
    assert est.ppi_plus.width <= est.classical.width * 1.05


def test_too_few_labels_give_no_ppi() -> None:
    est = estimate_mean([0.5], [1.0], [0.2, 0.3])
    assert est.ppi is None and est.classical is None and est.judge_only.estimate == pytest.approx(1 / 3)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="pair up"):
        estimate_mean([0.1, 0.2], [1.0], [0.3])
    with pytest.raises(ValueError, match="non-finite"):
        estimate_mean([0.1, float("nan")], [1.0, 0.0], [0.3])


DATASETS = 2000
N_LABELED, N_UNLABELED = 100, 1000
TRUE_P = 0.6


def _simulate(seed: int) -> dict[str, np.ndarray]:
    """A biased, noisy judge of binary human labels: judge = clip(0.7 y + 0.25 + noise), E[y] = 0.6."""
    rng = np.random.default_rng(seed)
    covered = {"ppi": [], "ppi_plus": [], "classical": [], "judge_only": []}
    width = {k: [] for k in covered}
    for _ in range(DATASETS):
        y = (rng.random(N_LABELED + N_UNLABELED) < TRUE_P).astype(float)
        f = np.clip(0.7 * y + 0.25 + rng.normal(0, 0.15, y.size), 0, 1)
        est = estimate_mean(f[:N_LABELED], y[:N_LABELED], f[N_LABELED:])
        for name in covered:
            interval = getattr(est, name)
            covered[name].append(interval.covers(TRUE_P))
            width[name].append(interval.width)
    return {f"{k}_coverage": np.mean(v) for k, v in covered.items()} | {
        f"{k}_width": np.mean(v) for k, v in width.items()
    }


def test_ppi_covers_the_true_mean_at_its_nominal_rate_and_the_judge_alone_does_not() -> None:
    figures = _simulate(seed=2023)
    assert 0.93 <= figures["ppi_coverage"] <= 0.97, figures
    assert 0.93 <= figures["ppi_plus_coverage"] <= 0.97, figures
    assert 0.93 <= figures["classical_coverage"] <= 0.97, figures
    assert figures["judge_only_coverage"] < 0.2, figures  # biased by ~0.07, with a CI of +-0.02
    # the judge's scores buy precision: PPI is narrower than labels alone
    assert figures["ppi_width"] < figures["classical_width"], figures
    assert figures["ppi_plus_width"] <= figures["ppi_width"] * 1.01, figures
