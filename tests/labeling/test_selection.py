"""The labelling order and the plan of how many labels the estimate needs."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.labeling.selection import label_plan, labelling_order
from ragmetrics.trust.ppi import estimate_mean


def _scores(n: int) -> dict[str, float]:
    rng = np.random.default_rng(3)
    return {f"q{i:03d}": float(v) for i, v in enumerate(rng.random(n))}


@pytest.mark.parametrize("n", [1, 2, 7, 64, 100])
def test_order_is_a_permutation(n: int) -> None:
    scores = _scores(n)
    order = labelling_order(scores, seed=5)
    assert sorted(order) == sorted(scores)


def test_every_prefix_spans_the_score_range() -> None:
    scores = _scores(100)
    ranked = sorted(scores, key=lambda s: scores[s])
    quartile = {sid: ranked.index(sid) * 4 // 100 for sid in scores}
    for seed in range(20):
        order = labelling_order(scores, seed=seed)
        assert sorted(quartile[s] for s in order[:4]) == [0, 1, 2, 3]
        octiles = {ranked.index(s) * 8 // 100 for s in order[:8]}
        assert len(octiles) == 8


def test_each_sample_is_equally_likely_to_be_labelled_early() -> None:
    """Equal inclusion probability is what keeps the PPI estimate unbiased."""
    scores = _scores(40)
    seen = dict.fromkeys(scores, 0)
    seeds = 2000
    for seed in range(seeds):
        for sid in labelling_order(scores, seed=seed)[:10]:
            seen[sid] += 1
    shares = np.array(list(seen.values())) / seeds
    assert abs(shares.mean() - 0.25) < 1e-9
    assert shares.min() > 0.18 and shares.max() < 0.32  # 0.25 each, within sampling noise


def test_seed_changes_order_deterministically() -> None:
    scores = _scores(30)
    assert labelling_order(scores, seed=1) == labelling_order(scores, seed=1)
    assert labelling_order(scores, seed=1) != labelling_order(scores, seed=2)


def test_plan_matches_the_ppi_estimate_and_predicts_halving() -> None:
    rng = np.random.default_rng(0)
    n_all = 400
    judge = rng.random(n_all)
    human = (rng.random(n_all) < judge).astype(float)  # a calibrated judge of yes/no labels
    scores = {f"s{i}": float(judge[i]) for i in range(n_all)}
    labelled = {f"s{i}": float(human[i]) for i in range(20)}
    plan = label_plan(scores, labelled)
    reference = estimate_mean(judge[:20], human[:20], judge[20:])
    assert reference.ppi is not None
    assert plan.estimate == pytest.approx(reference.ppi.estimate)
    assert plan.half_width == pytest.approx(reference.ppi.width / 2)
    assert not plan.assumed
    assert plan.more_to_halve is not None
    # Labelling that many more (from the same people) does roughly halve it.
    n = 20 + plan.more_to_halve
    later = estimate_mean(judge[:n], human[:n], judge[n:])
    assert later.ppi is not None
    assert later.ppi.width / 2 == pytest.approx(plan.half_width / 2, rel=0.3)
    assert "more labels would halve" in plan.describe()


def test_plan_before_any_label_says_it_assumes() -> None:
    plan = label_plan({f"s{i}": i / 399 for i in range(400)}, {})
    assert plan.labelled == 0 and plan.half_width is None and plan.assumed
    assert plan.to_reach[0.10] is not None
    assert "assuming a calibrated judge" in plan.describe()


def test_plan_says_when_few_samples_cannot_reach_a_width() -> None:
    plan = label_plan({f"s{i}": i / 9 for i in range(10)}, {})
    assert plan.to_reach[0.05] is None
    assert "out of reach with 10 samples" in plan.describe()
