"""The `judge:` section: the judge backend's settings, which metrics to judge (built-in, the team's own,
from files or entry points), and an adaptive night's stopping rule."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from ragmetrics.judge.base import JUDGE_METRICS
from ragmetrics.judge.cascade.config import CascadeKeys, check_cascade_combination
from ragmetrics.judge.own_metrics import CustomMetric, entry_point_definition, entry_point_names
from ragmetrics.judge.registry import JudgeMetricSpec, resolve_judge_metric
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.nightly.config_base import _check_names, _Section


class AdaptiveConfig(_Section):
    """An adaptive night (docs/adaptive.md): judge questions in a seeded random order, in batches, every run on
    the same ones, and stop once every decision is settled by an anytime-valid confidence sequence."""

    batch_size: int = Field(default=50, ge=1, description="questions judged between two looks")
    alpha: float = Field(default=0.05, gt=0, lt=1, description="error rate of all decisions together")
    margin: float = Field(
        default=0.01, ge=0, lt=1, description="a pair whose difference is shown within +-margin is level"
    )
    precision: float | None = Field(
        default=None, gt=0, lt=1, description="also settle each run's mean to +-this (half-width)"
    )
    max_questions: int | None = Field(default=None, ge=1, description="budget: questions judged at most")
    max_calls: int | None = Field(default=None, ge=1, description="budget: judge requests at most")
    max_cost: float | None = Field(default=None, gt=0, description="budget: judge cost in USD at most")
    seed: int = Field(default=0, description="the order questions are judged in")
    strata: str | None = Field(
        default=None, description="a dataset column: the order takes each stratum in turn, in proportion"
    )
    signal: str | None = Field(
        default=None,
        description="a free score on every question that predicts the judge's, used as a control variate: "
        "'local' (the built-in local judge's score of the same metric) or a retrieval metric of the night "
        "(e.g. 'ndcg@10')",
    )
    target: Literal["population", "questions"] = Field(
        default="population",
        description="pair and gate decisions about questions like these ('population', as the full night's "
        "paired tests) or about this dataset's own questions ('questions': a fixed regression set)",
    )


class JudgeConfig(CascadeKeys, JudgeSettings):
    """JudgeSettings (backend, model, base_url, concurrency, timeouts, cache) plus which metrics to judge
    (and a cascade's keys: judge.cascade.config)."""

    _metric_origins: dict[str, str] = PrivateAttr(default_factory=dict)
    adaptive: AdaptiveConfig | None = Field(
        default=None,
        description="judge until every decision is settled (anytime-valid), not every question: "
        "{batch_size, alpha, margin, precision, max_questions, max_calls, max_cost, seed, strata, signal, "
        "target}",
    )
    metric_files: list[Path] = Field(
        default_factory=list,
        description="metric definitions of your own, one YAML file each (a rubric, say); read into "
        "custom_metrics when the config loads; list their names in `metrics`",
    )
    custom_metrics: list[CustomMetric] = Field(
        default_factory=list,
        description="metrics of your own: contains, matches, python or rubric (docs/judge.md, 'Your own "
        "metrics'); list their names in `metrics`",
    )

    metrics: list[str] = Field(default_factory=list, description=f"judge metrics: {', '.join(JUDGE_METRICS)}")
    contexts_top_k: int = Field(
        default=3,
        ge=1,
        le=100,
        description="contexts of a run without its own: the texts of its top-k passages",
    )
    runs: list[str] | None = Field(
        default=None, description="runs to judge (default: every run with contexts)"
    )

    @field_validator("custom_metrics")
    @classmethod
    def _distinct_custom(cls, v: list[CustomMetric]) -> list[CustomMetric]:
        seen: set[str] = set()
        for i, item in enumerate(v):
            if item.name in seen:
                raise ValueError(f"[{i}]: metric {item.name!r} is defined twice")
            if resolve_judge_metric(item.name) is not None:
                raise ValueError(f"[{i}]: {item.name!r} is the name of a built-in metric; choose another")
            seen.add(item.name)
        return v

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str], info: ValidationInfo) -> list[str]:
        own = [m.name for m in info.data.get("custom_metrics", [])]
        known = [*JUDGE_METRICS, *own, *entry_point_names()]

        def check(name: str) -> str | None:
            if name in known:
                return None
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return f"unknown metric {name!r}{hint} judge metrics: {', '.join(known)}"

        return _check_names(v, check)

    @model_validator(mode="after")
    def _custom_metrics_used(self) -> JudgeConfig:
        unused = sorted({m.name for m in self.custom_metrics} - set(self.metrics))
        if unused:
            raise ValueError(f"custom metric {unused[0]!r} is defined but not listed in judge.metrics")
        if self.adaptive is not None and self.repeats > 1 and not self.cascade:  # a cascade votes its repeats
            raise ValueError(
                "judge.adaptive: judge.repeats > 1 is not supported with an adaptive night (set one)"
            )
        if (
            self.adaptive is not None
            and self.panel is not None
            and self.panel.combine in ("learned", "dawid_skene")
        ):
            raise ValueError("judge.panel.combine: an adaptive night combines per unit: use mean or majority")
        check_cascade_combination(self.cascade, self.panel)  # judge.cascade.config
        return self

    def metric_specs(self, origin: str, search: Sequence[Path] = ()) -> list[JudgeMetricSpec]:
        """The specs of the custom metrics, to register for the run (`registry.registered_metrics`); Python
        metrics are imported now, from the folders in `search` first."""
        specs = [
            item.to_spec(self._metric_origins.get(item.name, origin), search) for item in self.custom_metrics
        ]
        defined = {*JUDGE_METRICS, *(m.name for m in self.custom_metrics)}
        for name in self.metrics:  # the rest are offered by installed packages
            if name not in defined and resolve_judge_metric(name) is None:
                specs.append(entry_point_definition(name).to_spec(f"entry point {name!r}", search))
        return specs

    def settings(self) -> JudgeSettings:
        """The backend settings alone, as `make_judge` takes them."""
        fields = set(JudgeSettings.model_fields)
        return JudgeSettings.model_validate(self.model_dump(include=fields))
