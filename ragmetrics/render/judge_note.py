"""What a report says about who judged: for the built-in local judge, how far its verdicts agree with labels
other people made on public sets, and per metric what it is good for and what it is not, printed next to its
numbers in the terminal and the HTML report so that nobody reads them as an LLM's.

Why public sets: figures on items written for the judge (the fitted models' held-out domains) share our own
writing style and overstate it; the figures here come from `benchmarks/bench_judge_agreement.py` on sets
labelled by NIST assessors, MTurk workers and other teams' annotators (docs/local_judge.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from ragmetrics.schema import JudgeInfo

__all__ = ["LOCAL_GUIDANCE", "WEAK_AUC", "aligned_lines", "judge_line", "judge_note", "public_agreement"]

_ASSET = Path(__file__).resolve().parents[1] / "judge" / "backends" / "assets" / "public_agreement.json"

LOCAL_GUIDANCE: dict[str, str] = {
    "faithfulness": "catches a changed number, name or negation; misses an unsupported claim worded like the "
    "context",
    "context_recall": "tells whether the reference's sentences are in the context; misses a changed detail "
    "only where numbers, names or polarity do not show it",
    "context_precision": "tells a chunk holding the reference from an unrelated one; weak when the reference is "
    "paraphrased",
    "context_utilization": "as context precision, against the answer",
    "context_relevancy": "tells on-topic from off-topic text; weak at telling a passage that answers from one "
    "that is only on topic",
    "passage_relevance": "tells on-topic from off-topic passages; weak at telling an answering passage from a "
    "hard negative",
    "answer_relevancy": "flags refusals, hedges and off-topic answers; weak at telling a right answer from a "
    "wrong one of the same kind",
    "answer_correctness": "rewards answers that share the reference's statements; cannot tell a correct "
    "paraphrase from a wrong one reliably",
    "answer_similarity": "embedding similarity to the reference; a ranking signal, not a verdict",
}
"""Per local metric: what the public figures say it is good for and what not (kept with those figures)."""


WEAK_AUC = 0.65
"""A metric whose ROC AUC on some public set is below this gets its weakness printed beside its numbers."""


@cache
def public_agreement() -> dict[str, Any]:
    """The shipped figures: {'measured_with', 'sources', 'auc': {metric: {set: auc}}}."""
    data: dict[str, Any] = json.loads(_ASSET.read_text(encoding="utf-8"))
    return data


def judge_note(judge: JudgeInfo | None, metrics: Iterable[str] | None = None) -> str | None:
    """The note for `judge` (one line, then a line per metric of `metrics` the figures cover, then a line per
    metric aligned to the team's labels), or None for an unaligned LLM judge (whose backend and model the
    report already names)."""
    if judge is None:
        return None
    aligned = aligned_lines(judge)
    if judge.backend == "panel":
        return "\n".join([*panel_lines(judge), *aligned])
    if judge.backend != "local":
        return "\n".join(["judge aligned to your labels (docs/trust.md):", *aligned]) if aligned else None
    figures: dict[str, dict[str, float]] = public_agreement()["auc"]
    wanted = [m for m in (metrics if metrics is not None else figures) if m in figures]
    lines = [
        "judge: the built-in local judge (embedding similarity and lexical checks, not an LLM); ROC AUC against "
        "other people's labels on public sets (docs/local_judge.md):"
    ]
    for metric in wanted:
        values = figures[metric]
        low, high = min(values.values()), max(values.values())
        guidance = LOCAL_GUIDANCE.get(metric, "")
        span = f"{low:.2f}" if len(values) == 1 else f"{low:.2f}-{high:.2f}"
        sets = "1 set" if len(values) == 1 else f"{len(values)} sets"
        weak = sorted((auc, name) for name, auc in values.items() if auc < WEAK_AUC)
        if weak:
            where = (
                ", ".join(f"{name} {auc:.2f}" for auc, name in weak)
                if len(weak) <= 3
                else f"{len(weak)} of {len(values)} sets"
            )
            lines.append(f"  ! {metric} {span} on {sets}, below {WEAK_AUC} on {where}: {guidance}")
        else:
            lines.append(f"  {metric} {span} on {sets}" + (f": {guidance}" if guidance else ""))
    return "\n".join([*lines, *aligned])


def _figure(value: Any) -> str:
    return "n/a" if not isinstance(value, float | int) else f"{value:.2f}"


def panel_lines(judge: JudgeInfo) -> list[str]:
    """A panel's members with their share of the bill, and per metric the judges' agreement with each other
    (Krippendorff alpha on their verdicts) beside the people's (docs/judges.md)."""
    panel = judge.settings.get("panel")
    if not isinstance(panel, dict):
        return []
    members = [m for m in panel.get("members", []) if isinstance(m, dict)]
    costs = [((m.get("verdicts_usage") or m.get("usage") or {}).get("cost_usd")) for m in members]
    total = sum(c for c in costs if isinstance(c, float | int))
    lines = [f"judge: a panel of {len(members)} judges, combined by {panel.get('combine')} (docs/judges.md):"]
    for member, cost in zip(members, costs, strict=True):
        calls = (member.get("usage") or {}).get("calls", 0)
        where = f" at {member['base_url']}" if member.get("base_url") else ""
        bill = "no price given" if not isinstance(cost, float | int) else (
            f"its verdicts cost ${cost:.4f}" + (f", {cost / total:.0%} of the bill" if total > 0 else ""))  # fmt: skip
        lines.append(f"  {member.get('name')} ({member.get('model')}{where}): {calls} requests tonight, {bill}")
    for metric, entry in sorted((panel.get("agreement") or {}).items()):
        if not isinstance(entry, dict):
            continue
        people = entry.get("people_alpha")
        beside = f"; among the people {_figure(people)}" if people is not None else ""
        lines.append(f"  {metric}: agreement among the judges (Krippendorff alpha) {_figure(entry.get('judges_alpha'))}"
                     f" on {entry.get('items')} items{beside}")  # fmt: skip
    return lines


def aligned_lines(judge: JudgeInfo) -> list[str]:
    """'  aligned faithfulness: aligned on 120 labels (head): held-out ...' per aligned metric (judge.aligned)."""
    aligned = judge.settings.get("aligned")
    if not isinstance(aligned, dict):
        return []
    return [
        f"  aligned {metric}: {entry.get('summary')}"
        for metric, entry in sorted(aligned.items())
        if isinstance(entry, dict)
    ]


def judge_line(judge: JudgeInfo | None) -> str:
    """One line naming who judged: the built-in local judge and its embedder, or the endpoint's model."""
    if judge is None:
        return "judge: none (no judge metric was scored)"
    if judge.backend == "local":
        same = judge.embedding_model in (None, judge.model)
        embedder = "" if same else f", embeddings {judge.embedding_model}"
        return f"judge: the built-in local judge ({judge.model}{embedder}; not an LLM)"
    if judge.backend == "panel":
        panel = judge.settings.get("panel")
        members = [m.get("name") for m in panel.get("members", [])] if isinstance(panel, dict) else []
        combine = panel.get("combine") if isinstance(panel, dict) else None
        return f"judge: a panel of {len(members)} judges ({', '.join(map(str, members))}), combined by {combine}"
    where = f" at {judge.base_url}" if judge.base_url else ""
    return f"judge: {judge.model} through an OpenAI-compatible endpoint{where}"
