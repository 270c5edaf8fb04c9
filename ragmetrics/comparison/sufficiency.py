"""The statistics of the sufficient-context breakdown (Joren et al., ICLR 2025, arXiv 2411.06037): each cell's
share with its Wilson interval, and two runs compared on the same questions with exact McNemar tests.

The judge decides each question's cell (`judge.sufficiency.sufficiency_breakdown`); this module only counts and
tests, whatever labelled the questions, so it reads them through a protocol and never imports the judge. The
comparison's sentences say where a drop comes from, in the order a reader asks: how many fewer answers are
correct; whether retrieval lost them (more questions without sufficient context); whether generation lost
them (more hallucinations, or more abstentions, although the context was sufficient). Generation is read on
the questions whose contexts were sufficient in both runs, so that a question retrieval moved out of (or into)
sufficiency is counted once, as retrieval's, and not again as a change of the generator's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragmetrics.comparison.proportions import exact_mcnemar, wilson
from ragmetrics.errors import InputError
from ragmetrics.schema_sufficiency import (
    OUTCOMES,
    Outcome,
    RunSufficiency,
    SufficiencyCell,
    SufficiencyCellChange,
    SufficiencyPair,
)

__all__ = ["CELLS", "LabelledQuestion", "LabelledRun", "compare_sufficiency", "run_sufficiency"]

CELLS: tuple[tuple[bool, Outcome], ...] = tuple((s, o) for s in (True, False) for o in OUTCOMES)


class LabelledQuestion(Protocol):
    @property
    def question_id(self) -> str: ...

    @property
    def sufficient(self) -> bool: ...

    @property
    def outcome(self) -> Outcome: ...


class LabelledRun(Protocol):
    """A run's questions each in one cell, and those in none with why (`judge.sufficiency` makes these)."""

    @property
    def run(self) -> str: ...

    @property
    def answer_metric(self) -> str: ...

    @property
    def threshold(self) -> float: ...

    @property
    def questions(self) -> Sequence[LabelledQuestion]: ...

    @property
    def unrated(self) -> Sequence[tuple[str, str]]: ...


def _share(k: int, n: int, confidence: float) -> tuple[float | None, float | None, float | None]:
    if n == 0:
        return None, None, None
    low, high = wilson(k, n, confidence)
    return k / n, low, high


def run_sufficiency(labelled: LabelledRun, confidence: float = 0.95) -> RunSufficiency:
    """A run's six cells with counts, shares of the rated questions and Wilson intervals."""
    questions = labelled.questions
    rated = len(questions)
    cells = []
    for sufficient, outcome in CELLS:
        count = sum(q.sufficient == sufficient and q.outcome == outcome for q in questions)
        share, low, high = _share(count, rated, confidence)
        cells.append(SufficiencyCell(sufficient=sufficient, outcome=outcome, count=count, share=share, low=low,
                                     high=high))  # fmt: skip
    held = sum(q.sufficient for q in questions)
    share, low, high = _share(held, rated, confidence)
    return RunSufficiency(
        run=labelled.run,
        answer_metric=labelled.answer_metric,
        threshold=labelled.threshold,
        confidence=confidence,
        rated=rated,
        sufficient=held,
        sufficient_share=share,
        sufficient_low=low,
        sufficient_high=high,
        cells=cells,
        unrated=dict(labelled.unrated),
    )


def _change(net: int, what: tuple[str, str], a: str, b: str) -> str:
    """'9 more <what> in b than in a', '2 fewer ...', or 'as many <what> in b as in a' (`what`: singular,
    plural)."""
    if net == 0:
        return f"as many {what[1]} in {b} as in {a}"
    return f"{abs(net)} {'more' if net > 0 else 'fewer'} {what[abs(net) != 1]} in {b} than in {a}"


def _lines(pair: SufficiencyPair) -> list[str]:
    a, b = pair.run_a, pair.run_b
    right = ("correct answer", "correct answers")
    without = ("question without sufficient context", "questions without sufficient context")
    sentences = [
        f"answers: {_change(pair.correct_b - pair.correct_a, right, a, b)} ({pair.correct_a} and "
        f"{pair.correct_b} of {pair.paired}; exact McNemar p = {pair.correct_p:.3g})",
        f"retrieval: {_change(pair.lost - pair.gained, without, a, b)} ({pair.lost} lost sufficiency, "
        f"{pair.gained} gained it; exact McNemar p = {pair.p_value:.3g})",
    ]
    for change in pair.generation:
        if change.outcome == "correct":
            continue
        what = ("hallucinated answer", "hallucinated answers") if change.outcome == "hallucinated" else (
            "abstention", "abstentions")  # fmt: skip
        said = _change(change.count_b - change.count_a, what, a, b)
        sentences.append(
            f"generation: {said} on the {pair.both_sufficient} questions with sufficient context in both "
            f"({change.entered} entered, {change.left} left; exact McNemar p = {change.p_value:.3g})"
        )
    return sentences


def compare_sufficiency(a: LabelledRun, b: LabelledRun) -> SufficiencyPair:
    """Run `b` against run `a` on the questions both rated. Runs over different question sets are an
    InputError: a paired test needs the same questions."""
    by_a = {q.question_id: q for q in a.questions}
    by_b = {q.question_id: q for q in b.questions}
    asked_a = set(by_a) | {qid for qid, _ in a.unrated}
    asked_b = set(by_b) | {qid for qid, _ in b.unrated}
    if asked_a != asked_b:
        differ = sorted(asked_a ^ asked_b)
        raise InputError(
            f"runs {a.run!r} and {b.run!r} are not over the same questions (e.g. {', '.join(differ[:5])})",
            source=f"{a.run} vs {b.run}",
        )
    both = sorted(set(by_a) & set(by_b))
    lost = sum(by_a[q].sufficient and not by_b[q].sufficient for q in both)
    gained = sum(by_b[q].sufficient and not by_a[q].sufficient for q in both)
    right_a = {q for q in both if by_a[q].outcome == "correct"}
    right_b = {q for q in both if by_b[q].outcome == "correct"}
    changes: list[SufficiencyCellChange] = []
    for sufficient, outcome in CELLS:
        in_a = {q for q in both if (by_a[q].sufficient, by_a[q].outcome) == (sufficient, outcome)}
        in_b = {q for q in both if (by_b[q].sufficient, by_b[q].outcome) == (sufficient, outcome)}
        left, entered = len(in_a - in_b), len(in_b - in_a)
        changes.append(SufficiencyCellChange(sufficient=sufficient, outcome=outcome, count_a=len(in_a),
                                             count_b=len(in_b), left=left, entered=entered,
                                             p_value=exact_mcnemar(left, entered)))  # fmt: skip
    steady = [q for q in both if by_a[q].sufficient and by_b[q].sufficient]
    generation: list[SufficiencyCellChange] = []
    for outcome in OUTCOMES:
        in_a = {q for q in steady if by_a[q].outcome == outcome}
        in_b = {q for q in steady if by_b[q].outcome == outcome}
        left, entered = len(in_a - in_b), len(in_b - in_a)
        generation.append(SufficiencyCellChange(sufficient=True, outcome=outcome, count_a=len(in_a),
                                                count_b=len(in_b), left=left, entered=entered,
                                                p_value=exact_mcnemar(left, entered)))  # fmt: skip
    pair = SufficiencyPair(
        run_a=a.run,
        run_b=b.run,
        paired=len(both),
        correct_a=len(right_a),
        correct_b=len(right_b),
        correct_p=exact_mcnemar(len(right_a - right_b), len(right_b - right_a)),
        sufficient_a=sum(by_a[q].sufficient for q in both),
        sufficient_b=sum(by_b[q].sufficient for q in both),
        lost=lost,
        gained=gained,
        p_value=exact_mcnemar(lost, gained),
        cells=changes,
        both_sufficient=len(steady),
        generation=generation,
        not_paired=sorted(asked_a - set(both)),
        lines=[],
    )
    pair.lines = _lines(pair)
    return pair
