"""The local judge on plain cases a newcomer tries first: a swapped name, a changed number, a negation or an
opposite word, an invented addition, against right answers that paraphrase, round a number, answer tersely or
lean on a pronoun (tests/data/local_judge_plain.jsonl, written for this; benchmarks/plain_cases.py prints the
same figures). Floors, not targets: docs/local_judge.md gives the measured values."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ragmetrics import evaluate_rag
from ragmetrics.judge.backends.local import LocalJudge

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from plain_cases import plain_items, score_plain, summary


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, object]]:
    items = plain_items()
    return summary(items, score_plain(items))


def test_faithfulness_separates_right_from_wrong_answers(figures: dict[str, dict[str, object]]) -> None:
    assert figures["faithfulness"]["roc_auc"] >= 0.85  # 0.71 before the support checks named here


def test_answer_correctness_separates_right_from_wrong_answers(figures: dict[str, dict[str, object]]) -> None:
    assert figures["answer_correctness"]["roc_auc"] >= 0.80  # 0.56 before: it had no number or name check


MARS = "Mars is the fourth planet from the Sun. Iron oxide dust gives it a reddish look, so it is called the Red Planet."


@pytest.mark.parametrize(
    ("answer", "supported"),
    [
        ("Mars is known as the Red Planet.", True),
        ("Venus is known as the Red Planet.", False),  # a swapped name at the start of the sentence
        ("Mars is called the Red Planet because of its red oceans.", False),  # an invented addition
        ("Mars has three moons.", False),  # a number the context does not state
    ],
)
def test_plain_faithfulness_cases(answer: str, supported: bool) -> None:
    row = {
        "id": "m",
        "question": "Which planet is called the Red Planet?",
        "contexts": [MARS],
        "answer": answer,
    }
    result = evaluate_rag([row], ["faithfulness"], LocalJudge(model="minilm"), progress=False)
    assert (result.per_query["m"]["faithfulness"] == 1.0) is supported
    if not supported:
        (verdict,) = result.details["m"]["faithfulness"].verdicts
        assert "but" in verdict["reason"] or "no chunk" in verdict["reason"]  # the reason names the detail


def test_an_approximate_terse_answer_is_supported() -> None:
    row = {"id": "l", "question": "How long does sunlight take to reach Earth?",
           "contexts": ["Light from the Sun takes about 8 minutes and 20 seconds to reach Earth, crossing roughly "
                        "150 million kilometres."],
           "answer": "About 8 minutes and 20 seconds."}  # fmt: skip
    result = evaluate_rag([row], ["faithfulness"], LocalJudge(model="minilm"), progress=False)
    assert result.per_query["l"]["faithfulness"] == 1.0
    assert "holds 100% of its words and numbers" in result.details["l"]["faithfulness"].verdicts[0]["reason"]


def test_answer_correctness_checks_numbers_as_faithfulness_does() -> None:
    rows = [{"id": i, "question": "How old is the Earth?", "reference": "The Earth is about 4.54 billion years old.",
             "answer": answer} for i, answer in (("right", "The Earth is roughly 4.5 billion years old."),
                                                 ("wrong", "The Earth is about 2 billion years old."))]  # fmt: skip
    result = evaluate_rag(rows, ["answer_correctness"], LocalJudge(model="minilm"), progress=False)
    right, wrong = (
        result.per_query["right"]["answer_correctness"],
        result.per_query["wrong"]["answer_correctness"],
    )
    assert right is not None and wrong is not None
    assert right > 0.7 > 0.4 > wrong


NANCUMSUM = (
    "Return the cumulative sum of array elements over a given axis treating Not a\nNumbers (NaNs) as zero.  "
    "The cumulative sum does not change when NaNs are\nencountered and leading NaNs are replaced by zeros."
)


@pytest.mark.parametrize(
    ("metric", "context", "text"),
    [
        # a name holding a negation word is not a negation (issue 47: context recall 0 for a verbatim context)
        ("faithfulness", NANCUMSUM, "It returns the cumulative sum, treating Not a Numbers (NaNs) as zero."),
        ("context_recall", NANCUMSUM, "Return the cumulative sum treating Not a Numbers (NaNs) as zero."),
        # an answer particle opening the reference ("No.") is not a negation of what follows
        ("context_recall", "np.sort returns a sorted copy of an array.", "No. np.sort returns a sorted copy."),
        # "without" on both sides, in clauses cut differently
        ("faithfulness", "Gives a new shape to an array without changing its data.",
         "reshape changes the shape and keeps the data without changes."),
        # a plural the passage has in the singular is found ("copies" / "copy")
        ("faithfulness", "A 1-D array is returned. A copy is made only if needed.",
         "A 1-D array is returned, and copies are made only if needed."),
    ],
)  # fmt: skip
def test_negation_words_that_do_not_negate(metric: str, context: str, text: str) -> None:
    row = {"id": "n", "question": "What does it do?", "contexts": [context], "answer": text, "reference": text}
    result = evaluate_rag([row], [metric], LocalJudge(model="minilm"), progress=False)
    assert result.per_query["n"][metric] == 1.0, result.details["n"][metric].verdicts


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ("np.sort returns a sorted copy of an array.", "np.sort does not return a sorted copy."),
        ("ravel returns a contiguous flattened array.", "ravel never returns a flattened array."),
        ("Return the sum treating Not a Numbers (NaNs) as zero.", "It does not treat NaNs as zero."),
    ],
)
def test_real_negations_still_count(context: str, answer: str) -> None:
    row = {"id": "n", "question": "What does it do?", "contexts": [context], "answer": answer}
    result = evaluate_rag([row], ["faithfulness"], LocalJudge(model="minilm"), progress=False)
    assert result.per_query["n"]["faithfulness"] == 0.0
