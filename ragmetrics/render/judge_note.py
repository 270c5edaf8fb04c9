"""One sentence that says who judged, and for the built-in local judge how far its verdicts are known to
agree with labels on domains and languages it was not fitted on, printed next to its numbers in the terminal
and the HTML report so that nobody reads them as an LLM's."""

from __future__ import annotations

from typing import Any

from ragmetrics.schema import JudgeInfo

__all__ = ["judge_note"]


def judge_note(judge: JudgeInfo | None) -> str | None:
    """The note for `judge`, or None for an LLM judge (whose backend and model the report already names)."""
    if judge is None or judge.backend != "local":
        return None
    fitted: dict[str, Any] = judge.settings.get("fitted_verdicts") or {}
    ranges: dict[str, list[float]] = {}
    for provenance in fitted.values():
        if not isinstance(provenance, dict):
            continue
        for figures in (provenance.get("held_out_auc") or {}).values():
            for metric, value in figures.items():
                ranges.setdefault(metric, []).append(float(value))
    note = "judge: the built-in local judge (embedding similarity and lexical signals, not an LLM)"
    if not ranges:
        return (
            note
            + "; its verdicts are cosine thresholds calibrated on English Python docs (docs/local_judge.md)"
        )
    parts = [f"{metric} {min(v):.2f}-{max(v):.2f}" for metric, v in sorted(ranges.items())]
    return (
        note
        + "; ROC AUC against labels on domains and languages it was not fitted on: "
        + ", ".join(parts)
        + " (docs/local_judge.md)"
    )
