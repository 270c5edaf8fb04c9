"""How far a run's judge numbers are from people and from the judge itself, as a result stores it
(`RunResult.trust`): agreement with human labels, the people's own agreement, prediction-powered estimates and
the judge's noise over repeats (computed by `ragmetrics.trust`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragmetrics.schema_base import Interval, _Model


class CalibrationBin(_Model):
    """Judge scores in [low, high): how many, their mean, and the people's mean on the same samples."""

    low: float
    high: float
    n: int
    judge_mean: float
    human_mean: float


AGREEMENT_STATISTICS = {"percent": "percent agreement", "cohen": "Cohen's kappa", "fleiss": "Fleiss' kappa",
                        "alpha": "Krippendorff's alpha"}  # fmt: skip
"""The people's agreement statistics by their keys in `PeopleCeiling.undefined`, as a report names them."""


class PeopleCeiling(_Model):
    """Agreement between people on a metric and the judge beside it, on the items two or more people labelled
    (`ragmetrics.trust.people`)."""

    labellers: list[str]
    items: int = Field(description="samples two or more people labelled")
    level: Literal["nominal", "ordinal", "interval"]
    percent: Interval | None = Field(default=None, description="share of agreeing pairs of labels per item")
    cohen_kappa: Interval | None = Field(default=None, description="exactly two labellers")
    fleiss_kappa: Interval | None = None
    alpha: Interval | None = Field(default=None, description="Krippendorff's alpha at `level`")
    people_alpha: Interval | None = Field(default=None, description="mean pairwise alpha between people")
    judge_alpha: Interval | None = Field(
        default=None, description="mean pairwise alpha of the judge with each person"
    )
    difference: Interval | None = Field(
        default=None, description="judge_alpha - people_alpha, same resamples"
    )
    standing: Literal["within", "above", "below", "unknown"] = "unknown"
    text: str = ""
    disagreements: list[str] = Field(default_factory=list, description="sample ids people disagree on")
    undefined: dict[str, str] = Field(
        default_factory=dict,
        description="statistic (percent, cohen, fleiss, alpha) -> why it is undefined here",
    )


class MetricAgreement(_Model):
    """How a judge metric agrees with human labels on the samples both scored (`ragmetrics.trust.agreement`)."""

    metric: str
    n_labeled: int
    label_kind: Literal["binary", "graded", "score"]
    threshold: float = Field(description="both sides count as positive at or above it (accuracy, kappa)")
    accuracy: Interval | None = None
    balanced_accuracy: Interval | None = None
    kappa: Interval | None = Field(default=None, description="Cohen's kappa (binary labels)")
    spearman: Interval | None = None
    kendall: Interval | None = Field(default=None, description="Kendall's tau-b (graded or score labels)")
    bias: Interval = Field(description="mean(judge - human) on the labelled samples, t interval")
    calibration: list[CalibrationBin] = Field(default_factory=list)
    people: PeopleCeiling | None = Field(
        default=None,
        description="the people's agreement with each other, the judge's ceiling (two or more labellers)",
    )


class PPIEstimate(_Model):
    """The people's mean of a metric estimated four ways (`ragmetrics.trust.ppi`): judge only, labels only
    (classical), prediction-powered (PPI) and power-tuned PPI++ with its weight `ppi_lambda`."""

    metric: str
    n_labeled: int
    n_unlabeled: int
    confidence: float
    judge_only: Interval
    classical: Interval | None = None
    ppi: Interval | None = None
    ppi_plus: Interval | None = None
    ppi_lambda: float | None = None


class JudgeNoiseStats(_Model):
    """A judge metric judged `repeats` times per sample with distinct seeds (`ragmetrics.trust.variance`)."""

    metric: str
    samples: int
    repeats: int
    mean: float = Field(description="mean of the per-sample means over repeats")
    mean_spread: float = Field(description="mean over samples of the standard deviation over repeats")
    flip_rate: float = Field(description="share of verdicts not the same in every repeat")
    icc: float | None = Field(description="ICC(1): share of variance between samples, 1 = noiseless judge")
    ci_samples: Interval = Field(description="bootstrap CI of the mean over samples only")
    ci_with_noise: Interval = Field(description="two-level bootstrap CI over samples and repeats")
    spread: dict[str, float] = Field(default_factory=dict, description="per-sample standard deviation")


class PairPPI(_Model):
    """The PPI-corrected difference candidate - baseline on one metric, over samples both runs scored."""

    metric: str
    baseline: str
    candidate: str
    estimate: PPIEstimate


class RunTrust(_Model):
    """How far this run's judge numbers are from people and from the judge itself."""

    labels_source: str | None = None
    agreement: list[MetricAgreement] = Field(default_factory=list)
    ppi: list[PPIEstimate] = Field(default_factory=list)
    noise: list[JudgeNoiseStats] = Field(default_factory=list)
