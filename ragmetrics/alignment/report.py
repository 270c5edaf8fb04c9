"""What an alignment measured, as a typed report (report.json; Markdown and HTML from `render`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.schema import Interval

__all__ = ["AlignmentReport", "CurvePoint", "Disagreement", "FigureRow", "StepReport"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class FigureRow(_Model):
    """One statistic on the held-out labels: the judge as it was, and aligned."""

    statistic: str
    before: Interval
    after: Interval


class StepReport(_Model):
    name: Literal["few_shot", "instructions", "head", "calibration"]
    kept: bool
    why: str
    gain: Interval | None = Field(
        default=None, description="held-out gain in the deciding statistic, paired 95 % CI"
    )
    before: Interval | None = None
    after: Interval | None = None
    choices: list[str] = Field(
        default_factory=list, description="what each outer fold's training labels chose"
    )
    calls: int = 0


class CurvePoint(_Model):
    share: float
    labels: int = Field(description="training labels per fold at this share (mean over folds)")
    value: Interval


class Disagreement(_Model):
    """A held-out labelled sample the judge gets wrong: what people said, what the judge said and why."""

    sample_id: str
    question: str
    answer: str | None = Field(default=None, description="the answer, cut to 300 characters")
    label: float = Field(description="people's label")
    judge: float = Field(description="the judge's score as it is")
    aligned: float | None = Field(default=None, description="the aligned judge's held-out score, when a step was kept")
    reason: str = Field(default="", description="the judge's reasons, from its verdicts")


class AlignmentReport(_Model):
    metric: str
    judge: dict[str, Any]
    labels: dict[str, Any]
    statistic: str
    threshold: float
    folds: int
    seed: int
    n: int
    excluded: dict[str, str] = Field(
        default_factory=dict, description="labelled samples the judge could not score: id -> cause"
    )
    steps: list[StepReport]
    kept: list[str]
    figures: list[FigureRow]
    confusion_before: dict[str, int]
    confusion_after: dict[str, int]
    examples: list[dict[str, Any]] = Field(default_factory=list)
    guidance_before: str | None = None
    guidance_after: str | None = None
    instruction_diff: str | None = None
    head_weights: dict[str, float] | None = None
    head_penalty: float | None = None
    calibration: str | None = None
    curve: list[CurvePoint] = Field(default_factory=list)
    curve_note: str = ""
    calls: int = 0
    budget: int | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    written: str | None = Field(
        default=None, description="the aligned.json written, or None when no step was kept"
    )
    verdict: str = ""
    disagreements: list[Disagreement] = Field(
        default_factory=list,
        description="held-out samples on the other side of the threshold from people's label, worst first",
    )
