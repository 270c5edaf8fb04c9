"""Review fixes of the validity study: a lower-is-better answer quality is oriented, and answer values dropped
for having no answer behind them are counted and said."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from ragmetrics.options import declare_direction, forget_direction
from ragmetrics.validity import ValiditySettings, validity_data, validity_study

from .helpers import report_of, world


@pytest.fixture
def answer_error() -> Iterator[str]:
    declare_direction("answer_error", False)  # a team's answer metric where smaller is better
    yield "answer_error"
    forget_direction("answer_error")


def test_a_lower_is_better_answer_quality_is_oriented_before_tau(answer_error: str) -> None:
    columns = world()
    columns[answer_error] = 1.0 - columns.pop("token_f1")
    data = validity_data(report_of(columns), answer_metric=answer_error)
    assert any("answer_error: lower is better" in n for n in data.notes)
    settings = ValiditySettings(answer_metric=answer_error, samples=200, confidence=0.95, seed=3, alpha=0.05,
                                test="t", correction="holm", permutations=1000)  # fmt: skip
    result = validity_study(data, settings)
    good = next(m for m in result.metrics if m.metric == "ndcg@10 (utility)")
    assert good.per_query.estimate is not None and good.per_query.estimate > 0.5
    assert result.verdict.best == "ndcg@10 (utility)"  # before: the random metric led (all taus negated)


def test_answer_values_without_an_answer_are_counted_and_said() -> None:
    answered = {f"run{j}": {f"q{i:03d}" for i in range(60)} for j in range(4)}
    answered["run0"] -= {"q000", "q001"}
    answered["run2"] -= {"q005"}
    data = validity_data(report_of(world(runs=4)), answered=answered)
    assert int(np.isnan(data.answer).sum()) == 3
    assert any("without an answer behind them" in n and "run0 2" in n and "run2 1" in n for n in data.notes)


def test_a_night_with_answers_but_no_study_says_why() -> None:
    from ragmetrics.judge.base import RagSample
    from ragmetrics.nightly.validity_night import attach_validity

    columns = world(runs=1)  # one run: nothing to compare
    report = report_of(columns)
    judged = {"run0": [RagSample(id=f"q{i:03d}", question="?", answer="a") for i in range(60)]}
    notes: list[str] = []
    attach_validity(report, judged, notes)
    assert "validity" not in report.metadata.extra
    assert any(n.startswith("validity: not studied: ") and "at least 2 runs" in n for n in notes)  # before: silent


def test_missing_answer_quality_is_counted_and_said() -> None:
    columns = world(runs=4)
    columns["token_f1"][:7, 1] = np.nan  # the answer metric failed on 7 of run1's questions
    data = validity_data(report_of(columns))
    assert any(n.startswith("token_f1: 7 of 240 (question, run) pairs have no value") for n in data.notes)
