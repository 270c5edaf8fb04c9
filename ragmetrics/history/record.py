"""What a night leaves for the history: per run and metric the mean with its CI, the per-query scores (for
"worse since"), the gate's outcome, and the provenance a later night is compared on.

A record is small and self-sufficient, so the history outlives `output.keep` deleting old dated folders.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Literal

import numpy as np
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from ragmetrics.errors import JudgeError
from ragmetrics.schema import Report, RunResult

Status = Literal["ok", "regression", "not_comparable", "incomplete", "untrusted", "no_baseline"]
RECORD_VERSION = 1
CI_SAMPLES = 2000
CONFIG_SECTIONS_IGNORED = ("output", "progress", "baseline")
"""Config sections that do not change a score (where files go, progress bars, what the gate compares with):
not annotated."""


class _Model(BaseModel):
    # A record from disk may have been edited by hand or by another tool: a NaN or infinite mean would break
    # every later night's charts and trends, so it is an invalid record (reported, skipped), never a value.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class SeriesPoint(_Model):
    """One night's mean of one run's metric, with its 95 % percentile-bootstrap CI over the queries."""

    run: str
    metric: str
    mean: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    failures: int = 0
    judged: bool = Field(default=False, description="a judge metric: a judge change breaks its series")


class JudgeStamp(_Model):
    backend: str
    model: str
    embedding_model: str | None = None
    prompt_versions: dict[str, str] = Field(default_factory=dict)


class NightRecord(_Model):
    record_version: int = RECORD_VERSION
    folder: str = Field(description="the dated folder's name under the output root")
    created_at: AwareDatetime = Field(
        description="with its time zone: nights from several machines are ordered"
    )
    name: str
    status: Status
    baseline: str | None = Field(default=None, description="the report the gate compared with, as given")
    baseline_folder: str | None = Field(
        default=None,
        description="the dated folder that report was in, resolved when it was read (a path through `latest` "
        "points elsewhere by the time the history is drawn)",
    )
    regressions: list[str] = Field(default_factory=list, description="'run / metric' pairs that regressed")
    not_comparable: list[str] = Field(
        default_factory=list,
        description="'run / metric' pairs the gate did not check: their data or judge changed",
    )
    incomplete: list[str] = Field(
        default_factory=list, description="'run / metric' pairs with too many failed scores to check"
    )
    untrusted: list[str] = Field(
        default_factory=list, description="'run / metric' pairs whose judge was below the agreement floor"
    )
    dataset_fingerprint: str | None = None
    truth_fingerprint: str | None = None
    ragmetrics_version: str = ""
    config_sections: dict[str, str] = Field(
        default_factory=dict, description="config section -> hash of its content, to name what changed"
    )
    judges: dict[str, JudgeStamp] = Field(default_factory=dict, description="run -> who judged it")
    points: list[SeriesPoint] = Field(default_factory=list)
    per_query: dict[str, dict[str, dict[str, float | None]]] = Field(
        default_factory=dict, description="run -> query -> metric -> score (None: failed)"
    )

    @field_validator("folder", "baseline_folder")
    @classmethod
    def _plain_folder_name(cls, value: str | None) -> str | None:
        """A folder is a name under the output root: no path separator, no scheme ("javascript:"), not hidden;
        history.html links to it, so anything else would be a link somewhere else."""
        if value is None:
            return value
        if (
            not value
            or value.startswith(".")
            or any(c in value for c in "/\\:\0<>\"'`")
            or value != value.strip()
        ):
            raise ValueError(f"not a folder name under the output root: {value!r}")
        return value

    def point(self, run: str, metric: str) -> SeriesPoint | None:
        return next((p for p in self.points if p.run == run and p.metric == metric), None)

    def outcome(self, run: str, metric: str) -> Status:
        """The gate's outcome for one pair: its own regression, or not comparable, or incomplete; else the
        night had a gate (ok) or not (no_baseline). A regression of another metric does not colour this one."""
        key = f"{run} / {metric}"
        if key in self.regressions:
            return "regression"
        if key in self.not_comparable:
            return "not_comparable"
        if key in self.incomplete:
            return "incomplete"
        if key in self.untrusted:
            return "untrusted"
        return "no_baseline" if self.baseline is None else "ok"


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _is_judged(run: RunResult, metric: str) -> bool:
    from ragmetrics.judge.registry import spec

    try:
        return spec(metric).plan != "deterministic"
    except JudgeError:
        # A team's own metric is registered only while its run lasts: judged if the run kept verdicts for it.
        return any(metric in details for details in run.details.values())


def _point(run: RunResult, metric: str) -> SeriesPoint:
    from ragmetrics.comparison.bootstrap import bootstrap_ci

    values = [v for scores in run.per_query.values() if (v := scores.get(metric)) is not None]
    finite = [v for v in values if math.isfinite(v)]
    mean = run.aggregate.get(metric)
    low = high = None
    if len(finite) > 1:
        low, high = bootstrap_ci(np.asarray(finite, dtype=np.float64), samples=CI_SAMPLES, seed=0)
    elif len(finite) == 1:
        low = high = finite[0]
    return SeriesPoint(
        run=run.name,
        metric=metric,
        mean=mean,
        ci_low=low,
        ci_high=high,
        n=len(finite),
        failures=run.failure_count(metric),
        judged=_is_judged(run, metric),
    )


def record_of(report: Report, folder: str, *, baseline_folder: str | None = None) -> NightRecord:
    """The history record of one report (written into `folder` under the output root)."""
    meta = report.metadata
    nightly = meta.nightly
    gate = nightly.regression if nightly is not None else None
    status: Status = "no_baseline" if gate is None else gate.status
    if nightly is not None and nightly.incomplete:
        status = "incomplete"
    config = meta.config or {}
    judges = {
        run.name: JudgeStamp(
            backend=run.metadata.judge.backend,
            model=run.metadata.judge.model,
            embedding_model=run.metadata.judge.embedding_model,
            prompt_versions=dict(run.metadata.judge.prompt_versions),
        )
        for run in report.runs
        if run.metadata.judge is not None
    }
    return NightRecord(
        folder=folder,
        created_at=meta.created_at,
        name=nightly.name if nightly is not None else "ragmetrics report",
        status=status,
        baseline=gate.baseline if gate is not None else None,
        baseline_folder=baseline_folder if gate is not None else None,
        regressions=[f"{c.run} / {c.metric}" for c in gate.regressions] if gate is not None else [],
        not_comparable=[k for k, v in gate.skipped_pairs.items() if v == "not_comparable"] if gate else [],
        incomplete=[k for k, v in gate.skipped_pairs.items() if v == "incomplete"] if gate else [],
        untrusted=[k for k, v in gate.skipped_pairs.items() if v == "untrusted"] if gate else [],
        dataset_fingerprint=meta.dataset_fingerprint,
        truth_fingerprint=meta.truth_fingerprint,
        ragmetrics_version=meta.ragmetrics_version,
        config_sections={
            key: _hash(value) for key, value in config.items() if key not in CONFIG_SECTIONS_IGNORED
        },
        judges=judges,
        points=[_point(run, metric) for run in report.runs for metric in run.metrics],
        per_query={run.name: {q: dict(s) for q, s in run.per_query.items()} for run in report.runs},
    )
