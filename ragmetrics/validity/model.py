"""The validity study's result as report.json stores it (`metadata.extra["validity"]`) and `ragmetrics
validity` writes it (validity.json): every figure with the settings that decided it, and every undefined
figure with the reason it is undefined, never a NaN."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MetricValidity", "TauInterval", "ValidityResult", "ValiditySettings", "ValidityVerdict"]

MetricKind = Literal["retrieval", "udcg", "judge context", "chosen"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TauInterval(_Model):
    """A point estimate and its bootstrap percentile interval; `undefined` says why there is no number."""

    estimate: float | None
    low: float | None = None
    high: float | None = None
    undefined: str | None = None
    undefined_resamples: int = Field(
        default=0, description="bootstrap resamples where the figure was undefined (left out of the interval)"
    )


class ValiditySettings(_Model):
    answer_metric: str
    samples: int = Field(description="bootstrap resamples of the questions")
    confidence: float
    seed: int
    alpha: float = Field(description="discriminative power: the level each corrected pair is tested at")
    test: str
    correction: str
    permutations: int


class MetricValidity(_Model):
    """One metric: how its values order the answers (per query), the runs (per system), and how many run pairs
    it separates."""

    metric: str
    kind: MetricKind
    qrels: str | None = Field(default=None, description="the qrels set a retrieval metric was scored on")
    oriented: bool = Field(default=False, description="lower is better: its values were negated before tau")
    units: int = Field(description="(question, run) pairs with both the metric and the answer quality")
    questions: int
    left_out: int = Field(
        default=0, description="(question, run) pairs with an answer quality but no metric value"
    )
    per_query: TauInterval
    per_system: TauInterval
    separated: int = Field(description="run pairs the metric separates significantly")
    pairs: int = Field(description="run pairs tested")
    power: float | None = Field(description="separated / pairs; None when no pair could be tested")


class ValidityVerdict(_Model):
    best: str | None = Field(
        description="the metric that tracks the answers best; None when the data cannot tell"
    )
    leaders: list[str] = Field(
        default_factory=list,
        description="the top metric and every other whose tau the data cannot tell from it (paired bootstrap)",
    )
    tau: TauInterval | None = Field(default=None, description="the leader's per-query tau and its interval")
    difference: TauInterval | None = Field(
        default=None, description="tau of the best minus tau of the runner-up, on the same resamples"
    )
    runner_up: str | None = None
    text: str


class ValidityResult(_Model):
    settings: ValiditySettings
    runs: list[str]
    questions: int
    metrics: list[MetricValidity]
    verdict: ValidityVerdict
    per_system_note: str | None = Field(
        default=None, description="why no per-system tau is given (fewer than 4 runs)"
    )
    notes: list[str] = Field(default_factory=list)
