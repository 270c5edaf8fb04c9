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

Intervals are Wilson score intervals of each cell's share of the rated questions. The paired tests are exact
McNemar tests (two-sided binomial on the discordant questions) on the per-question indicator: "sufficient", and
"in this cell".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from scipy import stats

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.text.refusal import answer_declines
from ragmetrics.judge.text.sentences import split_statements
from ragmetrics.schema import RunResult

__all__ = [
    "CORRECT_THRESHOLD",
    "OUTCOMES",
    "SUFFICIENCY_METRIC",
    "Cell",
    "CellChange",
    "PairedSufficiency",
    "QuestionCell",
    "SufficiencyBreakdown",
    "answer_outcome",
    "compare_sufficiency",
    "render_breakdown",
    "render_comparison",
    "sufficiency_breakdown",
]

SUFFICIENCY_METRIC = "context_sufficiency"
CORRECT_THRESHOLD = 0.5
"""Default: an answer is correct when its token F1 with the reference is at least 0.5 (half the tokens agree,
the usual cut for SQuAD-style F1 'correct'); pass another metric's threshold with it."""

Outcome = Literal["correct", "hallucinated", "abstained"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "hallucinated", "abstained")
CellKey = tuple[bool, Outcome]
CELLS: tuple[CellKey, ...] = tuple((s, o) for s in (True, False) for o in OUTCOMES)


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
class Cell:
    """One cell of the breakdown: its count, its share of the rated questions and that share's Wilson interval."""

    sufficient: bool
    outcome: Outcome
    count: int
    share: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class SufficiencyBreakdown:
    run: str
    answer_metric: str
    threshold: float
    questions: tuple[QuestionCell, ...]
    unrated: tuple[tuple[str, str], ...]
    """(question id, why it has no cell)."""
    confidence: float

    @property
    def rated(self) -> int:
        return len(self.questions)

    def count(self, sufficient: bool, outcome: Outcome | None = None) -> int:
        return sum(
            q.sufficient == sufficient and (outcome is None or q.outcome == outcome) for q in self.questions
        )

    def cell(self, sufficient: bool, outcome: Outcome) -> Cell:
        count = self.count(sufficient, outcome)
        share, low, high = _proportion(count, self.rated, self.confidence)
        return Cell(sufficient, outcome, count, share, low, high)

    def cells(self) -> list[Cell]:
        return [self.cell(s, o) for s, o in CELLS]

    def sufficient_share(self) -> tuple[float | None, float | None, float | None]:
        """Share of rated questions with sufficient context, with its Wilson interval (None when none rated)."""
        return _proportion(self.count(True), self.rated, self.confidence)


def _proportion(k: int, n: int, confidence: float) -> tuple[float | None, float | None, float | None]:
    if n == 0:
        return None, None, None
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return k / n, max(0.0, float(ci.low)), min(1.0, float(ci.high))


def sufficiency_breakdown(
    result: RunResult,
    samples: Iterable[RagSample],
    *,
    answer_metric: str = "token_f1",
    threshold: float = CORRECT_THRESHOLD,
    confidence: float = 0.95,
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
        confidence=confidence,
    )


def _mcnemar(only_a: int, only_b: int) -> float:
    """Exact McNemar: two-sided binomial p of the discordant split against 1/2 (1.0 when none is discordant)."""
    n = only_a + only_b
    return 1.0 if n == 0 else float(stats.binomtest(only_a, n).pvalue)


@dataclass(frozen=True)
class CellChange:
    """One cell across the two runs, on the questions both rated: counts, and the questions that moved."""

    sufficient: bool
    outcome: Outcome
    count_a: int
    count_b: int
    only_a: int
    only_b: int
    p_value: float


@dataclass(frozen=True)
class PairedSufficiency:
    run_a: str
    run_b: str
    paired: int
    """Questions rated in both runs (the comparison reads only these)."""
    sufficient_a: int
    sufficient_b: int
    lost: int
    """Sufficient in A, insufficient in B."""
    gained: int
    p_value: float
    cells: tuple[CellChange, ...]
    not_paired: tuple[str, ...]

    def sentence(self) -> str:
        """The report's line: where sufficiency moved, with its McNemar p."""
        net = self.lost - self.gained
        if net > 0:
            head = f"retrieval: {net} more question(s) without sufficient context in {self.run_b} than in {self.run_a}"
        elif net < 0:
            head = f"retrieval: {-net} more question(s) with sufficient context in {self.run_b} than in {self.run_a}"
        else:
            head = f"retrieval: as many questions with sufficient context in {self.run_b} as in {self.run_a}"
        return f"{head} ({self.lost} lost, {self.gained} gained of {self.paired}; exact McNemar p = {self.p_value:.3g})"


def compare_sufficiency(a: SufficiencyBreakdown, b: SufficiencyBreakdown) -> PairedSufficiency:
    """Paired comparison of two runs' breakdowns on the questions both rated. Runs over different question sets
    are an InputError: a paired test needs the same questions."""
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
    changes: list[CellChange] = []
    for sufficient, outcome in CELLS:
        in_a = {q for q in both if (by_a[q].sufficient, by_a[q].outcome) == (sufficient, outcome)}
        in_b = {q for q in both if (by_b[q].sufficient, by_b[q].outcome) == (sufficient, outcome)}
        only_a, only_b = len(in_a - in_b), len(in_b - in_a)
        changes.append(
            CellChange(sufficient, outcome, len(in_a), len(in_b), only_a, only_b, _mcnemar(only_a, only_b))
        )
    return PairedSufficiency(
        run_a=a.run,
        run_b=b.run,
        paired=len(both),
        sufficient_a=sum(by_a[q].sufficient for q in both),
        sufficient_b=sum(by_b[q].sufficient for q in both),
        lost=lost,
        gained=gained,
        p_value=_mcnemar(lost, gained),
        cells=tuple(changes),
        not_paired=tuple(sorted(asked_a - set(both))),
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _label(sufficient: bool) -> str:
    return "sufficient" if sufficient else "insufficient"


def render_breakdown(breakdown: SufficiencyBreakdown) -> str:
    """A Markdown table: rows sufficient / insufficient, columns the outcomes, each 'count (share, interval)'."""
    level = f"{100 * breakdown.confidence:.0f}%"
    lines = [
        f"Sufficient context x answer outcome, run {breakdown.run} ({breakdown.rated} questions rated; correct = "
        f"{breakdown.answer_metric} >= {breakdown.threshold:g}; {level} Wilson intervals)",
        "",
        "| context | " + " | ".join(OUTCOMES) + " | all |",
        "|---|" + "---:|" * (len(OUTCOMES) + 1),
    ]
    for sufficient in (True, False):
        cells = [breakdown.cell(sufficient, o) for o in OUTCOMES]
        shown = [f"{c.count} ({_pct(c.share)}, {_pct(c.low)}-{_pct(c.high)})" for c in cells]
        lines.append(f"| {_label(sufficient)} | " + " | ".join(shown) + f" | {breakdown.count(sufficient)} |")
    if breakdown.unrated:
        listed = "; ".join(f"{qid}: {why}" for qid, why in breakdown.unrated[:10])
        more = f" (+{len(breakdown.unrated) - 10} more)" if len(breakdown.unrated) > 10 else ""
        lines += ["", f"Not rated ({len(breakdown.unrated)}): {listed}{more}"]
    return "\n".join(lines)


def render_comparison(paired: PairedSufficiency) -> str:
    """The comparison's sentence and a Markdown table of each cell's counts in A and B, with McNemar p."""
    lines = [
        paired.sentence(),
        "",
        f"| context | outcome | {paired.run_a} | {paired.run_b} | left | entered | McNemar p |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for c in paired.cells:
        lines.append(
            f"| {_label(c.sufficient)} | {c.outcome} | {c.count_a} | {c.count_b} | {c.only_a} | {c.only_b} | "
            f"{c.p_value:.3g} |"
        )
    if paired.not_paired:
        lines += ["", f"Not rated in both runs, left out: {', '.join(paired.not_paired)}"]
    return "\n".join(lines)
