"""Utility judgments (eRAG) against the scripted OpenAI-compatible server with the real `openai` client: one
request per distinct (question, passage), none on a rerun, a budget never passed, faults recorded per pair with
their cause (never a 0), the probability of abstaining from logprobs, questions without a reference skipped and
counted, and every retrieval metric of the registry on the qrels written."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import DISTINCT_PAIRS, PASSAGES, QUESTIONS, runs, write_inputs

from ragmetrics.cli.main import main
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.retrieval.evaluate import evaluate
from ragmetrics.retrieval.metrics import REGISTRY
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.utilities import AbstentionProbabilities
from ragmetrics.utility import (
    Budget,
    ExtractiveGenerator,
    OpenAIGenerator,
    UtilityQuestion,
    build_utility,
    plan_utility,
)


def _generator(server: Any, **kw: Any) -> OpenAIGenerator:
    return OpenAIGenerator(model="test-model", base_url=server.url, timeout_s=kw.pop("timeout_s", 5.0), **kw)


def _asked(server: Any) -> int:
    return int(server.count(prompt="rag_answer"))


def test_one_request_per_distinct_pair_and_a_rerun_sends_none(server: Any, tmp_path: Path) -> None:
    cache = tmp_path / "answers.sqlite"
    first = build_utility(QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache))
    assert _asked(server) == DISTINCT_PAIRS == first.requests == len(first.judgments)
    digests = [r.digest for r in server.records if r.prompt == "rag_answer"]
    assert len(set(digests)) == len(digests)  # each pair sent once
    grades = first.grades()
    assert all(grades[f"q{n}"] == {f"q{n}-a": 3, f"q{n}-b": 0, "shared": 0} for n in range(1, 7))
    assert "unpooled" not in str(grades)  # beyond k=3 in the second run: not asked
    server.reset_records()
    again = build_utility(QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache))
    assert _asked(server) == 0 and again.requests == 0
    assert all(j.cached for j in again.judgments) and again.grades() == grades
    # a changed setting (a generator that decides differently) is asked afresh
    build_utility(
        QUESTIONS, PASSAGES, runs(), _generator(server, max_tokens=32), k=3, cache=VerdictCache(cache)
    )
    assert _asked(server) == DISTINCT_PAIRS


def test_the_dry_run_prices_without_sending(server: Any, tmp_path: Path) -> None:
    gen = _generator(server, price_in=1.0, price_out=2.0)
    plan = plan_utility(QUESTIONS, PASSAGES, runs(), gen, k=3, budget=Budget(max_requests=5))
    assert _asked(server) == 0
    assert (plan.pairs, plan.cached, plan.requests, plan.within_budget) == (
        DISTINCT_PAIRS,
        0,
        DISTINCT_PAIRS,
        5,
    )
    bound = sum(gen.reservation(QUESTIONS[q].question, PASSAGES[d]) for q, d in
                [(f"q{n}", p) for n in range(1, 7) for p in (f"q{n}-a", f"q{n}-b", "shared")])  # fmt: skip
    assert plan.cost_bound == pytest.approx(bound) and bound > 0


@pytest.mark.parametrize("limit", ["requests", "cost"])
def test_a_budget_is_never_exceeded_and_the_rest_is_asked_later(
    server: Any, tmp_path: Path, limit: str
) -> None:
    cache = VerdictCache(tmp_path / "answers.sqlite")
    gen = _generator(server, price_in=1.0, price_out=1.0)
    one = gen.reservation(QUESTIONS["q1"].question, PASSAGES["q1-a"])
    budget = Budget(max_requests=7) if limit == "requests" else Budget(max_cost=one * 1.2)
    result = build_utility(QUESTIONS, PASSAGES, runs(), gen, k=3, cache=cache, budget=budget, concurrency=4)
    sent = _asked(server)
    assert sent == result.requests and 1 <= sent < DISTINCT_PAIRS
    if limit == "requests":
        assert sent == 7
    else:  # each call reserved at its bound, settled at what the server said it cost: never above max_cost
        assert budget.max_cost is not None and result.cost == budget.spent <= budget.max_cost
        assert budget.reserved == 0 and sent >= 2  # settled calls made room for more than one
    assert result.failed == {"budget_reached": DISTINCT_PAIRS - sent}
    assert sum(1 for j in result.judgments if j.grade is not None) == sent  # no 0 for an unasked pair
    server.reset_records()
    rest = build_utility(QUESTIONS, PASSAGES, runs(), gen, k=3, cache=cache)
    assert _asked(server) == DISTINCT_PAIRS - sent and not rest.failed


def test_faults_are_recorded_per_pair_with_their_cause_never_scored(server: Any, tmp_path: Path) -> None:
    server.inject("server_error", times=None, match="thing number 1")  # every ask of q1's passages
    server.inject("stall", times=None, match="thing number 2")
    server.inject("null_content", times=None, match="thing number 3")
    result = build_utility(
        QUESTIONS, PASSAGES, runs(), _generator(server, timeout_s=0.3), k=3,
        cache=VerdictCache(tmp_path / "a.sqlite"), retries=1,
    )  # fmt: skip
    by_q: dict[str, set[str | None]] = {}
    for j in result.judgments:
        by_q.setdefault(j.query_id, set()).add(j.cause)
        if j.cause is not None:
            assert j.grade is None and j.score is None and j.message
    assert by_q["q1"] == {"server_error"} and by_q["q2"] == {"timeout"} and by_q["q3"] == {"invalid_output"}
    assert by_q["q4"] == by_q["q5"] == by_q["q6"] == {None}
    assert result.failed == {"server_error": 3, "timeout": 3, "invalid_output": 3}
    grades = result.grades()
    assert set(grades) == {"q4", "q5", "q6"}  # a failed pair is unjudged, never graded 0
    assert result.counts()["scored"] == 9
    # a passing cause was asked again once (retries=1); a non-text answer too is asked once only
    assert server.count(prompt="rag_answer", status=500) == 6


def test_logprobs_give_the_probability_of_abstaining(server: Any, tmp_path: Path) -> None:
    result = build_utility(
        QUESTIONS,
        PASSAGES,
        runs(),
        _generator(server, logprobs=True),
        k=3,
        cache=VerdictCache(tmp_path / "a.db"),
    )
    probs = result.abstention()
    assert probs is not None and len(probs) == DISTINCT_PAIRS
    for n in range(1, 7):
        assert probs.p_abstain(f"q{n}", f"q{n}-a") == pytest.approx(n / 10, abs=1e-12)
        assert probs.p_abstain(f"q{n}", f"q{n}-b") == 1.0  # the scripted model abstains with certainty
    folder = result.write(tmp_path / "out")
    read = AbstentionProbabilities.read(folder / "abstention.jsonl")
    assert read.by_query == probs.by_query
    qrels = Qrels.read(folder / "utility.qrels")
    scored = evaluate(qrels, runs()[0], ["udcg@3", "ndcg@3"], utilities=read)
    # udcg by hand for q1 of the first run: ranks q1-a (relevant, u=0.9), q1-b, shared (irrelevant, u=0)
    expected = 1 / (1 + math.exp(-(0.9 * 1.0 + 0.0 + 0.0) / 3))
    assert scored.per_query["q1"]["udcg@3"] == pytest.approx(expected, abs=1e-12)
    # without logprobs no probability is made up
    plain = build_utility(QUESTIONS, PASSAGES, runs(), _generator(server), k=3)
    assert plain.abstention() is None and all(j.p_abstain is None for j in plain.judgments)


def test_questions_without_a_reference_are_skipped_and_said(server: Any, tmp_path: Path) -> None:
    questions = dict(QUESTIONS)
    questions["q2"] = UtilityQuestion("q2", QUESTIONS["q2"].question, None)
    questions["q5"] = UtilityQuestion("q5", QUESTIONS["q5"].question, "   ")
    result = build_utility(questions, PASSAGES, runs(), _generator(server), k=3)
    assert result.skipped_questions == ["q2", "q5"] and result.skipped_pairs == 6
    assert _asked(server) == DISTINCT_PAIRS - 6
    assert {j.query_id for j in result.judgments} == {"q1", "q3", "q4", "q6"}
    manifest = json.loads((result.write(tmp_path / "o") / "utility.json").read_text())
    assert manifest["counts"]["skipped_questions"] == 2 and manifest["skipped_questions"]["ids"] == [
        "q2",
        "q5",
    ]


def test_every_retrieval_metric_of_the_registry_runs_on_utility_qrels(tmp_path: Path) -> None:
    from ragmetrics import collection
    from ragmetrics.collection import load_pipeline_run
    from ragmetrics.utility.inputs import read_passages, read_questions

    run = load_pipeline_run()
    result = build_utility(
        read_questions(collection.questions_path()), read_passages(collection.passages_path()), [run],
        ExtractiveGenerator(), k=5,
    )  # fmt: skip
    folder = result.write(tmp_path / "u")
    written = Qrels.read(folder / "utility.qrels")
    assert written.to_dict() == result.grades()
    utilities = AbstentionProbabilities.read(folder / "abstention.jsonl")
    spellings = []
    for spec in REGISTRY:
        if spec.subtopics:
            continue  # intent-aware metrics read subtopic qrels, which no graded qrels file is
        spellings.append(f"{spec.name}@0.5" if spec.point else f"{spec.name}@5" if spec.cutoff else spec.name)
    assert len(spellings) >= 20
    scored = evaluate(written, run, spellings, utilities=utilities)
    for name in spellings:
        value = scored.aggregate[name]
        assert value is not None and math.isfinite(value), name
    assert scored.aggregate["ndcg@5"] > 0  # the extractive answers do grade passages relevant


def test_the_extractive_generator_answers_from_the_passage_or_abstains() -> None:
    import asyncio

    gen = ExtractiveGenerator()
    got = asyncio.run(
        gen.answer("Where is the Eiffel tower?", "Paris is big. The Eiffel tower stands in Paris.")
    )
    assert (got.text, got.p_abstain) == ("The Eiffel tower stands in Paris.", 0.0)
    none = asyncio.run(gen.answer("Where is the Eiffel tower?", "Bananas are yellow."))
    assert (none.text, none.p_abstain) == ("UNANSWERABLE", 1.0)


def test_the_cli_builds_prices_and_refuses_bad_input(server: Any, tmp_path: Path, capsys: Any) -> None:
    paths = write_inputs(tmp_path / "in")
    out = tmp_path / "out"
    base = [
        "utility", str(paths["first"]), str(paths["second"]), "--questions", str(paths["questions"]),
        "--passages", str(paths["passages"]), "-o", str(out), "--k", "3",
        "--generator", "openai", "--model", "test-model", "--base-url", server.url,
    ]  # fmt: skip
    assert main([*base, "--dry-run"]) == 0
    assert (
        _asked(server) == 0 and json.loads(capsys.readouterr().out.split("\n}\n")[0] + "}")["requests"] == 18
    )
    assert main([*base, "--logprobs"]) == 0
    assert _asked(server) == DISTINCT_PAIRS
    manifest = json.loads((out / "utility.json").read_text())
    assert manifest["qrels"]["origin"] == "utility" and manifest["provenance"]["metric"] == "token_f1"
    assert manifest["provenance"]["generator"]["model"] == "test-model" and manifest["files"]["abstention"]
    # bad input: exit 2 naming file, line and field
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "question": "ok?", "reference": "x"}\n{"id": "q2", "reference": "y"}\n')
    capsys.readouterr()
    assert main([*base[:3], "--questions", str(bad), *base[5:]]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "line 2" in err and "'question'" in err
    missing = tmp_path / "few.jsonl"
    missing.write_text('{"id": "q1-a", "text": "only one"}\n')
    assert main([*base[:5], "--passages", str(missing), *base[7:]]) == 2
    err = capsys.readouterr().err
    assert "has no passage text" in err and str(paths["first"]) in err and "first" in err
    assert main([*base[:13], *base[15:]]) == 2  # openai without --model
    assert "--model" in capsys.readouterr().err


def test_answer_correctness_is_scored_by_the_judge_and_its_failures_are_recorded(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings

    monkeypatch.setenv("RAGMETRICS_TEST_UTILITY_KEY", "sk-fake-utility")
    judge = make_judge(
        JudgeSettings(
            backend="openai", model="judge-model", embedding_model="emb", base_url=server.url,
            api_key_env="RAGMETRICS_TEST_UTILITY_KEY", cache_path=tmp_path / "verdicts.sqlite", max_retries=0,
        )
    )  # fmt: skip
    server.inject("server_error", times=None, prompt="answer_correctness", match="answer 4")
    result = build_utility(
        QUESTIONS, PASSAGES, runs(), _generator(server), k=3, metric="answer_correctness", judge=judge
    )
    assert _asked(server) == DISTINCT_PAIRS
    failed = [j for j in result.judgments if j.query_id == "q4"]  # the judge failed on q4's reference
    assert all(j.grade is None and j.score is None and j.cause == "server_error" and j.answer for j in failed)
    assert result.failed == {"server_error": 3}
    scored = [j for j in result.judgments if j.score is not None]
    assert len(scored) == DISTINCT_PAIRS - 3 and all(
        0.0 <= j.score <= 1.0 for j in scored if j.score is not None
    )
    assert result.provenance["metric"] == "answer_correctness"


def test_one_text_under_two_ids_is_asked_once(server: Any) -> None:
    from ragmetrics.retrieval.run import Run

    questions = {**QUESTIONS, "q1-copy": UtilityQuestion("q1-copy", QUESTIONS["q1"].question, "answer 1")}
    passages = {**PASSAGES, "q1-a-copy": PASSAGES["q1-a"]}
    run = Run.from_dict({"q1": {"q1-a": 2.0, "q1-b": 1.0}, "q1-copy": {"q1-a-copy": 2.0, "q1-a": 1.0}})
    gen = _generator(server)
    assert plan_utility(questions, passages, [run], gen, k=2).requests == 2
    result = build_utility(questions, passages, [run], gen, k=2)
    assert _asked(server) == 2 and len(result.judgments) == 4  # (q1, q1-a) text asked once for three id pairs
    assert {(j.query_id, j.doc_id): j.grade for j in result.judgments} == {
        ("q1", "q1-a"): 3, ("q1", "q1-b"): 0, ("q1-copy", "q1-a-copy"): 3, ("q1-copy", "q1-a"): 3,
    }  # fmt: skip
