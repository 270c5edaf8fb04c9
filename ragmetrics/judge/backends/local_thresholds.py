"""The local judge's cosine thresholds per verdict type, apart from the judge that uses them, so the fitted
models (`local_model`) and the judge (`local`) both read them without importing each other."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from ragmetrics.judge.registry import spec

__all__ = ["CALIBRATED_KINDS", "VERDICT_KINDS", "LocalThresholds", "VerdictKind"]

VerdictKind = Literal[
    "context_precision", "context_utilization", "context_recall", "context_relevancy", "faithfulness"
]
VERDICT_KINDS: tuple[VerdictKind, ...] = (
    "context_precision",
    "context_utilization",
    "context_recall",
    "context_relevancy",
    "faithfulness",
)
CALIBRATED_KINDS: tuple[VerdictKind, ...] = VERDICT_KINDS[:4]
"""Verdict types with their own labelled pairs (tests/data/local_judge_pairs.jsonl). Faithfulness compares an
answer statement with context sentences exactly as context recall compares a reference statement, so it
borrows context recall's threshold until it has labelled pairs of its own."""


@dataclass(frozen=True)
class LocalThresholds:
    """Cosine at or above which a verdict is positive, per verdict type.

    Defaults are each metric's `local_threshold` in `judge.registry`, chosen to maximise balanced accuracy
    on tests/data/local_judge_pairs.jsonl (benchmarks/calibrate_local_judge.py); docs/local_judge.md records
    the accuracy they reach.
    """

    context_precision: float = spec("context_precision").local_threshold or 0.0
    context_utilization: float = spec("context_utilization").local_threshold or 0.0
    context_recall: float = spec("context_recall").local_threshold or 0.0
    context_relevancy: float = spec("context_relevancy").local_threshold or 0.0
    faithfulness: float = (
        spec("faithfulness").local_threshold or 0.0
    )  # context recall's, see CALIBRATED_KINDS

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"threshold {name} must be a cosine in [-1, 1], not {value}")

    def for_kind(self, kind: VerdictKind) -> float:
        value: float = getattr(self, kind)
        return value
