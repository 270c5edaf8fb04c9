"""Each judge metric end to end through the real openai client, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from ragmetrics.judge.evaluate import evaluate_rag

from .conftest import JudgeFactory, sample
from .loopback import LoopbackServer


def _chunks(pattern: list[int]) -> list[str]:
    return [f"Chunk {k} text{' [useful]' if v else ''}." for k, v in enumerate(pattern)]


@pytest.mark.parametrize("mode", ["per_sample", "per_chunk"])
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ([0, 1], 0.5),  # the worked example
        ([0, 1, 1], (1 / 2 + 2 / 3) / 2),  # 0.5833
        ([1, 0, 1], (1 + 2 / 3) / 2),
        ([1, 1, 0, 0], 1.0),
        ([0, 0, 0], 0.0),
        ([0, 0, 0, 1], 0.25),
    ],
)
def test_context_precision_hand_computed(
    make_judge: JudgeFactory, server: LoopbackServer, mode: str, pattern: list[int], expected: float
) -> None:
    judge = make_judge(context_precision_mode=mode, use_cache=False)
    res = evaluate_rag([sample("s", contexts=_chunks(pattern))], ["context_precision"], judge, progress=False)
    assert res.per_query["s"]["context_precision"] == pytest.approx(expected, abs=1e-12)
    detail = res.details["s"]["context_precision"]
    assert [v["verdict"] for v in detail.verdicts] == [bool(v) for v in pattern]
    assert all(v["reason"] for v in detail.verdicts)
    # one call per sample by default; RAGAS's way costs one call per chunk
    expected_calls = 1 if mode == "per_sample" else len(pattern)
    assert server.count(path="/v1/chat/completions") == expected_calls


def test_worked_example_0_1_1_rounds_to_05833(make_judge: JudgeFactory) -> None:
    judge = make_judge(use_cache=False)
    res = evaluate_rag(
        [sample("s", contexts=_chunks([0, 1, 1]))], ["context_precision"], judge, progress=False
    )
    assert round(res.per_query["s"]["context_precision"] or -1, 4) == 0.5833


@pytest.mark.parametrize("pattern", [[0, 1], [1, 0, 1, 1, 0], [0, 0, 1], [1], [0]])
def test_per_sample_and_per_chunk_agree(make_judge: JudgeFactory, pattern: list[int]) -> None:
    s = sample("s", contexts=_chunks(pattern), answer="An answer.")
    metrics = ["context_precision", "context_utilization"]
    a = evaluate_rag([s], metrics, make_judge(context_precision_mode="per_sample"), progress=False)
    b = evaluate_rag([s], metrics, make_judge(context_precision_mode="per_chunk"), progress=False)
    assert a.per_query == b.per_query
    for m in metrics:
        assert [v["verdict"] for v in a.details["s"][m].verdicts] == [
            v["verdict"] for v in b.details["s"][m].verdicts
        ]


def test_context_utilization_uses_the_answer(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    judge = make_judge(use_cache=False)
    s = sample("s", contexts=_chunks([1, 0, 1]), answer="A generated answer.", reference=None)
    res = evaluate_rag([s], ["context_utilization"], judge, progress=False)
    assert res.per_query["s"]["context_utilization"] == pytest.approx((1 + 2 / 3) / 2)
    (record,) = server.records
    assert record.prompt == "context_utilization"
    assert "A generated answer." in record.user and "<reference_answer>" not in record.user


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("Paris is the capital of France [attr].", 1.0),  # the worked example: 1 of 1
        ("First claim [attr]. Second claim. Third claim [attr].", 2 / 3),
        ("Nothing supported. Still nothing.", 0.0),
    ],
)
def test_context_recall_hand_computed(make_judge: JudgeFactory, reference: str, expected: float) -> None:
    judge = make_judge(use_cache=False)
    res = evaluate_rag([sample("s", reference=reference)], ["context_recall"], judge, progress=False)
    assert res.per_query["s"]["context_recall"] == pytest.approx(expected)
    statements = res.details["s"]["context_recall"].verdicts
    assert [v["verdict"] for v in statements] == ["[attr]" in v["statement"] for v in statements]


def test_context_recall_counts_our_statements(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    judge = make_judge(use_cache=False)
    reference = "NumPy is fast [attr]; it runs compiled C loops. It was first released in 2006."
    res = evaluate_rag([sample("s", reference=reference)], ["context_recall"], judge, progress=False)
    assert res.per_query["s"]["context_recall"] == pytest.approx(1 / 3)
    assert [v["statement"] for v in res.details["s"]["context_recall"].verdicts] == [
        "NumPy is fast [attr]",
        "it runs compiled C loops.",
        "It was first released in 2006.",
    ]
    (record,) = server.records
    assert 'statements count="3"' in record.user and f"<reference_answer>\n{reference}\n" in record.user


def test_context_recall_without_statements_is_a_failure_without_a_call(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    res = evaluate_rag([sample("s", reference="1. ")], ["context_recall"], make_judge(), progress=False)
    assert res.per_query["s"]["context_recall"] is None
    assert [f.cause for f in res.failures] == ["missing_field"] and server.records == []


def test_context_recall_a_dropped_statement_is_repaired(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("wrong_count", prompt="context_recall")
    judge = make_judge(use_cache=False)
    res = evaluate_rag(
        [sample("s", reference="One [attr]. Two. Three.")], ["context_recall"], judge, progress=False
    )
    assert res.per_query["s"]["context_recall"] == pytest.approx(1 / 3)
    assert [r.repair for r in server.records] == [False, True]


def test_context_relevancy_counts_our_sentences(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    judge = make_judge(use_cache=False)
    contexts = [
        "Canberra is the capital [rel]. Sydney is larger. Melbourne was a rival.",
        "The site was chosen in 1908 [rel].",
    ]
    res = evaluate_rag([sample("s", contexts=contexts)], ["context_relevancy"], judge, progress=False)
    assert res.per_query["s"]["context_relevancy"] == pytest.approx(2 / 4)
    verdicts = res.details["s"]["context_relevancy"].verdicts
    assert [(v["chunk"], v["verdict"]) for v in verdicts] == [(0, True), (0, False), (0, False), (1, True)]
    (record,) = server.records
    assert 'sentences count="4"' in record.user


def test_context_relevancy_wrong_sentence_count_is_repaired(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("wrong_count", prompt="context_relevancy")
    judge = make_judge(use_cache=False)
    contexts = ["One [rel]. Two. Three."]
    res = evaluate_rag([sample("s", contexts=contexts)], ["context_relevancy"], judge, progress=False)
    assert res.per_query["s"]["context_relevancy"] == pytest.approx(1 / 3)
    assert [r.repair for r in server.records] == [False, True]
    assert judge.info().usage.repairs == 1


def _register_vectors(server: LoopbackServer, question: str, answer: str) -> None:
    server.state.vectors[question] = [1.0, 0.0, 0.0]
    server.state.vectors[f"{answer} #1"] = [1.0, 0.0, 0.0]
    server.state.vectors[f"{answer} #2"] = [0.0, 1.0, 0.0]
    server.state.vectors[f"{answer} #3"] = [1.0, 1.0, 0.0]


def test_answer_relevancy_hand_computed(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    q, a = "Where was Einstein born?", "In Ulm."
    _register_vectors(server, q, a)
    judge = make_judge(use_cache=False)
    res = evaluate_rag([sample("s", question=q, answer=a)], ["answer_relevancy"], judge, progress=False)
    expected = (1.0 + 0.0 + 1 / math.sqrt(2)) / 3  # 0.5690
    assert res.per_query["s"]["answer_relevancy"] == pytest.approx(expected, abs=1e-6)
    cosines = [v["cosine"] for v in res.details["s"]["answer_relevancy"].verdicts]
    assert cosines == pytest.approx([1.0, 0.0, 1 / math.sqrt(2)], abs=1e-6)
    # one chat call for the 3 questions, one batched embeddings call for question + 3 generated questions
    assert server.count(path="/v1/chat/completions") == 1
    assert server.count(path="/v1/embeddings") == 1


@pytest.mark.parametrize(
    ("marker", "rule", "zero"),
    [
        ("[nc]", "any", True),
        ("[nc]", "all", True),
        ("[nc1]", "any", True),
        ("[nc1]", "all", False),
        ("", "any", False),
    ],
)
def test_answer_relevancy_noncommittal_rule(
    make_judge: JudgeFactory, server: LoopbackServer, marker: str, rule: str, zero: bool
) -> None:
    q, a = "Where was Einstein born?", f"I cannot say {marker}".strip()
    _register_vectors(server, q, a)
    judge = make_judge(use_cache=False, noncommittal_rule=rule)
    res = evaluate_rag([sample("s", question=q, answer=a)], ["answer_relevancy"], judge, progress=False)
    value = res.per_query["s"]["answer_relevancy"]
    assert value == (0.0 if zero else pytest.approx((1.0 + 1 / math.sqrt(2)) / 3, abs=1e-6))


def test_answer_relevancy_number_of_questions(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    judge = make_judge(use_cache=False, answer_relevancy_questions=5)
    res = evaluate_rag([sample("s")], ["answer_relevancy"], judge, progress=False)
    assert len(res.details["s"]["answer_relevancy"].verdicts) == 5
    assert "Number of questions to write: 5" in server.records[0].user


def test_answer_in_input_language_reaches_the_prompt(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    s = sample("s", question="Où est né Einstein ?", reference="Il est né à Ulm [attr].")
    evaluate_rag([s], ["context_recall"], make_judge(answer_in_input_language=True), progress=False)
    evaluate_rag([s], ["context_recall"], make_judge(answer_in_input_language=False), progress=False)
    # the option is part of the cache key: the second judge had to ask again
    assert server.count(path="/v1/chat/completions") == 2


def test_answer_relevancy_negative_mean_counts_as_zero_and_says_so(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    q, a = "Where was Einstein born?", "Bananas are yellow."
    server.state.vectors[q] = [1.0, 0.0, 0.0]
    for i, vec in enumerate(([-1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]), start=1):
        server.state.vectors[f"{a} #{i}"] = vec
    res = evaluate_rag(
        [sample("s", question=q, answer=a)], ["answer_relevancy"], make_judge(use_cache=False), progress=False
    )
    assert res.per_query["s"]["answer_relevancy"] == 0.0
    detail = res.details["s"]["answer_relevancy"]
    assert [v["cosine"] for v in detail.verdicts] == pytest.approx([-1.0, -1.0, 0.0])
    assert "is -0.6667, counted as 0" in (detail.reason or "")


def test_noncommittal_rule_edges() -> None:
    from ragmetrics.judge.formulas import answer_relevancy_score as answer_relevancy
    from ragmetrics.judge.formulas import is_noncommittal

    assert not is_noncommittal([], "any") and not is_noncommittal([], "all")
    assert is_noncommittal([False, True], "any") and not is_noncommittal([False, True], "all")
    with pytest.raises(ValueError, match="'any' or 'all'"):
        is_noncommittal([True], "most")
    assert answer_relevancy([1.0, 0.0], [[1.0, 0.0], [0.0, 2.0]], [False, False], rule="all") == 0.5


def test_the_default_noncommittal_rule_is_ragas_current_all(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    """RAGAS >= 0.3.6 scores 0 only when every generated question is noncommittal; one flagged is not enough."""
    from ragmetrics.judge.settings import JudgeSettings

    assert JudgeSettings().noncommittal_rule == "all"
    q, a = "Where was Einstein born?", "I cannot say [nc1]"
    _register_vectors(server, q, a)
    res = evaluate_rag([sample("s", question=q, answer=a)], ["answer_relevancy"], make_judge(use_cache=False),
                       progress=False)  # fmt: skip
    assert res.per_query["s"]["answer_relevancy"] == pytest.approx((1.0 + 1 / math.sqrt(2)) / 3, abs=1e-6)
