"""Agreement numbers where none is defined are said as undefined, with why, never a number; the labels' kind is
read from every labeller's own labels, so adjudication (a split yes/no to 0.5) does not turn it into a score."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ragmetrics
from ragmetrics.trust.labels import load_labels
from ragmetrics.trust.people import people_agreement
from tests.trust.test_agreement_labels_noise import _result

sklearn_metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is in the dev extra")
# scikit-learn warns where kappa is undefined: that is the case under test
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_cohen_kappa_with_one_category_throughout_is_undefined_as_in_scikit_learn() -> None:
    ratings = {"ann": {"q1": 1.0, "q2": 1.0}, "bob": {"q1": 1.0, "q2": 1.0}}
    with np.errstate(all="ignore"):
        assert math.isnan(sklearn_metrics.cohen_kappa_score([1, 1], [1, 1]))
    people = people_agreement(ratings)
    assert people.cohen is None and people.fleiss is None and people.alpha is None
    assert "0/0" in people.undefined["cohen"] and "every label is 1" in people.undefined["cohen"]
    assert people.percent is not None and people.percent.value == 1.0  # agreement itself is defined


@pytest.mark.parametrize("seed", range(12))
def test_cohen_kappa_is_a_number_exactly_where_scikit_learn_gives_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    if seed % 3 == 0:
        a = b = np.full(n, seed % 2)
    with np.errstate(all="ignore"):
        expected = sklearn_metrics.cohen_kappa_score(a, b)
    ratings = {"ann": {f"q{i}": float(v) for i, v in enumerate(a)}, "bob": {f"q{i}": float(v) for i, v in enumerate(b)}}
    people = people_agreement(ratings, resamples=50)
    if math.isnan(expected):
        assert people.cohen is None and "cohen" in people.undefined
    else:
        assert people.cohen is not None and people.cohen.value == pytest.approx(expected)


def _labels_file(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_split_binary_labels_stay_binary_under_majority(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    human = {f"q{i}": float(rng.random() < 0.5) for i in range(60)}
    judged = _result("run", {q: float(np.clip(0.7 * h + 0.15 + rng.normal(0, 0.05), 0, 1)) for q, h in human.items()})
    rows = []
    for i, (q, h) in enumerate(human.items()):
        rows.append({"sample_id": q, "metric": "context_relevancy", "label": h, "labeller": "ann"})
        bob = 1.0 - h if i % 5 == 0 else h  # bob disagrees on every fifth: a tie the majority makes 0.5
        rows.append({"sample_id": q, "metric": "context_relevancy", "label": bob, "labeller": "bob"})
    (agree,) = ragmetrics.judge_agreement(judged, _labels_file(tmp_path, rows)).agreement
    assert agree.label_kind == "binary" and agree.kappa is not None
    assert agree.people is not None and agree.people.level == "nominal"


def test_graded_labels_are_compared_with_the_judge_on_their_own_scale(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    grades = {f"q{i}": int(rng.integers(0, 5)) for i in range(80)}
    judged = _result("run", {q: float(np.clip(g / 4 + rng.normal(0, 0.03), 0, 1)) for q, g in grades.items()})
    rows = []
    for i, (q, g) in enumerate(grades.items()):
        rows.append({"sample_id": q, "metric": "context_relevancy", "label": g, "labeller": "ann"})
        other = min(4, g + 1) if i % 3 == 0 else g  # a split the majority adjudicates to a half grade
        rows.append({"sample_id": q, "metric": "context_relevancy", "label": other, "labeller": "bob"})
    labels = load_labels(_labels_file(tmp_path, rows), scale=4)
    (agree,) = ragmetrics.judge_agreement(judged, labels).agreement
    assert agree.label_kind == "graded"
    people = agree.people
    assert people is not None and people.level == "ordinal"
    # the judge tracks the grades closely: on the labels' own 0..4 scale it agrees with the people
    assert people.judge_alpha is not None and (people.judge_alpha.estimate or 0) > 0.8
