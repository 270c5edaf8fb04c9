"""The night's sufficient-context breakdown: for every run scored with `context_sufficiency` and an answer
metric, the paper's six cells (`judge.sufficiency` labels the questions, `comparison.sufficiency` counts and
tests), and every pair the night compared, so the report can say whether a drop came from retrieval or from
generation rather than only that it happened.

"Correct" needs an answer score against the reference. The night uses the first of its answer metrics in
`ANSWER_METRICS` that any of its runs has (the judge's answer_correctness, else SQuAD's token F1, else exact
match), each with its threshold, the same for every run so that pairs compare like with like; a night with none
gets no breakdown and a note saying what to add, and a run without that metric (a ranking without answers) is
named in a note.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragmetrics.comparison.sufficiency import compare_sufficiency, run_sufficiency
from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.sufficiency import CORRECT_THRESHOLD, SUFFICIENCY_METRIC, sufficiency_breakdown
from ragmetrics.schema import JudgeInfo, Report
from ragmetrics.schema_sufficiency import SufficiencySection

__all__ = ["ANSWER_METRICS", "night_sufficiency"]

ANSWER_METRICS: tuple[tuple[str, float], ...] = (
    ("answer_correctness", CORRECT_THRESHOLD),
    ("token_f1", CORRECT_THRESHOLD),
    ("exact_match", 1.0),
)
"""The answer metrics that can decide 'correct', in order of preference, each with its threshold."""


def _judge_label(judge: JudgeInfo | None) -> str:
    if judge is None:
        return "the judge"
    if judge.backend == "local":
        return "the local judge's PROXY (the question's words covered by the contexts; not the paper's rater)"
    return f"the LLM judge ({judge.model}, the paper's rater criteria)"


def _pairs(report: Report, runs: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs the night compared (baseline, candidate), in its order; every pair when it compared none."""
    pairs = list(dict.fromkeys((c.baseline, c.candidate) for c in report.comparisons))
    if not pairs:
        pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    return [(a, b) for a, b in pairs if a in runs and b in runs]


def night_sufficiency(
    report: Report, judged: Mapping[str, Sequence[RagSample]], judge: JudgeInfo | None
) -> SufficiencySection | None:
    """The breakdown of every run with `context_sufficiency` scores (None when no run has them); runs that
    cannot have one are named in the section's notes with why."""
    scored = [r for r in report.runs if SUFFICIENCY_METRIC in r.metrics]
    if not scored:
        return None
    section = SufficiencySection(judge=_judge_label(judge))
    present = [(m, t) for m, t in ANSWER_METRICS if any(m in r.metrics for r in scored)]
    if not present:
        section.notes.append(
            f"no breakdown: {SUFFICIENCY_METRIC} was scored but no answer metric decides 'correct'; add one of "
            f"{', '.join(m for m, _ in ANSWER_METRICS)} to the judge's metrics"
        )
        return section
    metric, threshold = present[0]
    labelled = {}
    for result in scored:
        samples = judged.get(result.name)
        if metric not in result.metrics:
            section.notes.append(f"{result.name}: no breakdown (it has no {metric} scores: no answers of its own)")
            continue
        if samples is None:
            section.notes.append(f"{result.name}: no samples kept for it (its answers are needed)")
            continue
        try:
            labelled[result.name] = sufficiency_breakdown(result, samples, answer_metric=metric,
                                                          threshold=threshold)  # fmt: skip
        except InputError as exc:  # a judged sample the run does not score: said, never a silent gap
            section.notes.append(f"{result.name}: no breakdown ({exc})")
            continue
        section.runs.append(run_sufficiency(labelled[result.name]))
    for a, b in _pairs(report, list(labelled)):
        section.pairs.append(compare_sufficiency(labelled[a], labelled[b]))
    return section
