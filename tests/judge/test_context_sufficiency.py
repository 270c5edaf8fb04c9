"""context_sufficiency (Joren et al., ICLR 2025) and its breakdown: the LLM path through the real openai client at
the loopback server, the local proxy on the built-in collection, and the paired comparison of two runs."""

from __future__ import annotations

import pytest

from ragmetrics.collection import load_samples
from ragmetrics.comparison.proportions import exact_mcnemar, wilson
from ragmetrics.comparison.sufficiency import compare_sufficiency, run_sufficiency
from ragmetrics.errors import InputError
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.registry import spec
from ragmetrics.judge.sufficiency import answer_outcome, sufficiency_breakdown
from ragmetrics.judge.text.signals import content_units, coverage
from ragmetrics.render._text import to_markdown
from ragmetrics.render.sufficiency import breakdown_grid, pair_grid

from .conftest import JudgeFactory
from .loopback import LoopbackServer

METRICS = ["context_sufficiency", "token_f1"]


def _samples() -> list[dict[str, object]]:
    return [
        # multi-hop: each context holds one of the two facts; only together are they sufficient
        {"id": "hop", "question": "Born when? [part:a] [part:b]", "contexts": ["Directed by X [part:a].",
         "X was born in 1899 [part:b]."], "answer": "In 1899.", "reference": "In 1899."},
        {"id": "half", "question": "Born when? [part:a] [part:b]", "contexts": ["Directed by X [part:a].",
         "X liked films."], "answer": "Year 1901.", "reference": "In 1899."},
        {"id": "full", "question": "How tall?", "contexts": ["It is 330 m tall [enough]."],
         "answer": "I don't know.", "reference": "330 m."},
    ]  # fmt: skip


def test_llm_path_scores_cells_and_reruns_from_cache(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    result = evaluate_rag(_samples(), METRICS, make_judge(), name="a", progress=False)
    assert {q: v["context_sufficiency"] for q, v in result.per_query.items()} == {"hop": 1.0, "half": 0.0,
                                                                                 "full": 1.0}  # fmt: skip
    # one call per sample with every context in it: sufficiency is judged on the contexts together
    assert server.count(prompt="context_sufficiency") == 3
    detail = result.details["hop"]["context_sufficiency"]
    assert detail.verdicts == [{"sufficient": True, "reason": "scripted: all needed facts present"}]
    assert detail.reason.startswith("context sufficient:")
    samples = [RagSample.model_validate(s) for s in _samples()]
    breakdown = sufficiency_breakdown(result, samples)
    assert {(q.question_id, q.sufficient, q.outcome) for q in breakdown.questions} == {
        ("hop", True, "correct"), ("half", False, "hallucinated"), ("full", True, "abstained")}  # fmt: skip
    assert "| sufficient | 1 (33%" in to_markdown(breakdown_grid(run_sufficiency(breakdown)))

    server.reset_records()
    again = evaluate_rag(_samples(), METRICS, make_judge(), name="a", progress=False)
    assert server.count() == 0
    assert again.per_query == result.per_query
    assert again.details["hop"]["context_sufficiency"].cached


def test_malformed_verdict_is_a_failure_with_cause_never_zero(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("malformed", times=None, prompt="context_sufficiency", match="330 m")
    result = evaluate_rag(_samples(), METRICS, make_judge(max_repairs=1), name="a", progress=False)
    assert result.per_query["full"]["context_sufficiency"] is None
    (failure,) = [f for f in result.failures if f.metric == "context_sufficiency"]
    assert (failure.query_id, failure.cause) == ("full", "invalid_output")
    assert result.per_query["hop"]["context_sufficiency"] == 1.0
    breakdown = sufficiency_breakdown(result, [RagSample.model_validate(s) for s in _samples()])
    assert breakdown.rated == 2
    assert breakdown.unrated == (("full", "context_sufficiency failed (invalid_output)"),)
    table = to_markdown(breakdown_grid(run_sufficiency(breakdown)))
    assert "Not rated (1): full: context_sufficiency failed (invalid_output)" in table


def test_missing_contexts_fail_and_an_empty_retrieval_is_insufficient_without_a_call(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    rows = [
        {"id": "none", "question": "How tall?", "answer": "330 m."},
        {"id": "empty", "question": "How tall?", "contexts": [], "answer": "330 m."},
    ]
    result = evaluate_rag(rows, ["context_sufficiency"], make_judge(), progress=False)
    (failure,) = result.failures
    assert (failure.query_id, failure.cause) == ("none", "missing_field")
    assert "contexts" in failure.message
    assert result.per_query["empty"]["context_sufficiency"] == 0.0
    assert server.count(prompt="context_sufficiency") == 0


def _collection_runs() -> tuple[list[RagSample], list[RagSample]]:
    """The collection's BM25 top-3 run, and the same run cut to its top-1 passage (same answers)."""
    top3 = load_samples()
    top1 = [s.model_copy(update={"contexts": s.context_list[:1], "context_ids": (s.context_ids or [])[:1]})
            for s in top3]  # fmt: skip
    return top3, top1


def test_local_proxy_breakdown_and_paired_comparison_on_the_collection() -> None:
    top3, top1 = _collection_runs()
    judge = LocalJudge()
    result3 = evaluate_rag(top3, METRICS, judge, name="top3", progress=False)
    result1 = evaluate_rag(top1, METRICS, judge, name="top1", progress=False)
    a, b = sufficiency_breakdown(result3, top3), sufficiency_breakdown(result1, top1)

    cut = spec("context_sufficiency").local_threshold
    assert cut is not None
    for breakdown, samples in ((a, top3), (b, top1)):
        assert breakdown.rated == len(samples) == 64 and not breakdown.unrated
        figures = run_sufficiency(breakdown)
        assert sum(c.count for c in figures.cells) == 64
        for s, q in zip(samples, breakdown.questions, strict=True):
            # the proxy's rule, recomputed here: joint word coverage of the question (no numbers in these)
            expected = coverage(content_units(s.question), content_units("\n".join(s.context_list))) >= cut
            assert q.sufficient == expected, s.id
        for c in figures.cells:
            assert c.count == breakdown.count(c.sufficient, c.outcome)
            assert c.share is not None and (c.low, c.high) == wilson(c.count, 64)
            assert c.low <= c.share <= c.high
    assert "PROXY" in result3.details["q01"]["context_sufficiency"].reason

    paired = compare_sufficiency(a, b)
    # a subset of the contexts can only cover fewer question words: top-1 never gains sufficiency
    assert paired.gained == 0 and paired.lost == a.count(True) - b.count(True) > 0
    assert paired.paired == 64 and paired.p_value == exact_mcnemar(paired.lost, 0) < 0.05
    assert paired.lines[1].startswith(
        f"retrieval: {paired.lost} more questions without sufficient context in top1 than in top3"
    )
    # same answers, so generation changed nothing on the questions sufficient in both runs: the drop of
    # "sufficient and hallucinated" in the cells is retrieval's, and is not said again as generation's
    assert all(g.left == g.entered == 0 for g in paired.generation)
    assert paired.lines[2].startswith("generation: as many hallucinated answers in top1 as in top3")
    for change in paired.cells:
        assert change.count_a == a.count(change.sufficient, change.outcome)
        assert change.count_b == b.count(change.sufficient, change.outcome)
        assert change.count_b - change.count_a == change.entered - change.left
    table = to_markdown(pair_grid(paired))
    assert "| insufficient | hallucinated |" in table


def test_runs_over_different_questions_are_not_compared() -> None:
    top3, _ = _collection_runs()
    judge = LocalJudge()
    a = sufficiency_breakdown(evaluate_rag(top3, METRICS, judge, name="a", progress=False), top3)
    short = top3[:10]
    b = sufficiency_breakdown(evaluate_rag(short, METRICS, judge, name="b", progress=False), short)
    with pytest.raises(InputError, match="not over the same questions"):
        compare_sufficiency(a, b)


def test_a_result_without_sufficiency_scores_is_an_input_error() -> None:
    top3, _ = _collection_runs()
    result = evaluate_rag(top3[:2], ["token_f1"], LocalJudge(), name="only-f1", progress=False)
    with pytest.raises(InputError, match="'context_sufficiency'"):
        sufficiency_breakdown(result, top3[:2])


@pytest.mark.parametrize(
    ("answer", "score", "outcome"),
    [
        ("I don't know.", 1.0, "abstained"),  # a refusal is a refusal even when its words score
        ("Ich weiß es nicht.", 0.0, "abstained"),
        ("我不知道。", 0.0, "abstained"),
        ("", 0.0, "abstained"),
        ("It is 330 m tall.", 0.5, "correct"),  # the threshold is inclusive
        ("It is 300 m tall.", 0.49, "hallucinated"),
    ],
)
def test_answer_outcome(answer: str, score: float, outcome: str) -> None:
    assert answer_outcome(answer, score, threshold=0.5) == outcome


def test_local_proxy_needs_the_question_numbers_and_content_words() -> None:
    rows = [
        {"id": "year", "question": "Which stdlib module changed in 3.12?", "contexts": ["The stdlib module "
         "json changed in 3.11."]},
        {"id": "same", "question": "Which stdlib module changed in 3.12?", "contexts": ["The stdlib module "
         "json changed in 3.12."]},
        {"id": "bare", "question": "What is it?", "contexts": ["Anything."]},
    ]  # fmt: skip
    result = evaluate_rag(rows, ["context_sufficiency"], LocalJudge(), progress=False)
    assert result.per_query["year"]["context_sufficiency"] == 0.0
    assert "number(s) 3.12 of the question missing" in result.details["year"]["context_sufficiency"].reason
    assert result.per_query["same"]["context_sufficiency"] == 1.0
    (skipped,) = result.not_applicable
    assert skipped.query_id == "bare" and "no content words" in skipped.reason
    assert result.per_query["bare"]["context_sufficiency"] is None and not result.failures


def _pair_rows(run: str) -> list[dict[str, object]]:
    """Five questions; run b loses q1's context (retrieval), hallucinates on q2 and abstains on q3 although its
    contexts suffice (generation); q4 and q5 are alike in both runs."""
    enough, short = "The tower is 330 m tall [enough].", "The tower stands in Paris."
    answers = {"a": ["330 m.", "330 m.", "330 m.", "330 m.", "I don't know."],
               "b": ["Forty metres.", "Ninety feet.", "I don't know.", "330 m.", "I don't know."]}  # fmt: skip
    contexts = {"a": [enough, enough, enough, enough, short], "b": [short, enough, enough, enough, short]}
    return [{"id": f"q{i + 1}", "question": "How tall is the tower?", "contexts": [contexts[run][i]],
             "answer": answers[run][i], "reference": "330 m."} for i in range(5)]  # fmt: skip


def test_paired_comparison_at_the_loopback_server_says_where_the_drop_comes_from(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    judge = make_judge()
    labelled = {}
    for run in ("a", "b"):
        rows = _pair_rows(run)
        result = evaluate_rag(rows, METRICS, judge, name=run, progress=False)
        labelled[run] = sufficiency_breakdown(result, [RagSample.model_validate(r) for r in rows])
    # one rating per question and run; the rows that are the same in both runs share one cached verdict
    assert server.count(prompt="context_sufficiency") == 2
    pair = compare_sufficiency(labelled["a"], labelled["b"])
    assert (pair.correct_a, pair.correct_b, pair.lost, pair.gained) == (4, 1, 1, 0)
    assert pair.correct_p == pytest.approx(0.25)  # exact McNemar, 3 discordant all one way: 2 / 2**3
    assert pair.lines == [
        "answers: 3 fewer correct answers in b than in a (4 and 1 of 5; exact McNemar p = 0.25)",
        "retrieval: 1 more question without sufficient context in b than in a (1 lost sufficiency, 0 gained it; "
        "exact McNemar p = 1)",
        "generation: 1 more hallucinated answer in b than in a on the 3 questions with sufficient context in both "
        "(1 entered, 0 left; exact McNemar p = 1)",
        "generation: 1 more abstention in b than in a on the 3 questions with sufficient context in both (1 "
        "entered, 0 left; exact McNemar p = 1)",
    ]
    cells = {(c.sufficient, c.outcome): (c.count_a, c.count_b, c.left, c.entered) for c in pair.cells}
    assert cells[(True, "correct")] == (4, 1, 3, 0)
    assert cells[(False, "hallucinated")] == (0, 1, 0, 1)
    assert cells[(False, "abstained")] == (1, 1, 0, 0)
    figures = run_sufficiency(labelled["b"])
    by_cell = {(c.sufficient, c.outcome): c for c in figures.cells}
    assert by_cell[(True, "hallucinated")].count == 1 and figures.sufficient == 3
    assert (by_cell[(True, "hallucinated")].low, by_cell[(True, "hallucinated")].high) == wilson(1, 5)
