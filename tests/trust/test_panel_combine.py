"""Panel combinations on simulated judges of known quality: Dawid-Skene recovers the accuracies, learned
weights beat a plain mean when one judge is biased, and cross-fitting never scores an item on its own label."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.alignment.folds import stratified_folds
from ragmetrics.trust.panel_combine import combine_scores, cross_fitted, dawid_skene, fit_weights


def _judges(truth: np.ndarray, accuracies: list[float], rng: np.random.Generator) -> np.ndarray:
    """Items x judges verdicts: judge j right on an item with probability accuracies[j], independently."""
    right = rng.random((truth.size, len(accuracies))) < np.asarray(accuracies)
    return np.where(right, truth[:, None], 1 - truth[:, None]).astype(np.float64)


def test_dawid_skene_recovers_known_accuracies_without_labels() -> None:
    rng = np.random.default_rng(7)
    truth = (rng.random(4000) < 0.3).astype(np.float64)
    accuracies = [0.92, 0.85, 0.75, 0.68, 0.62]
    fitted = dawid_skene(_judges(truth, accuracies, rng))
    assert np.allclose(fitted.accuracy(), accuracies, atol=0.02)
    assert fitted.prevalence == pytest.approx(0.3, abs=0.02)
    votes = _judges(truth, accuracies, np.random.default_rng(8))
    ds = (dawid_skene(votes).posterior >= 0.5) == truth
    majority = (votes.mean(axis=1) >= 0.5) == truth
    assert ds.mean() > majority.mean() + 0.01  # it trusts the good judges more than the majority does


def test_dawid_skene_reads_missing_votes_and_refuses_scores() -> None:
    votes = np.array([[1, 1, np.nan], [0, 0, 0], [1, np.nan, 1], [0, 1, 0]], dtype=np.float64)
    assert dawid_skene(votes).posterior.shape == (4,)
    with pytest.raises(ValueError, match="0 or 1"):
        dawid_skene(np.array([[0.3, 1.0], [0.0, 1.0]]))


def _biased_panel(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two good judges (0.85) and one that says yes to 90 % of the negatives (lenient)."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < 0.4).astype(np.float64)
    scores = _judges(truth, [0.85, 0.85, 0.95], rng)
    lenient = (truth == 0) & (rng.random(n) < 0.9)
    scores[lenient, 2] = 1.0
    return scores, truth


def test_learned_weights_beat_a_plain_mean_when_one_judge_is_biased() -> None:
    gains = []
    for seed in range(5):
        scores, truth = _biased_panel(600, seed)
        folds = stratified_folds(list(truth), 5, seed)
        learned = combine_scores("learned", scores, labels=truth, fold_of=folds)
        mean = combine_scores("mean", scores)
        gains.append(((learned >= 0.5) == truth).mean() - ((mean >= 0.5) == truth).mean())
    assert min(gains) > 0 and float(np.mean(gains)) > 0.04, gains
    weights = fit_weights(*_biased_panel(600, 0)).weights
    assert weights[2] < 0.5 * min(weights[:2])  # the lenient judge counts for little


def test_cross_fitting_never_scores_an_item_on_its_own_label() -> None:
    scores, truth = _biased_panel(200, 1)
    folds = stratified_folds(list(truth), 5, 0)
    before = cross_fitted(scores, truth, folds)
    flipped = truth.copy()
    flipped[17] = 1 - flipped[17]
    after = cross_fitted(scores, flipped, folds)
    assert after[17] == before[17]
    same_fold = folds == folds[17]
    assert np.array_equal(after[same_fold], before[same_fold])
    assert not np.array_equal(after[~same_fold], before[~same_fold])  # the label was used, elsewhere


def test_bad_scores_are_refused() -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        combine_scores("mean", np.array([[0.2, np.nan], [0.1, 0.3]]))
    with pytest.raises(ValueError, match="at least two judges"):
        combine_scores("mean", np.array([[0.2], [0.1]]))
    with pytest.raises(ValueError, match="unknown combination"):
        combine_scores("median", np.array([[0.2, 0.3]]))


def test_the_peoples_alpha_the_judges_alpha_stands_beside() -> None:
    from ragmetrics.panels.night import people_alpha
    from ragmetrics.trust.labels import labels_from_rows
    from ragmetrics.trust.people import krippendorff_alpha

    ann = [1, 0, 1, 1, 0, 0, 1, 0]
    bob = [1, 0, 0, 1, 0, 1, 1, 0]
    rows = [(i + 1, {"sample_id": f"q{i}", "metric": "faithfulness", "label": v, "labeller": who})
            for who, values in (("ann", ann), ("bob", bob)) for i, v in enumerate(values)]  # fmt: skip
    labels = labels_from_rows([(n + 16 * (r["labeller"] == "bob"), r) for n, r in rows], source="l.csv")
    expected = krippendorff_alpha(np.array([ann, bob], dtype=np.float64))
    assert people_alpha(labels, ["faithfulness"], 0.5) == pytest.approx(expected)
    one = labels_from_rows([(i + 1, {"sample_id": f"q{i}", "metric": "faithfulness", "label": v})
                            for i, v in enumerate(ann)], source="l.csv")  # fmt: skip
    assert people_alpha(one, ["faithfulness"], 0.5) is None  # one labeller: no agreement between people
