"""The choice of a judge to pay for: the cheapest one the data show to be at most `margin` below the best."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.panels.judge_choice import (
    JudgeEvidence,
    _auc_draws,
    _kappa_draws,
    _weighted_auc,
    choose_judge,
)
from ragmetrics.trust.agreement import roc_auc


def _correlated(truth: np.ndarray, accuracies: dict[str, float], shared: float, seed: int) -> dict[str, np.ndarray]:
    """Verdicts whose errors share an item difficulty (as people's hard items are hard for every judge)."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    z = rng.standard_normal(truth.size)
    out = {}
    for name, acc in accuracies.items():
        latent = np.sqrt(shared) * z + np.sqrt(1 - shared) * rng.standard_normal(truth.size)
        right = latent < norm.ppf(acc)
        out[name] = np.where(right, truth, 1 - truth).astype(np.float64)
    return out


def _evidence(verdicts: dict[str, np.ndarray], costs: dict[str, float]) -> list[JudgeEvidence]:
    return [JudgeEvidence(name, v, costs[name]) for name, v in verdicts.items()]


def test_the_cheaper_of_two_equally_good_judges_is_chosen_and_a_worse_cheaper_one_is_not() -> None:
    truth = (np.random.default_rng(0).random(800) < 0.5).astype(np.float64)
    verdicts = _correlated(truth, {"big": 0.9, "mid": 0.9, "small": 0.75}, shared=0.7, seed=1)
    choice = choose_judge(_evidence(verdicts, {"big": 10.0, "mid": 1.0, "small": 0.1}), truth,
                          np.arange(truth.size), resamples=1000)  # fmt: skip
    assert choice.chosen == "mid"
    small = choice.row("small")
    assert not small.not_worse and small.significantly_worse and small.gap_upper > small.gap_to_best > 0.1


def test_too_few_labels_to_show_non_inferiority_keep_the_best() -> None:
    """20 labels cannot rule out that the cheap judge is 5 points worse: not being significantly different
    is not enough, so the best is kept."""
    truth = (np.random.default_rng(2).random(20) < 0.5).astype(np.float64)
    verdicts = _correlated(truth, {"big": 0.9, "mid": 0.9}, shared=0.5, seed=3)
    choice = choose_judge(_evidence(verdicts, {"big": 10.0, "mid": 1.0}), truth, np.arange(20), resamples=1000)
    mid = choice.row("mid")
    if choice.best == "big":
        assert choice.chosen == "big" and not mid.not_worse and mid.mcnemar_p > 0.05
    else:  # mid measured best: it is the cheapest too
        assert choice.chosen == "mid"


def test_every_unit_of_a_sample_is_resampled_together() -> None:
    truth = (np.random.default_rng(4).random(300) < 0.5).astype(np.float64)
    verdicts = _correlated(truth, {"a": 0.85, "b": 0.8}, shared=0.3, seed=5)
    one = choose_judge(_evidence(verdicts, {"a": 2.0, "b": 1.0}), truth, np.arange(300), resamples=500)
    # the same units, every sample holding three of them: the interval widens (fewer independent samples)
    grouped = choose_judge(_evidence(verdicts, {"a": 2.0, "b": 1.0}), truth, np.arange(300) // 3, resamples=500)
    width = lambda c: c.row("b").accuracy.high - c.row("b").accuracy.low  # noqa: E731
    assert grouped.n_samples == 100 and width(grouped) > width(one)


def test_agreement_figures_and_their_checks() -> None:
    truth = np.array([1, 1, 0, 0, 1, 0, 1, 0], dtype=np.float64)
    scores = np.array([0.9, 0.7, 0.2, 0.6, 0.4, 0.1, 0.8, 0.3])
    choice = choose_judge([JudgeEvidence("j", scores, 0.0)], truth, np.arange(8), resamples=200)
    row = choice.row("j")
    assert row.accuracy.value == pytest.approx(6 / 8)
    assert row.auc is not None and row.auc.value == pytest.approx(roc_auc(scores, truth.astype(int)))
    assert _weighted_auc(scores, truth == 1, np.ones(8)) == pytest.approx(roc_auc(scores, truth.astype(int)))
    w = np.random.default_rng(0).poisson(1.0, size=(5, 8)).astype(np.float64) + 0.1
    for draw, kappa, auc in zip(w, _kappa_draws(scores >= 0.5, truth == 1, w), _auc_draws(scores, truth == 1, w),
                                strict=True):  # fmt: skip
        assert auc == pytest.approx(_weighted_auc(scores, truth == 1, draw))
        p_j, p_h = np.average(scores >= 0.5, weights=draw), np.average(truth == 1, weights=draw)
        expected = p_j * p_h + (1 - p_j) * (1 - p_h)
        assert kappa == pytest.approx((np.average((scores >= 0.5) == (truth == 1), weights=draw) - expected)
                                      / (1 - expected))  # fmt: skip
    graded = np.array([1.0, 0.75, 0.25, 0.0, 0.5, 0.0, 1.0, 0.25])  # cut at 0.5: the same yes / no as truth
    row = choose_judge([JudgeEvidence("j", scores, 0.0)], graded, np.arange(8), resamples=200).row("j")
    assert row.kappa is None and row.auc is not None and row.auc.value == pytest.approx(roc_auc(scores, truth))
    with pytest.raises(ValueError, match="one finite score per labelled unit"):
        choose_judge([JudgeEvidence("j", scores[:5], 0.0)], truth, np.arange(8))
    with pytest.raises(ValueError, match="margin and alpha"):
        choose_judge([JudgeEvidence("j", scores, 0.0)], truth, np.arange(8), margin=0.0)


def _near_misses(count: int, wrong: int = 5, n: int = 200) -> tuple[list[JudgeEvidence], np.ndarray]:
    """A perfect, dear judge and `count` cheaper ones, each wrong on its own `wrong` of `n` units."""
    truth = np.array([i % 2 for i in range(n)], dtype=np.float64)
    candidates = [JudgeEvidence("best", truth.copy(), 10.0)]
    for k in range(count):
        verdicts = truth.copy()
        verdicts[k * wrong : (k + 1) * wrong] = 1 - verdicts[k * wrong : (k + 1) * wrong]
        candidates.append(JudgeEvidence(f"cheap{k}", verdicts, (k + 1) / 10))
    return candidates, truth


def test_non_inferiority_is_holm_adjusted_over_the_candidates_the_choice_picks_among() -> None:
    """5 of 200 behind the best: alone, the bootstrap puts a gap of 5 points at p about 0.03 < 0.05, so the cheap
    judge is shown not worse and chosen. Four such candidates, the cheapest passing chosen: each tested alone at
    0.05 would make the chosen one's claim hold at a level about four times weaker; Holm keeps it at 0.05."""
    one, truth = _near_misses(1)
    alone = choose_judge(one, truth, np.arange(truth.size), resamples=4000, seed=0)
    row = alone.row("cheap0")
    assert 0.005 < row.non_inferiority_p < 0.05 and row.non_inferiority_p_holm == row.non_inferiority_p
    assert row.not_worse and alone.chosen == "cheap0"

    four, truth = _near_misses(4)
    together = choose_judge(four, truth, np.arange(truth.size), resamples=4000, seed=0)
    rows = [together.row(f"cheap{k}") for k in range(4)]
    assert all(r.non_inferiority_p < 0.05 for r in rows)  # each alone would pass
    assert all(r.non_inferiority_p_holm >= 0.05 and not r.not_worse for r in rows)
    assert together.chosen == "best"
