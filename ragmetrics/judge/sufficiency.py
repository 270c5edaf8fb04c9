"""The sufficient-context breakdown of a run (Joren et al., ICLR 2025, arXiv 2411.06037), and its paired comparison.

Each question of a run falls in one cell: its contexts were rated sufficient or insufficient
(`context_sufficiency`), and its answer was correct, hallucinated or abstained. The cells separate the two
failures a single answer score mixes up: a hallucination *despite* sufficient context is a generation failure;
an insufficient context is a retrieval failure, whatever the answer did with it (abstaining is then the right
move). Comparing two runs on the same questions says where a drop comes from: "retrieval: 9 more questions
without sufficient context" rather than only "answers got worse".

The answer's outcome needs the reference, unlike sufficiency:

- abstained: the answer declines (`judge.text.refusal.answer_declines` over its statements: no statement, or a
  first non-courtesy statement that refuses; its patterns cover the languages that module lists). Checked
  first: a refusal that shares words with the reference is still a refusal;
- correct: the chosen answer metric's value reaches `threshold` (default: `token_f1` >= 0.5, SQuAD's token F1;
  pass `answer_metric="answer_correctness"` or `"exact_match"` with their own threshold);
- hallucinated: anything else (an answer given, and wrong).

A question whose sufficiency or answer score is missing (a judge failure, a metric not applicable) is in no cell:
it is listed in `unrated` with the reason, never counted as insufficient or wrong.

This module only labels the questions. The figures (each cell's share with its Wilson interval, and two runs
compared by exact McNemar tests with the sentences that say where a drop comes from) are computed by
`comparison.sufficiency` from these labels, and rendered by `render.sufficiency`; the night does both for every
run with `context_sufficiency` (`nightly.sufficiency`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.text.refusal import answer_declines
from ragmetrics.judge.text.sentences import split_statements
from ragmetrics.schema import RunResult
from ragmetrics.schema_sufficiency import OUTCOMES, Outcome

__all__ = [
    "CORRECT_THRESHOLD",
    "OUTCOMES",
    "SUFFICIENCY_METRIC",
    "QuestionCell",
    "SufficiencyBreakdown",
    "answer_outcome",
    "sufficiency_breakdown",
]

SUFFICIENCY_METRIC = "context_sufficiency"
CORRECT_THRESHOLD = 0.5
"""Default: an answer is correct when its token F1 with the reference is at least 0.5 (half the tokens agree,
the usual cut for SQuAD-style F1 'correct'); pass another metric's threshold with it."""


def answer_outcome(answer: str, score: float, *, threshold: float, language: str | None = None) -> Outcome:
    """abstained when the answer declines, else correct when `score` (an answer metric's value) reaches
    `threshold`, else hallucinated."""
    if answer_declines(split_statements(answer, language)):
        return "abstained"
    return "correct" if score >= threshold else "hallucinated"


@dataclass(frozen=True)
class QuestionCell:
    question_id: str
    sufficient: bool
    outcome: Outcome


@dataclass(frozen=True)
class SufficiencyBreakdown:
    """One run's questions, each in its cell; `comparison.sufficiency` turns these into shares and tests."""

    run: str
    answer_metric: str
    threshold: float
    questions: tuple[QuestionCell, ...]
    unrated: tuple[tuple[str, str], ...]
    """(question id, why it has no cell)."""

    @property
    def rated(self) -> int:
        return len(self.questions)

    def count(self, sufficient: bool, outcome: Outcome | None = None) -> int:
        return sum(
            q.sufficient == sufficient and (outcome is None or q.outcome == outcome) for q in self.questions
        )


def sufficiency_breakdown(
    result: RunResult,
    samples: Iterable[RagSample],
    *,
    answer_metric: str = "token_f1",
    threshold: float = CORRECT_THRESHOLD,
) -> SufficiencyBreakdown:
    """The breakdown of one run: `result` must hold `context_sufficiency` and `answer_metric` (evaluate both in
    one `evaluate_rag` call); `samples` give the answers, for abstention. A sample the result does not score, or
    a metric the result lacks entirely, is an InputError naming it."""
    for metric in (SUFFICIENCY_METRIC, answer_metric):
        if metric not in result.metrics:
            raise InputError(
                f"run {result.name!r} has no {metric!r} scores; evaluate it with metrics including "
                f"{SUFFICIENCY_METRIC!r} and {answer_metric!r}",
                source=result.name,
            )
    why_missing = {(f.query_id, f.metric): f"{f.metric} failed ({f.cause})" for f in result.failures}
    why_missing.update(
        {(n.query_id, n.metric): f"{n.metric} not applicable: {n.reason}" for n in result.not_applicable}
    )
    cells: list[QuestionCell] = []
    unrated: list[tuple[str, str]] = []
    for sample in samples:
        scores = result.per_query.get(sample.id)
        if scores is None:
            raise InputError(f"sample {sample.id!r} is not in run {result.name!r}", source=result.name)
        sufficient, correctness = scores.get(SUFFICIENCY_METRIC), scores.get(answer_metric)
        if sufficient is None or correctness is None:
            missing = SUFFICIENCY_METRIC if sufficient is None else answer_metric
            unrated.append((sample.id, why_missing.get((sample.id, missing), f"no {missing} value")))
            continue
        answer = "" if sample.answer is None else str(sample.answer)
        outcome = answer_outcome(answer, correctness, threshold=threshold, language=sample.language)
        cells.append(QuestionCell(sample.id, sufficient >= 0.5, outcome))
    return SufficiencyBreakdown(
        run=result.name,
        answer_metric=answer_metric,
        threshold=threshold,
        questions=tuple(cells),
        unrated=tuple(unrated),
    )
