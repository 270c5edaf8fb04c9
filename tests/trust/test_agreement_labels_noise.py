"""Agreement figures, the labels file's errors, judge noise over repeats, and the typed API on results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import ragmetrics
from ragmetrics.errors import InputError
from ragmetrics.schema import JudgeDetail, RunMetadata, RunResult
from ragmetrics.trust.agreement import agreement, label_kind, roc_auc, roc_auc_ci
from ragmetrics.trust.labels import load_labels
from ragmetrics.trust.variance import judge_noise, noise_floor, verdict_flip_rate


def test_perfect_and_inverted_agreement() -> None:
    human = np.array([1, 0, 1, 1, 0, 0, 1, 0] * 5, dtype=float)
    same = agreement(human, human, kind="binary")
    assert same.accuracy is not None and same.accuracy.value == 1.0
    assert same.kappa is not None and same.kappa.value == 1.0
    assert same.bias.value == 0.0
    flipped = agreement(1 - human, human, kind="binary")
    assert flipped.kappa is not None and flipped.kappa.value == -1.0
    assert flipped.balanced_accuracy is not None and flipped.balanced_accuracy.value == 0.0


def test_bias_and_calibration_by_hand() -> None:
    judge = np.array([0.1, 0.15, 0.9, 0.95, 0.5])
    human = np.array([0.0, 0.0, 1.0, 1.0, 0.0])
    stats = agreement(judge, human, kind="binary", resamples=200)
    assert stats.bias.value == pytest.approx(np.mean(judge - human))
    assert stats.bias.low is not None and stats.bias.low < stats.bias.value < stats.bias.high
    by_bin = {(round(c.low, 1), round(c.high, 1)): (c.n, c.human_mean) for c in stats.calibration}
    assert (
        by_bin[(0.0, 0.2)] == (2, 0.0) and by_bin[(0.8, 1.0)] == (2, 1.0) and by_bin[(0.4, 0.6)] == (1, 0.0)
    )


def test_rank_agreement_on_graded_labels_has_cis() -> None:
    rng = np.random.default_rng(1)
    grades = rng.integers(0, 4, 300)
    judge = np.clip(grades / 3 + rng.normal(0, 0.2, 300), 0, 1)
    stats = agreement(judge, grades / 3, kind="graded", resamples=300)
    assert stats.kappa is None and stats.spearman is not None and stats.kendall is not None
    assert (
        0.6 < stats.spearman.value < 1.0 and stats.spearman.low < stats.spearman.value < stats.spearman.high
    )
    assert (
        label_kind([0, 1, 2, 3]) == "graded"
        and label_kind([0, 1]) == "binary"
        and label_kind([0.2]) == "score"
    )


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_labels_errors_name_file_line_and_field(tmp_path: Path) -> None:
    bad_range = _write(
        tmp_path / "a.jsonl",
        [{"sample_id": "q1", "metric": "m", "label": 1}, {"sample_id": "q2", "metric": "m", "label": 3}],
    )
    with pytest.raises(InputError, match=r"a\.jsonl.*line 2.*label.*outside \[0, 1\]"):
        load_labels(bad_range)
    assert load_labels(bad_range, scale=3).labels[1].value == 1.0
    dup = _write(
        tmp_path / "b.jsonl",
        [{"id": "q1", "metric": "m", "label": 1}, {"id": "q1", "metric": "m", "label": 0}],
    )
    with pytest.raises(InputError, match=r"line 2.*duplicate label.*first on line 1"):
        load_labels(dup)
    (tmp_path / "c.csv").write_text("sample_id,metric,label\nq1,m,yes\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.csv.*line 2.*label.*not a number"):
        load_labels(tmp_path / "c.csv")
    (tmp_path / "d.csv").write_text("who,metric,label\nq1,m,1\n", encoding="utf-8")
    with pytest.raises(InputError, match="no sample id column"):
        load_labels(tmp_path / "d.csv")
    good = load_labels(_write(tmp_path / "e.jsonl", [{"sample_id": "zz", "metric": "m", "label": 1}]))
    with pytest.raises(InputError, match=r"line 1.*unknown sample id 'zz'"):
        good.check_ids(["q1"])
    with pytest.raises(InputError, match="file not found"):
        load_labels(tmp_path / "missing.csv")


def test_labels_from_parquet(tmp_path: Path) -> None:
    import pandas as pd

    pd.DataFrame(
        {"sample_id": ["q1", "q2"], "metric": ["m", "m"], "label": [0.25, 1.0], "run": ["a", None]}
    ).to_parquet(tmp_path / "l.parquet")
    labels = load_labels(tmp_path / "l.parquet")
    assert labels.for_metric("m", "a")["q1"].value == 0.25 and "q1" not in labels.for_metric("m", "b")


def test_a_deterministic_judge_adds_no_noise() -> None:
    scores = np.tile(np.linspace(0, 1, 50)[:, None], (1, 3))
    noise = judge_noise(scores)
    assert noise.mean_spread == 0 and noise.flip_rate == 0 and noise.icc == 1.0
    assert noise.ci_with_noise == pytest.approx(noise.ci_samples, abs=0.02) and noise_floor(noise) < 0.02


def test_a_noisy_judge_widens_the_ci_and_lowers_the_icc() -> None:
    rng = np.random.default_rng(5)
    truth = rng.random(200)
    scores = np.clip(truth[:, None] + rng.normal(0, 0.25, (200, 3)), 0, 1)
    noise = judge_noise(scores)
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(noise.ci_with_noise) > width(noise.ci_samples)
    assert (
        noise.icc is not None and 0.2 < noise.icc < 0.8 and noise.flip_rate > 0.9
    )  # clipping keeps a few equal
    assert noise_floor(noise) > 0


def test_verdict_flip_rate() -> None:
    assert verdict_flip_rate([[[True, False], [True, True]], [[False], [False]]]) == pytest.approx(1 / 3)


def _result(name: str, scores: dict[str, float]) -> RunResult:
    result = RunResult(
        name=name,
        per_query={q: {"context_relevancy": v} for q, v in scores.items()},
        details={
            q: {"context_relevancy": JudgeDetail(verdicts=[{"verdict": v > 0.5}])} for q, v in scores.items()
        },
        metadata=RunMetadata(kind="judge", metrics=["context_relevancy"], num_queries=len(scores)),
    )
    result.recompute_aggregate()
    return result


def test_judge_agreement_and_ppi_on_a_result(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    human = {f"q{i}": float(rng.random() < 0.5) for i in range(300)}
    judged = _result(
        "run", {q: float(np.clip(0.6 * h + 0.3 + rng.normal(0, 0.1), 0, 1)) for q, h in human.items()}
    )
    path = _write(
        tmp_path / "l.jsonl",
        [{"sample_id": q, "metric": "context_relevancy", "label": h} for q, h in list(human.items())[:80]],
    )
    trust = ragmetrics.judge_agreement(judged, path)
    (agree,) = trust.agreement
    (ppi,) = trust.ppi
    assert agree.n_labeled == 80 and agree.label_kind == "binary" and agree.kappa is not None
    assert (
        ppi.n_labeled == 80 and ppi.n_unlabeled == 220 and ppi.ppi is not None and ppi.classical is not None
    )
    true_mean = float(np.mean(list(human.values())))
    assert ppi.ppi.low <= true_mean <= ppi.ppi.high  # type: ignore[operator]
    judged.trust = trust
    assert RunResult.model_validate_json(judged.model_dump_json()) == judged  # typed, round-trips
    other = _result(
        "better",
        {q: min(1.0, v + 0.1) for q, v in ((q, s["context_relevancy"]) for q, s in judged.per_query.items())},
    )
    pair = ragmetrics.ppi_difference(judged, other, path, "context_relevancy")
    assert pair is not None and pair.estimate.judge_only.estimate == pytest.approx(0.1, abs=0.02)


def test_judge_noise_stats_over_repeat_results() -> None:
    a = _result("r", {"q1": 0.2, "q2": 0.9, "q3": 0.4})
    b = _result("r", {"q1": 0.3, "q2": 0.9, "q3": 0.6})
    stats = ragmetrics.judge_noise_stats([a, b], "context_relevancy")
    assert stats is not None and stats.repeats == 2 and stats.samples == 3
    assert stats.flip_rate == pytest.approx(1 / 3)  # q3's verdict flips (0.4 -> 0.6)
    assert stats.spread["q2"] == 0.0 and stats.spread["q1"] > 0


def test_roc_auc_equals_the_share_of_correctly_ordered_pairs_ties_halved() -> None:
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 5, size=60).astype(float) / 4  # many ties
    labels = (rng.random(60) < scores * 0.8 + 0.1).astype(int)
    pos, neg = scores[labels == 1], scores[labels == 0]
    pairwise = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    assert roc_auc(scores, labels) == pytest.approx(pairwise)
    assert roc_auc([0.9, 0.1], [0, 1]) == 0.0 and roc_auc([0.9, 0.1], [1, 0]) == 1.0
    assert math.isnan(roc_auc([0.5, 0.6], [1, 1]))
    estimate = roc_auc_ci(scores, labels, resamples=200)
    assert estimate is not None and estimate.low <= estimate.value <= estimate.high
