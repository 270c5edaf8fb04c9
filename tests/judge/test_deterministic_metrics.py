"""Deterministic answer metrics against their references: SQuAD's official evaluation (its published rules,
written out below as the oracle) and Google's rouge-score, on random texts; citations by hand."""

from __future__ import annotations

import random
import re
import string
from collections import Counter

import pytest

from ragmetrics.errors import NotApplicable
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.deterministic import (
    cited_passages,
    exact_match_score,
    lcs_length,
    rouge_l_score,
    token_f1_score,
)
from ragmetrics.judge.evaluate import evaluate_rag

WORDS = ["the", "a", "an", "cat", "Cat", "sat", "on", "mat", "1,000", "U.S.", "don't", "e-mail", "x", "the.",
         "(a)", "Paris", "paris", "42", "rock'n'roll", "The", "AN", "--", "!"]  # fmt: skip


def _squad_normalize(s: str) -> str:
    """The official SQuAD v1.1/v2.0 script's normalize_answer, rule by rule (the oracle)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _squad_f1(prediction: str, truth: str) -> float:
    p, t = _squad_normalize(prediction).split(), _squad_normalize(truth).split()
    if not p or not t:  # v2.0's rule for empty answers
        return float(p == t)
    same = sum((Counter(p) & Counter(t)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(t)
    return 2 * precision * recall / (precision + recall)


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9)))


def test_exact_match_and_f1_equal_the_squad_script_on_random_texts() -> None:
    rng = random.Random(11)
    compared = 0
    for _ in range(5000):
        prediction, truth = _text(rng), _text(rng)
        if rng.random() < 0.2:
            truth = prediction.upper() if rng.random() < 0.5 else prediction + " the."
        assert exact_match_score(prediction, truth) == float(
            _squad_normalize(prediction) == _squad_normalize(truth)
        )
        assert token_f1_score(prediction, truth) == pytest.approx(_squad_f1(prediction, truth), abs=1e-12)
        compared += 1
    assert compared == 5000


def test_rouge_l_equals_rouge_score_on_random_texts() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer", reason="rouge-score is in the dev extra")
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    rng = random.Random(12)
    for _ in range(3000):
        prediction, reference = _text(rng), _text(rng)
        expected = scorer.score(reference, prediction)["rougeL"].fmeasure
        assert rouge_l_score(prediction, reference) == pytest.approx(expected, abs=1e-12), (
            prediction,
            reference,
        )


def test_lcs_by_hand() -> None:
    assert lcs_length("abcbdab", "bdcaba") == 4
    assert lcs_length([], ["a"]) == 0


def test_cjk_text_is_scored_by_character() -> None:
    # rouge-score and the SQuAD script would see no token at all in these
    assert token_f1_score("東京都", "東京") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert exact_match_score("東京。", "東京") == 1.0
    assert rouge_l_score("서울 특별시", "서울") > 0
    assert rouge_l_score("café au lait", "Café") == pytest.approx(2 * (1 / 3) / (1 / 3 + 1))


def test_citations_parsed() -> None:
    assert cited_passages("A [1] and B [2, 3]; C [1][4] and D [2-4].") == [1, 2, 3, 1, 4, 2, 3, 4]
    assert cited_passages("see [7]") == [7]
    with pytest.raises(NotApplicable):
        cited_passages("no citation here, only a list [a] and [ ]")


def _sample(**kw: object) -> RagSample:
    base: dict[str, object] = {"id": "s", "question": "q?"}
    return RagSample.model_validate({**base, **kw})


def test_metrics_through_evaluate_rag_with_any_backend() -> None:
    samples = [
        _sample(
            id="a",
            answer="The Eiffel Tower [1] is in Paris [3].",
            reference="Paris",
            contexts=["x", "y"],
            context_ids=["d1", "d2"],
            relevant_ids=["d1"],
        ),
        _sample(
            id="b", answer="Paris", reference="paris.", contexts=["x"], context_ids=["d9"], relevant_ids=[]
        ),
    ]
    metrics = ["exact_match", "token_f1", "rouge_l", "answer_length", "citation_validity", "citation_precision",
               "citation_recall"]  # fmt: skip
    result = evaluate_rag(samples, metrics, LocalJudge(), name="det", progress=False)
    a, b = result.per_query["a"], result.per_query["b"]
    assert a["exact_match"] == 0.0 and b["exact_match"] == 1.0
    # "eiffel tower 1 is in paris 3" (7 tokens: SQuAD drops the article and the brackets) against "paris"
    assert a["token_f1"] == pytest.approx(2 * (1 / 7) / (1 / 7 + 1))
    assert a["answer_length"] == 8.0  # the eiffel tower 1 is in paris 3
    assert a["citation_validity"] == 0.5  # [3] names no passage
    assert a["citation_precision"] == 1.0 and a["citation_recall"] == 1.0  # [1] is d1, judged relevant
    assert b["citation_validity"] is None  # no citation: not applicable, with its reason
    reasons = {(n.query_id, n.metric): n.reason for n in result.not_applicable}
    assert "cites no passage" in reasons[("b", "citation_validity")]
    assert not result.failures
    assert result.details["a"]["citation_validity"].reason.endswith("no passage [3]")
