"""One run's scores as every part writes them (`RunResult`): per query and metric, aggregates, failures with
their causes, scores that do not apply, the judge's evidence, who judged and the run's metadata."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from ragmetrics._version import __version__
from ragmetrics.schema_base import SCHEMA_VERSION, _Model, _now
from ragmetrics.schema_trust import RunTrust


class SampleFailure(_Model):
    """A score that could not be computed for one query and metric, with its cause; never a silent NaN."""

    query_id: str
    metric: str
    cause: str = Field(
        description="short machine-readable cause, e.g. 'rate_limited', 'invalid_output', 'timeout'"
    )
    message: str


class NotApplicableScore(_Model):
    """A metric that does not apply to one query (e.g. faithfulness of a refusal), with the reason."""

    query_id: str
    metric: str
    reason: str


class TokenUsage(_Model):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    retries: int = 0
    repairs: int = 0
    batch_prompt_tokens: int = Field(default=0, description="of prompt_tokens, those billed at batch prices")
    batch_completion_tokens: int = Field(
        default=0, description="of completion_tokens, those billed at batch prices"
    )
    cost_usd: float | None = None


class CacheStats(_Model):
    hits: int = 0
    misses: int = 0
    writes: int = 0
    write_failures: int = Field(
        default=0, description="values kept in memory because the cache stayed locked"
    )
    failure_hits: int = Field(
        default=0, description="units whose recorded failure was reported again without a call (retry_failed)"
    )
    failure_retries: int = Field(default=0, description="units that had failed before and were tried again")
    path: str | None = None
    enabled: bool = True


class JudgeInfo(_Model):
    """Who judged: enough to reproduce the verdicts, never a secret (no API key, no auth header)."""

    backend: str = Field(
        description="'openai' for any OpenAI-compatible endpoint, 'local' for the built-in judge"
    )
    model: str
    base_url: str | None = None
    embedding_model: str | None = None
    temperature: float | None = None
    seed: int | None = None
    prompt_versions: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    cache: CacheStats = Field(default_factory=CacheStats)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    failures: int = 0


class ClaimEvidence(_Model):
    """What a claim diagnostic decided besides its per-claim verdicts: how many chunks there were, which of
    them counted as relevant and what decided it (human qrels, or entailing a reference claim)."""

    chunks: int = Field(ge=0)
    relevant_chunks: list[bool]
    relevance_source: Literal["qrels", "reference claims"]
    judge: Literal["llm", "local"] = Field(
        description="local: the weaker variant (embedding similarity stands in for entailment)"
    )


GEOMETRIC_FLOOR = 1e-5
"""A geometric mean (gm_map) floors each value here first, as trec_eval does, so one zero cannot zero it."""


def aggregate_values(values: Any, how: str = "mean") -> float:
    """Per-query values as one figure: their mean (0 for none), sum, or geometric mean floored at 1e-5."""
    numbers = [float(v) for v in values]
    if how == "sum":
        return math.fsum(numbers)
    if not numbers:
        return 0.0
    if how == "geometric":
        return math.exp(math.fsum(math.log(max(v, GEOMETRIC_FLOOR)) for v in numbers) / len(numbers))
    if how != "mean":
        raise ValueError(f"unknown aggregation {how!r}; expected mean, sum or geometric")
    return math.fsum(numbers) / len(numbers)


class JudgeDetail(_Model):
    """The evidence behind one judge score: the validated verdicts with their reasons."""

    verdicts: list[dict[str, Any]] = Field(default_factory=list)
    reason: str | None = None
    cached: bool = False
    claims: ClaimEvidence | None = Field(
        default=None,
        description="claim diagnostics: the chunk count and relevance behind the claim-by-chunk matrix; the "
        "matrix itself is the verdicts (one per claim, with the 0-based chunks that entail it)",
    )


class RunMetadata(_Model):
    schema_version: str = SCHEMA_VERSION
    ragmetrics_version: str = __version__
    created_at: datetime = Field(default_factory=_now)
    kind: Literal["retrieval", "judge", "operational", "attack", "mixed"] = Field(
        default="retrieval",
        description="operational: latency, tokens and cost of the calls that produced the run's answers; "
        "attack: attack success and refusal rates decided by exact checks (ragmetrics.attacks)",
    )
    metrics: list[str] = Field(default_factory=list)
    metric_settings: dict[str, Any] = Field(
        default_factory=dict,
        description="conventions used: query_set ('qrels' or 'intersection'), tie rule, relevance levels, ...",
    )
    num_queries: int = 0
    num_qrels_queries: int | None = None
    num_run_queries: int | None = None
    missing_queries: list[str] = Field(
        default_factory=list, description="queries of the qrels absent from the run (scored 0 by default)"
    )
    extra_queries: list[str] = Field(
        default_factory=list, description="queries of the run absent from the qrels (left out)"
    )
    judge: JudgeInfo | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class RunResult(_Model):
    """One run's scores. `per_query[qid][metric]` is None only where a judge failure is recorded in `failures`."""

    name: str
    per_query: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    aggregate: dict[str, float | None] = Field(
        default_factory=dict, description="mean over the queries with a value; None only if every one failed"
    )
    failures: list[SampleFailure] = Field(default_factory=list)
    not_applicable: list[NotApplicableScore] = Field(
        default_factory=list, description="scores that do not apply (value None), apart from failures"
    )
    details: dict[str, dict[str, JudgeDetail]] = Field(
        default_factory=dict, description="query -> metric -> verdicts and reasons (judge metrics)"
    )
    metadata: RunMetadata = Field(default_factory=RunMetadata)
    trust: RunTrust | None = Field(
        default=None, description="agreement with human labels, PPI estimates, judge noise over repeats"
    )

    @field_validator("per_query")
    @classmethod
    def _no_nan(cls, value: dict[str, dict[str, float | None]]) -> dict[str, dict[str, float | None]]:
        for qid, scores in value.items():
            for metric, score in scores.items():
                if score is not None and not math.isfinite(score):
                    raise ValueError(f"per_query[{qid!r}][{metric!r}] is {score}; record a failure instead")
        return value

    @property
    def metrics(self) -> list[str]:
        return list(self.metadata.metrics)

    @property
    def query_ids(self) -> list[str]:
        return list(self.per_query)

    def scores(self, metric: str, query_ids: list[str] | None = None) -> list[float | None]:
        """Per-query values of one metric in the order of `query_ids` (default: this result's order)."""
        ids = self.query_ids if query_ids is None else query_ids
        return [self.per_query.get(q, {}).get(metric) for q in ids]

    def failure_count(self, metric: str) -> int:
        return sum(1 for f in self.failures if f.metric == metric)

    def not_applicable_count(self, metric: str) -> int:
        return sum(1 for n in self.not_applicable if n.metric == metric)

    def recompute_aggregate(self) -> None:
        """Each metric's figure over queries with a value (failures are counted, never averaged in): the
        mean, or the sum or geometric mean `metadata.metric_settings['aggregation']` names for it."""
        how = self.metadata.metric_settings.get("aggregation", {})
        agg: dict[str, float | None] = {}
        for metric in self.metadata.metrics:
            values = [v for s in self.per_query.values() if (v := s.get(metric)) is not None]
            agg[metric] = aggregate_values(values, how.get(metric, "mean")) if values else None
        self.aggregate = agg

    def merge(self, other: RunResult) -> RunResult:
        """Join the metrics of two results for the same run (e.g. retrieval + judge) into one."""
        if other.name != self.name:
            raise ValueError(f"cannot merge results of different runs: {self.name!r} and {other.name!r}")
        clash = set(self.metadata.metrics) & set(other.metadata.metrics)
        if clash:
            raise ValueError(f"both results define metrics {sorted(clash)}")
        per_query: dict[str, dict[str, float | None]] = {q: dict(s) for q, s in self.per_query.items()}
        for q, s in other.per_query.items():
            per_query.setdefault(q, {}).update(s)
        details = {q: dict(d) for q, d in self.details.items()}
        for q, d in other.details.items():
            details.setdefault(q, {}).update(d)
        meta = self.metadata.model_copy(deep=True)
        meta.kind = "mixed" if self.metadata.kind != other.metadata.kind else self.metadata.kind
        meta.metrics = [*self.metadata.metrics, *other.metadata.metrics]
        meta.metric_settings = {**self.metadata.metric_settings, **other.metadata.metric_settings}
        meta.judge = self.metadata.judge or other.metadata.judge
        meta.num_queries = len(per_query)
        meta.extra = {**self.metadata.extra, **other.metadata.extra}
        merged = RunResult(
            name=self.name,
            per_query=per_query,
            failures=[*self.failures, *other.failures],
            not_applicable=[*self.not_applicable, *other.not_applicable],
            details=details,
            metadata=meta,
            trust=self.trust or other.trust,
        )
        merged.recompute_aggregate()
        return merged
