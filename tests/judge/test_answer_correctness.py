"""answer_correctness and answer_similarity, RAGAS's definitions, with statements cut in code on both sides."""

from __future__ import annotations

import math

import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.formulas import answer_correctness_score, statement_f1

from .conftest import JudgeFactory, sample
from .loopback import LoopbackServer

ANSWER = "Canberra is the capital [tp]. It was founded in 1913 [tp]. It has two million people."
REFERENCE = "Canberra is the capital of Australia [cov]. It was founded in 1913 [cov]. It lies in the ACT."


def _vectors(server: LoopbackServer, cosine: float) -> None:
    server.state.vectors[ANSWER] = [1.0, 0.0]
    server.state.vectors[REFERENCE] = [cosine, math.sqrt(1.0 - cosine**2)]


def test_formulas_by_hand() -> None:
    assert statement_f1(2, 1, 1) == pytest.approx(2 / 3)
    assert answer_correctness_score(2, 1, 1, 0.9) == pytest.approx(0.725)
    assert answer_correctness_score(0, 0, 3, 0.4) == pytest.approx(0.1)  # a refusal: F1 0, similarity only
    assert statement_f1(0, 0, 0) == 0.0


def test_two_true_one_false_positive_one_false_negative_is_0_725(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    _vectors(server, 0.9)
    s = sample("c", answer=ANSWER, reference=REFERENCE)
    res = evaluate_rag([s], ["answer_correctness", "answer_similarity"], make_judge(), progress=False)
    assert res.failures == []
    assert res.per_query["c"]["answer_correctness"] == pytest.approx(0.725)
    assert res.per_query["c"]["answer_similarity"] == pytest.approx(0.9)
    classes = [v["class"] for v in res.details["c"]["answer_correctness"].verdicts]
    assert classes == ["TP", "TP", "FP", None, None, "FN"]
    assert "TP 2, FP 1, FN 1" in (res.details["c"]["answer_correctness"].reason or "")
    assert [r.prompt for r in server.records if r.prompt] == ["answer_correctness"]  # one call per sample


def test_weights_are_a_setting(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    _vectors(server, 0.9)
    res = evaluate_rag([sample("c", answer=ANSWER, reference=REFERENCE)], ["answer_correctness"],
                       make_judge(answer_correctness_weights=(1.0, 0.0)), progress=False)  # fmt: skip
    assert res.per_query["c"]["answer_correctness"] == pytest.approx(2 / 3)


def test_local_variant() -> None:
    s = sample(
        "l",
        answer="The Eiffel Tower was finished in 1889. Penguins live in Antarctica.",
        reference="The Eiffel Tower was completed in 1889. It stands in Paris.",
    )
    res = evaluate_rag([s], ["answer_correctness", "answer_similarity"], LocalJudge(), progress=False)
    assert res.failures == []
    classes = [v["class"] for v in res.details["l"]["answer_correctness"].verdicts]
    assert classes == ["TP", "FP", None, "FN"]
    value = res.per_query["l"]["answer_correctness"]
    similarity = res.per_query["l"]["answer_similarity"]
    assert value is not None and similarity is not None
    assert value == pytest.approx(0.75 * 0.5 + 0.25 * similarity)
