"""Several runs scored on the same queries (`Report`): the runs, their statistics and comparisons, and the
report's metadata; a schema-1 report migrates into the typed fields on load."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, model_validator

from ragmetrics._version import __version__
from ragmetrics.schema_base import SCHEMA_VERSION, _Model, _now
from ragmetrics.schema_comparison import (
    ComparisonSettings,
    DescriptiveStats,
    PairComparison,
    PairPowerFigures,
    PairwiseSummary,
    SeedPairComparison,
    TukeyPair,
)
from ragmetrics.schema_nightly import NightlyRun
from ragmetrics.schema_run import RunResult
from ragmetrics.schema_trust import PairPPI

# The `metadata.extra` keys of schema 1 that schema 2 holds in typed fields.
_LEGACY_COMPARISON_KEYS = ("align", "correction_scope")
_LEGACY_NIGHTLY_KEYS = ("name", "dataset", "judge", "failures", "samples", "timings_s", "regression")


class ReportMetadata(_Model):
    schema_version: str = SCHEMA_VERSION
    ragmetrics_version: str = __version__
    created_at: datetime = Field(default_factory=_now)
    query_count: int = 0
    missing_queries: dict[str, list[str]] = Field(
        default_factory=dict, description="run name -> queries it lacks (scored 0 in the comparison)"
    )
    config: dict[str, Any] | None = None
    dataset_fingerprint: str | None = None
    truth_fingerprint: str | None = Field(
        default=None,
        description="hash of what the runs are judged against (ids, questions, references, relevance "
        "judgments), without the system's outputs: a change makes a baseline not comparable",
    )
    versions: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    clusters: dict[str, str] | None = Field(
        default=None,
        description="query id -> conversation id: turns of one conversation are one cluster in every "
        "comparison, interval, power figure and gate check over these queries (comparison.clusters)",
    )
    nightly: NightlyRun | None = Field(default=None, description="set by the nightly job (`ragmetrics run`)")
    power: list[PairPowerFigures] = Field(
        default_factory=list,
        description="per compared pair: what its questions can detect (`ragmetrics power`)",
    )
    pairwise: list[PairwiseSummary] = Field(
        default_factory=list, description="side-by-side preferences of people and of the pairwise judge"
    )
    ppi_pairs: list[PairPPI] = Field(
        default_factory=list,
        description="PPI-corrected paired differences where human labels cover both runs",
    )
    tukey: list[TukeyPair] = Field(
        default_factory=list, description="Tukey's HSD: every pair of runs per metric, one family per metric"
    )
    seed_comparisons: list[SeedPairComparison] = Field(
        default_factory=list, description="systems run with several seeds or folds, compared pairwise"
    )
    extra: dict[str, Any] = Field(
        default_factory=dict, description="free for callers; ragmetrics writes none"
    )


class Report(_Model):
    runs: list[RunResult]
    metrics: list[str]
    settings: ComparisonSettings
    descriptive: dict[str, dict[str, DescriptiveStats]] = Field(
        default_factory=dict, description="run -> metric -> statistics"
    )
    comparisons: list[PairComparison] = Field(default_factory=list)
    metadata: ReportMetadata = Field(default_factory=ReportMetadata)

    @model_validator(mode="before")
    @classmethod
    def _migrate_schema_1(cls, data: Any) -> Any:
        """Move what schema 1 kept in `metadata.extra` into the typed fields of schema 2 (no value changes)."""
        if not isinstance(data, dict):
            return data
        metadata = data.get("metadata")
        if not isinstance(metadata, dict) or str(metadata.get("schema_version", SCHEMA_VERSION)) != "1":
            return data
        extra = dict(metadata.get("extra") or {})
        settings = dict(data.get("settings") or {})
        for key in _LEGACY_COMPARISON_KEYS:
            if key in extra:
                settings.setdefault(key, extra.pop(key))
        if "name" in extra and "dataset" in extra:
            nightly = {key: extra.pop(key) for key in _LEGACY_NIGHTLY_KEYS if key in extra}
            metadata = {**metadata, "nightly": nightly}
        return {**data, "settings": settings, "metadata": {**metadata, "extra": extra}}

    def run(self, name: str) -> RunResult:
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(f"no run named {name!r}; runs: {[r.name for r in self.runs]}")
