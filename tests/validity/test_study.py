"""The study on in-memory nights: what is assessed, the figures against references, undefined figures named."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import kendalltau

from ragmetrics.errors import InputError
from ragmetrics.validity import ValiditySettings, validity_data, validity_study
from ragmetrics.validity.data import metric_kind, split_label

from .helpers import report_of, world


def _settings(answer: str = "token_f1", samples: int = 400) -> ValiditySettings:
    return ValiditySettings(answer_metric=answer, samples=samples, confidence=0.95, seed=3, alpha=0.05, test="t",
                            correction="holm", permutations=1000)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ndcg@10", ("ndcg@10", None)),
        ("ndcg@10 (utility)", ("ndcg@10", "utility")),
        ("ndcg@10 [generated]", ("ndcg@10", "generated")),
        ("utility:recall@5", ("recall@5", "utility")),
        ("human/map", ("map", "human")),
    ],
)
def test_a_qrels_label_is_read_from_the_metric_name(name: str, expected: tuple[str, str | None]) -> None:
    assert split_label(name) == expected


def test_metric_kinds_come_from_the_registries() -> None:
    assert metric_kind("ndcg@10", "human") == ("retrieval", "human")
    assert metric_kind("ndcg@10 (utility)", "human") == ("retrieval", "utility")
    assert metric_kind("udcg@5 [utility]") == ("udcg", "utility")
    assert metric_kind("utility:udcg@10") == ("udcg", "utility")  # as a night's utility_qrels names them
    assert metric_kind("utility:ndcg@10", "human") == ("retrieval", "utility")
    assert metric_kind("context_precision") == ("judge context", None)
    assert metric_kind("context_sufficiency") == ("judge context", None)
    assert metric_kind("faithfulness") is None and metric_kind("latency_s") is None
    assert metric_kind("my_team_metric") is None


def test_per_query_tau_equals_scipy_and_the_good_metric_is_named() -> None:
    columns = world()
    data = validity_data(report_of(columns))
    assert data.answer_metric == "token_f1" and set(data.metrics) == {"ndcg@10 (utility)", "ndcg@10", "recall@5 (random)"}
    result = validity_study(data, _settings())
    by_name = {m.metric: m for m in result.metrics}
    for metric, item in by_name.items():
        expected = kendalltau(columns[metric].ravel(), columns["token_f1"].ravel()).statistic
        assert item.per_query.estimate == pytest.approx(expected, abs=1e-12)
        assert item.units == 300 and item.questions == 60
        assert item.per_query.low is not None and item.per_query.low <= item.per_query.estimate <= (item.per_query.high or 0)
    assert result.verdict.best == "ndcg@10 (utility)"
    assert by_name["ndcg@10 (utility)"].kind == "retrieval" and by_name["ndcg@10 (utility)"].qrels == "utility"
    run_means = (columns["ndcg@10 (utility)"].mean(axis=0), columns["token_f1"].mean(axis=0))
    assert by_name["ndcg@10 (utility)"].per_system.estimate == pytest.approx(kendalltau(*run_means).statistic)
    assert by_name["ndcg@10 (utility)"].pairs == 10


def test_a_constant_metric_has_an_undefined_tau_said_as_such() -> None:
    columns = world(runs=3)
    columns["hit_rate@1"] = np.ones_like(columns["token_f1"])
    result = validity_study(validity_data(report_of(columns)), _settings())
    flat = next(m for m in result.metrics if m.metric == "hit_rate@1")
    assert flat.per_query.estimate is None and flat.per_query.undefined is not None
    assert "hit_rate@1 is constant (1 on all 180 pairs)" in flat.per_query.undefined
    assert "NaN" not in result.model_dump_json() and json.loads(result.model_dump_json())  # strict JSON
    # 3 runs: no per-system tau, and the reason instead of a number
    assert all(m.per_system.estimate is None and m.per_system.undefined == "3 runs, fewer than 4" for m in result.metrics)
    assert result.per_system_note is not None and "3 runs" in result.per_system_note


def test_missing_values_are_left_out_and_counted() -> None:
    columns = world()
    columns["ndcg@10"][:5, 0] = np.nan  # judge failures, say
    result = validity_study(validity_data(report_of(columns)), _settings())
    item = next(m for m in result.metrics if m.metric == "ndcg@10")
    assert item.units == 295 and item.left_out == 5
    assert any(n.startswith("ndcg@10: 5 (question, run) pairs") for n in result.notes)


def test_the_default_answer_metric_and_what_is_not_assessed() -> None:
    columns = world()
    columns["answer_correctness"] = columns.pop("token_f1")
    columns["latency_s"] = np.ones_like(columns["answer_correctness"])
    data = validity_data(report_of(columns))
    assert data.answer_metric == "answer_correctness"
    assert any("not assessed" in n and "latency_s" in n for n in data.notes)
    assert "latency_s" not in data.metrics
    assert "latency_s" in validity_data(report_of(columns), metrics=["latency_s"]).metrics  # asked by name


def test_no_answer_quality_is_an_error_naming_what_is_missing() -> None:
    columns = world()
    del columns["token_f1"]
    with pytest.raises(InputError, match="the night has no answer quality: no run has a value of any answer metric"):
        validity_data(report_of(columns))
    with pytest.raises(InputError, match="no answer quality 'answer_correctness'"):
        validity_data(report_of(world()), answer_metric="answer_correctness")
    with pytest.raises(InputError, match="the night has no answers"):
        validity_data(report_of(world()), answered={"run0": set(), "run1": set()})


def test_a_run_without_answer_quality_is_left_out_and_said() -> None:
    columns = world(runs=5)
    columns["token_f1"][:, 4] = np.nan
    data = validity_data(report_of(columns))
    assert data.runs == ["run0", "run1", "run2", "run3"]
    assert any("runs without answer quality (token_f1), left out: run4" in n for n in data.notes)


def test_scores_without_an_answer_behind_them_are_not_used() -> None:
    columns = world(runs=4)
    answered = {f"run{j}": {f"q{i:03d}" for i in range(60)} for j in range(4)}
    answered["run0"] -= {"q000", "q001"}
    data = validity_data(report_of(columns), answered=answered)
    assert int(np.isnan(data.answer).sum()) == 2
