"""Agreement between people against reference implementations (the `krippendorff` package, statsmodels,
scikit-learn) on random data, to 1e-9; the judge beside the people on simulated labellers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmetrics.trust.people import (
    fleiss_kappa,
    judge_vs_people,
    krippendorff_alpha,
    people_agreement,
    percent_agreement,
)

krippendorff = pytest.importorskip("krippendorff", reason="the krippendorff package (dev extra) is the reference")


def _random(rng: np.random.Generator, labellers: int, items: int, values: int, missing: float) -> np.ndarray:
    data = rng.integers(0, values, size=(labellers, items)).astype(float)
    truth = rng.integers(0, values, size=items)
    agree = rng.random((labellers, items)) < 0.6  # people who mostly agree, not pure noise
    data[agree] = np.broadcast_to(truth, data.shape)[agree]
    data[rng.random((labellers, items)) < missing] = np.nan
    return data


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_equals_the_reference_with_missing_labels(level: str) -> None:
    rng = np.random.default_rng(11)
    for trial in range(40):
        data = _random(rng, labellers=int(rng.integers(2, 6)), items=int(rng.integers(5, 60)),
                       values=int(rng.integers(2, 6)), missing=0.25 if trial % 2 else 0.0)  # fmt: skip
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        got = krippendorff_alpha(data, level)  # type: ignore[arg-type]
        assert got == pytest.approx(expected, abs=1e-9), (trial, data.tolist())


def test_interval_alpha_on_scores_equals_the_reference() -> None:
    rng = np.random.default_rng(2)
    data = np.round(rng.random((3, 40)), 2)
    data[0, :5] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert krippendorff_alpha(data, "interval") == pytest.approx(expected, abs=1e-9)


def test_fleiss_kappa_equals_statsmodels() -> None:
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater", reason="statsmodels is the reference")
    rng = np.random.default_rng(5)
    for _ in range(30):
        data = _random(rng, labellers=int(rng.integers(2, 7)), items=int(rng.integers(4, 50)),
                       values=int(rng.integers(2, 5)), missing=0.0)  # fmt: skip
        table, _ = inter_rater.aggregate_raters(data.T.astype(int))
        assert fleiss_kappa(data) == pytest.approx(inter_rater.fleiss_kappa(table, method="fleiss"), abs=1e-9)


def test_cohen_kappa_of_two_people_equals_scikit_learn() -> None:
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is the reference")
    rng = np.random.default_rng(9)
    for _ in range(30):
        data = _random(rng, labellers=2, items=int(rng.integers(5, 80)), values=int(rng.integers(2, 5)), missing=0.0)
        ratings = {name: {f"i{j}": float(v) for j, v in enumerate(row)} for name, row in zip("ab", data, strict=True)}
        result = people_agreement(ratings, resamples=50)
        expected = metrics.cohen_kappa_score(data[0], data[1])
        if math.isnan(expected):
            continue
        assert result.cohen is not None and result.cohen.value == pytest.approx(expected, abs=1e-9)


def test_percent_agreement_and_the_disagreements_listed() -> None:
    ratings = {"ann": {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0},
               "bob": {"a": 1.0, "b": 1.0, "c": 1.0},
               "cyd": {"a": 1.0, "b": 0.0, "d": 0.0}}  # fmt: skip
    data = np.array([[1, 0, 1, 1], [1, 1, 1, np.nan], [1, 0, np.nan, 0]], dtype=float)
    # a: all agree (1); b: one pair of three agrees (1/3); c: agree (1); d: disagree (0)
    assert percent_agreement(data) == pytest.approx((1 + 1 / 3 + 1 + 0) / 4)
    result = people_agreement(ratings, resamples=100)
    assert result.items == 4 and result.labellers == ("ann", "bob", "cyd") and result.cohen is None
    assert [item for item, _ in result.disagreements] == ["b", "d"]
    assert result.disagreements[1][1] == {"ann": 1.0, "cyd": 0.0}
    assert result.percent is not None and result.percent.low <= result.percent.value <= result.percent.high


def test_bad_reliability_data_is_refused() -> None:
    with pytest.raises(ValueError, match="labellers x items"):
        krippendorff_alpha([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        krippendorff_alpha([[1.0, math.inf], [1.0, 0.0]])
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([[1.0, 0.0], [1.0, 0.0]], "ratio")  # type: ignore[arg-type]
    assert math.isnan(krippendorff_alpha([[1.0, 1.0], [1.0, 1.0]]))  # one value throughout: undefined


def _people(rng: np.random.Generator, truth: np.ndarray, flip: float) -> dict[str, float]:
    noisy = np.where(rng.random(truth.size) < flip, 1 - truth, truth)
    return {f"i{j}": float(v) for j, v in enumerate(noisy)}


def test_the_judge_beside_the_people() -> None:
    rng = np.random.default_rng(4)
    truth = (rng.random(300) < 0.5).astype(float)
    ratings = {"ann": _people(rng, truth, 0.1), "bob": _people(rng, truth, 0.1)}
    as_good = judge_vs_people(ratings, _people(rng, truth, 0.1), resamples=300)
    worse = judge_vs_people(ratings, _people(rng, truth, 0.35), resamples=300)
    assert as_good.standing == "within" and worse.standing == "below"
    assert as_good.people is not None and 0.5 < as_good.people.value < 0.8
    assert "within the people's own disagreement" in as_good.sentence()
    assert "less than they agree with each other" in worse.sentence()
