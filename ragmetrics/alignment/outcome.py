"""What the alignment report says of the outcome: what the refitted alignment holds (`_describe_final`), the
held-out samples where the judge and people still disagree, worst first (`disagreements`), the one-line
verdict (`_verdict`) and the report as JSON (`dumps`).

Why its own module: these read a finished alignment; none of them fits or scores anything."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ragmetrics.alignment.aligner import State
from ragmetrics.alignment.labelled import LabelledSamples
from ragmetrics.alignment.report import AlignmentReport, Disagreement
from ragmetrics.alignment.scoring import Judged
from ragmetrics.schema import Interval

__all__ = ["disagreements", "dumps"]


def _describe_final(report: AlignmentReport, final: State, instructions: str) -> None:
    """What the refitted alignment holds, in the report: examples, guidance and its diff, head, calibration."""
    if final.edit is not None:
        report.examples = [{"sample_id": e.sample_id, "label": e.label} for e in final.edit.examples]
        report.guidance_after = final.edit.guidance
        if final.edit.guidance:
            report.instruction_diff = "\n".join(difflib.unified_diff(
                instructions.splitlines(), (instructions.rstrip("\n") + "\n" + final.edit.guidance).splitlines(),
                "instructions as shipped", "aligned", lineterm="",
            ))  # fmt: skip
    if final.head is not None:
        report.head_weights = final.head.weights()
        report.head_penalty = final.head.penalty
    if final.calibration is not None:
        report.calibration = final.calibration.describe()


def disagreements(
    data: LabelledSamples,
    order: Sequence[int],
    before: NDArray[np.float64],
    after: NDArray[np.float64] | None,
    judged: dict[int, Judged],
    threshold: float,
) -> list[Disagreement]:
    """The held-out samples where the judge (aligned, when a step was kept; else as it is) falls on the other side
    of `threshold` from people's label, worst first (largest distance from the label), with the judge's reasons."""
    used = after if after is not None else before
    found: list[tuple[float, Disagreement]] = []
    for position, i in enumerate(order):
        score, label = float(used[position]), float(data.labels[i])
        if not np.isfinite(score) or (score >= threshold) == (label >= threshold):
            continue
        sample = data.samples[i]
        answer = sample.answer if sample.answer is None else sample.answer[:300]
        found.append((abs(score - label), Disagreement(
            sample_id=sample.id, question=sample.question, answer=answer, label=label,
            judge=round(float(before[position]), 4),
            aligned=None if after is None else round(float(after[position]), 4),
            reason=_reasons(judged[i].verdicts),
        )))  # fmt: skip
    found.sort(key=lambda item: (-item[0], item[1].sample_id))
    return [d for _, d in found]


def _reasons(verdicts: Sequence[dict[str, object]]) -> str:
    """The judge's verdicts as one line: each statement (or question) with its verdict and reason."""
    parts = []
    for v in verdicts:
        what = next((str(v[k]) for k in ("statement", "claim", "question", "item") if v.get(k)), "")
        verdict = v.get("verdict", v.get("score"))
        reason = str(v.get("reason") or "").strip()
        parts.append(" ".join(p for p in (f"{what[:120]!r}" if what else "", f"-> {verdict}" if verdict is not None else "",
                                          f"({reason[:200]})" if reason else "") if p))  # fmt: skip
    return "; ".join(parts)[:600]


def _verdict(report: AlignmentReport) -> str:
    row = next(r for r in report.figures if r.statistic == report.statistic)

    def fmt(e: Interval) -> str:
        if e.estimate is None:
            return "n/a"
        return f"{e.estimate:.3f}" + (f" [{e.low:.3f}, {e.high:.3f}]" if e.low is not None else "")

    if not report.kept:
        return (f"{report.metric}: no step beat the judge as it is on held-out labels; nothing aligned "
                f"(held-out {report.statistic} {fmt(row.before)}, {report.n} labels)")  # fmt: skip
    return (f"{report.metric}: aligned ({', '.join(report.kept)}); held-out {report.statistic} {fmt(row.before)} -> "
            f"{fmt(row.after)} on {report.n} labels")  # fmt: skip


def dumps(report: AlignmentReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False)
