"""How runs are compared and a night is gated: the `compare:` section (test, correction, alpha, power) and
the `baseline:` section (the regression gate's thresholds and what makes a baseline not comparable)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from ragmetrics.nightly.config_base import _Section


class CompareConfig(_Section):
    test: Literal["fisher", "t", "wilcoxon", "sign"] = Field(
        default="fisher", description="paired test for comparisons and the regression gate"
    )
    correction: Literal["holm", "bonferroni", "none"] = Field(
        default="holm", description="multiple-testing correction"
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="significance level after correction")
    seed: int = Field(default=42, description="seed of the randomisation test and the bootstrap")
    permutations: int = Field(default=10_000, ge=100, description="permutations of the fisher test")
    tukey: Literal["off", "blocked", "one-way"] = Field(
        default="off",
        description="also Tukey's HSD over every pair of runs at once, per metric (blocked: queries as blocks; "
        "one-way: as scipy and ranx)",
    )
    power: float = Field(
        default=0.8, gt=0, lt=1, description="the power the report's minimum detectable differences are for"
    )
    power_targets: dict[str, float] = Field(
        default_factory=dict,
        description="metric -> the difference to plan the questions for in the power table (default: the "
        "baseline's max_drop for it when above 0, else the observed difference)",
    )

    @field_validator("power_targets")
    @classmethod
    def _positive_targets(cls, v: dict[str, float]) -> dict[str, float]:
        bad = sorted(k for k, d in v.items() if not 0 < d < float("inf"))
        if bad:
            raise ValueError(f"targets must be positive differences; check {bad}")
        return v


class BaselineConfig(_Section):
    """The regression gate: a metric regresses when its mean drops by more than its threshold, significantly."""

    path: Path | None = Field(default=None, description="an earlier report.json; --baseline overrides it")
    max_drop: float = Field(default=0.0, ge=0, description="allowed absolute drop of the mean, every metric")
    max_drop_per_metric: dict[str, float] = Field(default_factory=dict, description="metric -> allowed drop")
    metrics: list[str] | None = Field(default=None, description="metrics the gate checks (default: all)")
    use_ppi: bool = Field(
        default=False,
        description="judge metrics with human_labels: gate on the PPI++ difference corrected by the labels "
        "instead of the paired test",
    )
    beyond_judge_noise: bool = Field(
        default=False,
        description="judge metrics judged with judge.repeats > 1: a drop must also exceed the judge's own noise",
    )
    require_fresh: bool = Field(
        default=False,
        description="a run whose pipeline and generator outputs all came from pipeline_cache (the team's code "
        "not called tonight) makes the gate incomplete, exit 3, instead of passing on stored outputs; by "
        "default the verdict only says so (set it in CI)",
    )
    on_change: Literal["not_comparable", "compare"] = Field(
        default="not_comparable",
        description="when the dataset, or a metric's judge (backend, model, embedding model, its prompts), "
        "differs from the baseline's: not_comparable lists those pairs unchecked and exits 4; compare checks "
        "them anyway, with a note",
    )

    @field_validator("max_drop_per_metric")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        for metric, drop in v.items():
            if drop < 0:
                raise ValueError(f"allowed drop for {metric!r} is negative ({drop})")
        return v

    def threshold(self, metric: str) -> float:
        return self.max_drop_per_metric.get(metric, self.max_drop)
