"""Utility judgments (eRAG): each pooled passage given alone to the generator, its answer scored against the
reference, the scores as graded qrels.

Salemi and Zamani (SIGIR 2024, arXiv 2404.13781) label each retrieved document by how good an answer the
system's own LLM gives from that document alone; such labels track end-to-end quality better than human
relevance labels. Here:

- the pool is the distinct (question, passage) pairs in the top `k` of the given runs, so a passage two runs
  retrieved for one question is asked about once (requests = distinct pairs);
- a question without a reference answer cannot be scored: its pairs are skipped and counted
  (`skipped_questions`), never asked about nor graded 0;
- each answer is cached (`VerdictCache`, SQLite WAL, one committed transaction per answer) under everything
  that decides it (the generator's identity with its prompt version and settings, the question's text, the
  passage's text), so a rerun asks nothing it has and a killed build loses at most the answers in flight.
  A failed call is never cached as a value (its cause is kept apart) and is asked again on the next build;
- every call is taken from a `Budget` (requests, and cost reserved at its bound) before it is sent, so a budget
  is never exceeded; a pair the budget could not pay for is recorded as `budget_reached`;
- the score is `metric`(answer, reference): `token_f1` / `exact_match` (the judge's deterministic metrics,
  SQuAD normalisation) or the judge's `answer_correctness`; the grade is round-half-up(score x max_grade);
- a generator that fails, times out or returns non-text is recorded per pair with its cause and gets no grade:
  the pair is absent from the qrels (unjudged), never 0.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from ragmetrics.errors import InputError
from ragmetrics.judge.cache import VerdictCache, cache_key
from ragmetrics.judge.deterministic import exact_match_score, token_f1_score
from ragmetrics.retrieval.run import Run
from ragmetrics.utility.budget import Budget
from ragmetrics.utility.generators import (
    P_ABSTAIN_MISSING,
    RETRYABLE,
    GeneratedAnswer,
    GenerationFailed,
    Generator,
    check_answer,
)
from ragmetrics.utility.logprob_fallback import LogprobFallback
from ragmetrics.utility.result import PairJudgment, UtilityJudgments, UtilityPlan

__all__ = [
    "ANSWER_METRICS",
    "AnswerMetric",
    "Budget",
    "UtilityQuestion",
    "abuild_utility",
    "build_utility",
    "pool_pairs",
]

AnswerMetric = Literal["token_f1", "exact_match", "answer_correctness"]
ANSWER_METRICS: tuple[str, ...] = get_args(AnswerMetric)
ANSWER_SCHEMA = "ragmetrics-utility-answer-1"
"""Version of the answer cache key and value; a change here asks every answer again."""
CACHE_KIND = "utility_answer"


@dataclass(frozen=True)
class UtilityQuestion:
    """A question, and its reference answer (None: the question is skipped and counted)."""

    id: str
    question: str
    reference: str | None = None


def pool_pairs(runs: Sequence[Run], k: int) -> list[tuple[str, str]]:
    """The distinct (query id, document id) pairs in the top `k` of `runs`, in first-seen order."""
    return list(_pool(runs, k))


def _pool(runs: Sequence[Run], k: int) -> dict[tuple[str, str], Run]:
    """Each pooled pair and the first run that ranks it (named in an error about the pair)."""
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}", field="k")
    pool: dict[tuple[str, str], Run] = {}
    for run in runs:
        for qid, ranking in run.to_dict().items():
            # the order every retrieval metric reads: score descending, ties by document id descending
            ranked = sorted(ranking.items(), key=lambda item: (item[1], item[0]), reverse=True)
            for doc, _ in ranked[:k]:
                pool.setdefault((qid, doc), run)
    return pool


def answer_key(identity: Mapping[str, Any], question: str, passage: str) -> str:
    """What decides an answer: the generator (kind, model, prompt version, settings), the question's text and
    the passage's text; ids are not in it, so one text asked under two ids is asked once."""
    return cache_key(
        {"schema": ANSWER_SCHEMA, "generator": dict(identity), "question": question, "passage": passage}
    )


def _stored_answer(value: Any) -> GeneratedAnswer | None:
    """A cached answer, validated again (a row is data from disk); None when it does not validate."""
    if not isinstance(value, dict):
        return None
    try:
        text = check_answer(value.get("text"))
    except GenerationFailed:
        return None
    p = value.get("p_abstain")
    if p is not None and (isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0):
        return None
    missing = value.get("missing")
    if p is None and missing not in P_ABSTAIN_MISSING:
        missing = "not_given"  # an answer cached before the reason was stored: it had no probability
    return GeneratedAnswer(
        text, p_abstain=None if p is None else float(p), p_abstain_missing=None if p is not None else missing
    )


def _grade(score: float, max_grade: int) -> int:
    return min(max_grade, max(0, math.floor(score * max_grade + 0.5)))


@dataclass
class _Work:
    questions: Mapping[str, UtilityQuestion]
    passages: Mapping[str, str]
    pairs: list[tuple[str, str]] = field(default_factory=list)
    skipped_questions: list[str] = field(default_factory=list)
    skipped_pairs: int = 0


def _prepare(
    questions: Mapping[str, UtilityQuestion], passages: Mapping[str, str], pool: Mapping[tuple[str, str], Run]
) -> _Work:
    work = _Work(questions, passages)
    skipped: dict[str, None] = {}
    for (qid, doc), run in pool.items():
        asked = questions.get(qid)
        if asked is None:
            raise InputError(
                f"query {qid!r} is ranked by run {run.name!r} but the questions hold no such id",
                source=run.source,
                field="query_id",
            )
        if doc not in passages:
            raise InputError(
                f"document {doc!r} (ranked for query {qid!r} by run {run.name!r}) has no passage text",
                source=run.source,
                field="doc_id",
            )
        if asked.reference is None or not asked.reference.strip():
            skipped[qid] = None
            work.skipped_pairs += 1
            continue
        work.pairs.append((qid, doc))
    work.skipped_questions = list(skipped)
    return work


def plan_utility(
    questions: Mapping[str, UtilityQuestion],
    passages: Mapping[str, str],
    runs: Sequence[Run],
    generator: Generator,
    *,
    k: int = 10,
    cache: VerdictCache | None = None,
    budget: Budget | None = None,
) -> UtilityPlan:
    """What `build_utility` would ask (the dry run): distinct pairs, those the cache holds, the calls and their
    cost bound, and how many of them the budget pays for. Nothing is sent."""
    work = _prepare(questions, passages, _pool(runs, k))
    identity = generator.identity
    keys = [answer_key(identity, questions[q].question, passages[d]) for q, d in work.pairs]
    found = cache.get_many(keys) if cache is not None else dict.fromkeys(keys)
    todo: dict[str, tuple[str, str]] = {}  # distinct answers to ask for: key -> (question, passage)
    for (q, d), key in zip(work.pairs, keys, strict=True):
        if _stored_answer(getattr(found.get(key), "value", None)) is None:
            todo.setdefault(key, (questions[q].question, passages[d]))
    fallback = LogprobFallback(generator, cache, answer_key, _stored_answer)
    plain = 0
    if fallback.enabled and cache is not None and todo:
        plain_keys = [fallback.plain_key(question, passage) for question, passage in todo.values()]
        held = cache.get_many(plain_keys)
        plain = sum(
            1 for key in plain_keys if _stored_answer(getattr(held.get(key), "value", None)) is not None
        )
    costs = [generator.reservation(question, passage) for question, passage in todo.values()]
    # With logprobs, a server that refuses them answers the build's first request with HTTP 400 and that
    # pair is asked again without (logprob_fallback): one request more than the pairs, taken from the budget
    # first. Counted at the largest pair's bound, so the plan is an upper bound whichever pair goes first.
    refused = [max(costs)] if fallback.enabled and costs else []
    trial = Budget(budget.max_requests, budget.max_cost) if budget is not None else Budget()
    fits = sum(1 for c in [*refused, *costs] if trial.take(c))  # each at its bound: none settles lower in a plan
    return UtilityPlan(
        pairs=len(work.pairs),
        cached=sum(1 for key in keys if key not in todo),
        requests=len(todo) + len(refused),
        cost_bound=sum(costs) + sum(refused),
        within_budget=fits,
        refused_request=len(refused),
        skipped_questions=work.skipped_questions,
        skipped_pairs=work.skipped_pairs,
        generator=generator.identity,
        cached_without_logprobs=plain,
    )


async def abuild_utility(
    questions: Mapping[str, UtilityQuestion],
    passages: Mapping[str, str],
    runs: Sequence[Run],
    generator: Generator,
    *,
    k: int = 10,
    metric: AnswerMetric = "token_f1",
    judge: Any = None,
    cache: VerdictCache | None = None,
    budget: Budget | None = None,
    max_grade: int = 3,
    concurrency: int = 4,
    retries: int = 1,
) -> UtilityJudgments:
    """Utility judgments for the pooled top `k` of `runs` (module docstring). `judge` scores
    `answer_correctness` (default: `ragmetrics.judge.select.make_judge()`); `retries` re-asks a pair whose call
    failed for a passing cause (each re-ask a budgeted request)."""
    if metric not in ANSWER_METRICS:
        raise InputError(f"metric must be one of {', '.join(ANSWER_METRICS)}, got {metric!r}", field="metric")
    if max_grade < 1:
        raise InputError(f"max_grade must be >= 1, got {max_grade}", field="max_grade")
    if concurrency < 1:
        raise InputError(f"concurrency must be >= 1, got {concurrency}", field="concurrency")
    if retries < 0:
        raise InputError(f"retries must be >= 0, got {retries}", field="retries")
    budget = budget if budget is not None else Budget()
    budget._settled = None  # an event of an earlier build's loop cannot be awaited in this one
    requests_before, spent_before = budget.requests, budget.spent  # a budget shared by builds counts them all
    work = _prepare(questions, passages, _pool(runs, k))
    identity = generator.identity
    keys = {pair: answer_key(identity, questions[pair[0]].question, passages[pair[1]]) for pair in work.pairs}
    found = cache.get_many(list(dict.fromkeys(keys.values()))) if cache is not None else {}
    answers: dict[str, GeneratedAnswer] = {}
    cached_keys: set[str] = set()
    for key, hit in found.items():
        stored = _stored_answer(hit.value) if hit is not None else None
        if stored is not None:
            answers[key] = stored
            cached_keys.add(key)
    failures: dict[str, tuple[str, str]] = {}
    todo = list(dict.fromkeys(key for key in keys.values() if key not in answers))
    texts = {key: (questions[q].question, passages[d]) for (q, d), key in keys.items()}
    queue: asyncio.Queue[str] = asyncio.Queue()
    for key in todo:
        queue.put_nowait(key)

    fallback = LogprobFallback(generator, cache, answer_key, _stored_answer)

    async def ask(key: str) -> None:
        probe = await fallback.first_request()
        try:
            await ask_pair(key)
        finally:
            if probe:
                fallback.probed(answered=key in answers)

    async def ask_pair(key: str) -> None:
        question, passage = texts[key]
        plain = False  # this pair's request with logprobs was refused: it is asked without them
        attempt = 0
        while attempt <= retries:
            if plain or fallback.active:  # answered without logprobs by an earlier build?
                stored = await fallback.cached(question, passage)
                if stored is not None:
                    if plain:
                        fallback.confirm()  # refused with logprobs, answered without: the server refuses them
                    answers[key] = stored
                    cached_keys.add(key)
                    failures.pop(key, None)
                    return
            reservation = generator.reservation(question, passage)
            if not await budget.acquire(reservation):
                earlier = (
                    f" (an earlier ask failed: {failures[key][0]}: {failures[key][1]})"
                    if key in failures
                    else ""
                )
                failures[key] = (
                    "budget_reached",
                    f"the budget ({_budget_text(budget)}) was spent before this request{earlier}",
                )
                return
            asked_logprobs = not plain and fallback.asks_logprobs()
            try:
                asking = (
                    fallback.ask_plain(question, passage) if plain else generator.answer(question, passage)
                )
                got = await asking
            except GenerationFailed as exc:
                budget.settle(reservation, reservation)  # a failed call may still have been billed: count it
                if fallback.is_refusal(exc, asked_logprobs):
                    plain = True  # ask it again without logprobs (not a re-ask of `retries`)
                    failures[key] = (exc.cause, f"{exc.message} to a request with logprobs")
                    continue
                failures[key] = (
                    (exc.cause, f"{exc.message}, with logprobs and without")
                    if plain and exc.cause == "bad_request"
                    else (exc.cause, exc.message)
                )
                attempt += 1
                if exc.cause not in RETRYABLE or attempt > retries:
                    if cache is not None:
                        await asyncio.to_thread(cache.put_failure, key, CACHE_KIND, exc.cause, exc.message)
                    return
                continue
            except Exception as exc:  # a team's generator raised: its fault is recorded, never a grade
                budget.settle(reservation, reservation)
                failures[key] = (
                    "target_error",
                    f"the generator raised {type(exc).__name__}: {str(exc)[:200]}",
                )
                return
            cost = getattr(generator, "cost", None)
            budget.settle(reservation, cost(got.usage) if callable(cost) else reservation)
            if plain:
                fallback.confirm()  # refused with logprobs, answered without: the server refuses them
            failures.pop(key, None)
            answers[key] = got
            if cache is not None:  # its own committed transaction: a kill after this line loses nothing
                value = {"text": got.text, "p_abstain": got.p_abstain, "missing": got.p_abstain_missing}
                stored_at = fallback.store_key(key, got, question, passage)
                await asyncio.to_thread(cache.put, stored_at, CACHE_KIND, value, dict(got.usage))
            return

    async def worker() -> None:
        while True:
            try:
                key = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await ask(key)

    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(todo))))))
    finally:
        await generator.aclose()
    scores, score_failures = await _score(work, keys, answers, metric, judge)
    judgments = []
    for pair in work.pairs:
        key = keys[pair]
        got = answers.get(key)
        failure = failures.get(key) if got is None else score_failures.get(pair)
        score = scores.get(pair)
        judgments.append(
            PairJudgment(
                query_id=pair[0],
                doc_id=pair[1],
                answer=got.text if got is not None else None,
                p_abstain=got.p_abstain if got is not None else None,
                p_abstain_missing=fallback.missing_reason(got)
                if got is not None and got.p_abstain is None
                else None,
                score=score,
                grade=_grade(score, max_grade) if score is not None else None,
                cached=key in cached_keys,
                cause=failure[0] if failure and score is None else None,
                message=failure[1] if failure and score is None else None,
            )
        )
    return UtilityJudgments(
        judgments=judgments,
        provenance={
            "origin": "utility",
            "generator": identity,
            "metric": metric,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "k": k,
            "runs": [run.name for run in runs],
            "max_grade": max_grade,
            "grade": "round-half-up(score x max_grade)",
            **fallback.provenance(),
        },
        skipped_questions=work.skipped_questions,
        skipped_pairs=work.skipped_pairs,
        requests=budget.requests - requests_before,
        cost=budget.spent - spent_before,
    )


def _budget_text(budget: Budget) -> str:
    parts = []
    if budget.max_requests is not None:
        parts.append(f"max_requests {budget.max_requests}")
    if budget.max_cost is not None:
        parts.append(f"max_cost {budget.max_cost:g} USD")
    return ", ".join(parts) or "none"


async def _score(
    work: _Work,
    keys: Mapping[tuple[str, str], str],
    answers: Mapping[str, GeneratedAnswer],
    metric: AnswerMetric,
    judge: Any,
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], tuple[str, str]]]:
    answered = [pair for pair in work.pairs if keys[pair] in answers]
    scores: dict[tuple[str, str], float] = {}
    failed: dict[tuple[str, str], tuple[str, str]] = {}
    if metric in ("token_f1", "exact_match"):
        fn = token_f1_score if metric == "token_f1" else exact_match_score
        for q, d in answered:
            reference = work.questions[q].reference
            assert reference is not None
            scores[(q, d)] = fn(answers[keys[(q, d)]].text, reference)
        return scores, failed
    if not answered:
        return scores, failed
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.evaluate import aevaluate_rag

    samples = [
        RagSample(
            id=f"pair-{n}",
            question=work.questions[q].question,
            answer=answers[keys[(q, d)]].text,
            reference=work.questions[q].reference,
            contexts=[work.passages[d]],
        )
        for n, (q, d) in enumerate(answered)
    ]
    result = await aevaluate_rag(samples, ["answer_correctness"], judge, name="utility", progress=False)
    by_id = {f"pair-{n}": pair for n, pair in enumerate(answered)}
    for sample_id, values in result.per_query.items():
        value = values.get("answer_correctness")
        if value is not None and math.isfinite(value):
            scores[by_id[sample_id]] = float(value)
    for failure in result.failures:
        failed[by_id[failure.query_id]] = (failure.cause, failure.message)
    for pair in answered:
        if pair not in scores and pair not in failed:
            failed[pair] = ("invalid_value", "answer_correctness gave no score")
    return scores, failed


def build_utility(*args: Any, **kwargs: Any) -> UtilityJudgments:
    """`abuild_utility` from synchronous code, in its own event loop; a `judge` passed in is closed before that
    loop ends (its connections cannot outlive it; it reopens them on its next use), as `evaluate_rag` does."""
    from ragmetrics._async import run_sync

    async def run() -> UtilityJudgments:
        try:
            return await abuild_utility(*args, **kwargs)
        finally:
            judge = kwargs.get("judge")
            if judge is not None:
                await judge.aclose()

    return run_sync(run())


def read_cache(path: str | Path | None) -> VerdictCache | None:
    """The answer cache at `path` (None: no cache)."""
    return VerdictCache(path) if path is not None else None
