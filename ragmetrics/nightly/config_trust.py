"""What people say about the judge: the `human_labels:`, `pairwise:` and `trust:` sections (labels for
agreement and PPI, side-by-side preferences, and the agreement floor the gate asks of the judge)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from ragmetrics.judge.base import JUDGE_METRICS
from ragmetrics.nightly.config_base import _Section


class HumanLabelsConfig(_Section):
    """Human labels of judge metrics (docs/trust.md): agreement, PPI-corrected means, the PPI gate."""

    path: Path | None = Field(
        default=None,
        description="CSV, TSV, JSONL or Parquet: sample_id, metric, label (and optionally run, labeller)",
    )
    columns: dict[str, str] | None = Field(
        default=None,
        description="or labels in the QA dataset: judge metric -> the column holding its label (empty cells: "
        "unlabelled samples)",
    )
    scale: float | None = Field(
        default=None,
        gt=0,
        description="labels are whole-number grades 0..scale (divided by it); unset: in [0, 1]",
    )
    threshold: float = Field(default=0.5, ge=0, le=1, description="positive at or above it (accuracy, kappa)")
    confidence: float = Field(default=0.95, gt=0, lt=1, description="confidence of every interval")
    adjudication: str = Field(
        default="majority",
        description="several people's labels of one sample become one: 'majority' (a tie: the mean of the tied), "
        "'mean', or a labeller's name (theirs where they gave one, else the majority)",
    )

    @model_validator(mode="after")
    def _one_source(self) -> HumanLabelsConfig:
        if (self.path is None) == (self.columns is None):
            raise ValueError("give either path (a labels file) or columns (metric -> dataset column)")
        if self.columns is not None:
            if not self.columns:
                raise ValueError("columns is empty: map a judge metric to the column of its labels")
            unknown = sorted(set(self.columns) - set(JUDGE_METRICS))
            if unknown:
                raise ValueError(
                    f"unknown judge metric {unknown[0]!r} in columns; metrics: {', '.join(JUDGE_METRICS)}"
                )
        return self


class PairwiseConfig(_Section):
    """Side-by-side preferences (docs/trust.md, 'Pairwise'): people's, from a file `ragmetrics label --pairwise`
    writes, and the LLM pairwise judge's (both orders asked); each a sign test and Bradley-Terry per pair."""

    preferences: Path | None = Field(
        default=None, description="people's preferences: sample_id, left, right, choice (labeller optional)"
    )
    judge: bool = Field(
        default=False, description="also ask the LLM judge which answer is better, in both orders"
    )
    pairs: list[tuple[str, str]] | None = Field(
        default=None, description="[a, b] run pairs (default: every pair of judged runs, b after a)"
    )
    metric: str | None = Field(
        default=None,
        description="the metric whose paired comparison is shown beside (default: the first judged)",
    )

    @model_validator(mode="after")
    def _something(self) -> PairwiseConfig:
        if self.preferences is None and not self.judge:
            raise ValueError("give preferences (a file of people's) and/or judge: true")
        return self


class AgreementFloor(_Section):
    """How well tonight's judge must agree with the human labels before the gate reads its scores."""

    statistic: Literal["accuracy", "balanced_accuracy", "kappa", "spearman", "kendall"] = Field(
        default="kappa", description="the agreement statistic (docs/trust.md, 'Reading the figures')"
    )
    value: float = Field(ge=-1, le=1, description="the floor: below it the metric neither passes nor fails")
    bound: Literal["estimate", "low"] = Field(
        default="estimate",
        description="compare the statistic's estimate, or (stricter) the low end of its 95 % interval",
    )
    metrics: list[str] | None = Field(
        default=None,
        description="judge metrics the floor applies to (default: every judge metric with labels); a metric "
        "named here with no labelled sample tonight is below the floor",
    )


class TrustConfig(_Section):
    """What the judge must show against people before its scores count (docs/trust.md)."""

    min_agreement: AgreementFloor | None = Field(
        default=None, description="an agreement floor on the labelled subset (needs human_labels)"
    )
