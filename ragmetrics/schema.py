"""The unified result schema that the retrieval core, the judge, comparisons and the nightly job all write.

A `RunResult` holds one run's scores: per query and metric, aggregates, failures, judge details and metadata.
A `Report` holds several runs scored on the same queries plus descriptive statistics and paired comparisons.
Both are plain pydantic models, so `model_dump_json()` / `model_validate_json()` round-trip them exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragmetrics._format import format_p
from ragmetrics._version import __version__
from ragmetrics.options import Align, Correction, CorrectionScope, Test
from ragmetrics.schema_sufficiency import SufficiencySection
from ragmetrics.schema_utility import UtilityOrigin

SCHEMA_VERSION = "2"
"""2: comparison settings (align, correction scope) and the nightly run's block are typed fields, not `extra`.
A schema-1 report (ragmetrics 0.1.0) loads: its `metadata.extra` keys migrate into the typed fields."""

# The `metadata.extra` keys of schema 1 that schema 2 holds in typed fields.
_LEGACY_COMPARISON_KEYS = ("align", "correction_scope")
_LEGACY_NIGHTLY_KEYS = ("name", "dataset", "judge", "failures", "samples", "timings_s", "regression")


def _now() -> datetime:
    return datetime.now(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False, defer_build=True)


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
    batch_completion_tokens: int = Field(default=0, description="of completion_tokens, those billed at batch prices")
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


class Interval(_Model):
    """An estimate with its confidence interval; None where the figure is undefined (never NaN)."""

    estimate: float | None
    low: float | None = None
    high: float | None = None


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
    judge_alpha: Interval | None = Field(default=None, description="mean pairwise alpha of the judge with each person")
    difference: Interval | None = Field(default=None, description="judge_alpha - people_alpha, same resamples")
    standing: Literal["within", "above", "below", "unknown"] = "unknown"
    text: str = ""
    disagreements: list[str] = Field(default_factory=list, description="sample ids people disagree on")
    undefined: dict[str, str] = Field(default_factory=dict,
                                      description="statistic (percent, cohen, fleiss, alpha) -> why it is undefined here")


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
        default=None, description="the people's agreement with each other, the judge's ceiling (two or more labellers)"
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


class DescriptiveStats(_Model):
    count: int
    failures: int = 0
    not_applicable: int = 0
    mean: float
    std: float
    min: float
    q1: float
    median: float
    q3: float
    max: float


class PairComparison(_Model):
    """Run B against run A (baseline) on one metric, paired over the shared queries."""

    metric: str
    baseline: str
    candidate: str
    n: int
    mean_baseline: float
    mean_candidate: float
    mean_diff: float = Field(description="candidate minus baseline")
    p_value: float
    p_corrected: float
    significant: bool
    effect_size: float | None = Field(
        description="paired Cohen's d: mean difference / std of differences; 0 when nothing moved, None "
        "when every query moved by the same non-zero amount (d is unbounded: a constant shift)"
    )
    ci_low: float
    ci_high: float
    wins: int
    ties: int
    losses: int
    clusters: int | None = Field(
        default=None,
        description="conversations the test and interval were over when the queries are turns of "
        "conversations (paired test on conversation means, cluster bootstrap); None: per query",
    )


class PairPowerFigures(_Model):
    """What one compared pair's questions can detect (`comparison.report_power`): the minimum detectable
    difference at the pair's level and `power`, the questions `target` needs, the smallest p the test can
    reach, and why the pair's CI and test disagree when they do."""

    metric: str
    baseline: str
    candidate: str
    n: int
    nonzero: int = Field(description="questions whose difference is not 0")
    mean_diff: float
    sd_diff: float
    alpha: float = Field(description="the level the pair is planned at: alpha / m under Holm or Bonferroni")
    power: float
    mde: float | None = Field(description="None: no difference can reach significance with these questions")
    target: float | None = Field(description="the difference planned for (the observed one unless given)")
    needed: int | None = Field(description="questions the target needs; None: out of reach or no target")
    min_p: float
    why: str | None = Field(default=None, description="why the CI and the test disagree, when they do")


class TukeyPair(_Model):
    """One pair of Tukey's all-pairs comparison of one metric: the difference, its simultaneous CI and p."""

    metric: str
    baseline: str
    candidate: str
    n: int = Field(description="queries every compared run scored (complete blocks)")
    mean_baseline: float
    mean_candidate: float
    mean_diff: float = Field(description="candidate minus baseline")
    p_value: float = Field(description="from the studentized range over all the runs: already corrected")
    significant: bool
    ci_low: float = Field(
        description="simultaneous confidence interval of the difference (every pair at once)"
    )
    ci_high: float
    blocked: bool = Field(
        description="true: two-way ANOVA with queries as blocks (respects the pairing); false: one-way, as "
        "scipy.stats.tukey_hsd and ranx"
    )
    df: int = Field(description="degrees of freedom of the error mean square")


class SeedPairComparison(_Model):
    """Two systems each run with several seeds (or folds), compared on one metric over the shared queries."""

    metric: str
    baseline: str
    candidate: str
    seeds_baseline: list[str] = Field(description="the baseline's runs, one per seed")
    seeds_candidate: list[str]
    n: int = Field(description="queries every run of both systems scored")
    mean_baseline: float = Field(description="mean over queries and seeds")
    mean_candidate: float
    mean_diff: float
    seed_sd_baseline: float = Field(
        description="standard deviation of the per-seed means: seed-to-seed spread"
    )
    seed_sd_candidate: float
    test: Test
    p_value: float = Field(description="paired test over queries of the seed-averaged per-query scores")
    p_corrected: float
    significant: bool
    ci_low: float = Field(
        description="hierarchical bootstrap: queries resampled (paired), then each system's seeds"
    )
    ci_high: float


Choice = Literal["left", "right", "tie"]


@dataclass(frozen=True)
class Preference:
    """One side-by-side judgement (`comparison.preference`): on question `sample_id`, run `left` was shown left
    (first) and `right` right; `choice` is preferred. `judge`: a labeller's name, or "llm"."""

    sample_id: str
    left: str
    right: str
    choice: Choice
    judge: str | None = None

    @property
    def winner(self) -> str | None:
        return None if self.choice == "tie" else self.left if self.choice == "left" else self.right


class PairwiseSummary(_Model):
    """Run b against run a from side-by-side preferences, of people or of the LLM pairwise judge
    (`ragmetrics.comparison.preference`), with the metric-based comparison of the same pair beside it."""

    source: Literal["people", "judge"]
    a: str
    b: str
    questions: int
    wins_a: int
    wins_b: int
    ties: int
    share_b: Interval | None = Field(default=None, description="b's share of the untied questions, exact interval")
    p_value: float | None = Field(default=None, description="exact two-sided sign test")
    log_odds_b: Interval | None = Field(default=None, description="Bradley-Terry log(p_b / p_a), bootstrap interval")
    position_left: Interval | None = Field(
        default=None, description="share of untied judgements won by the side shown left (first)"
    )
    position_p: float | None = None
    position_biased: bool = Field(default=False, description="left wins differ from one half at p < 0.05")
    verdict: str = ""
    judgements: int = 0
    metric: str | None = Field(default=None, description="the metric whose paired comparison is shown beside")
    metric_diff: float | None = None
    metric_p: float | None = None
    agreement_with_people: Interval | None = Field(
        default=None, description="judge only: share of questions where its net preference equals the people's"
    )
    failures: list[str] = Field(default_factory=list, description="judge only: questions it could not judge")


class ComparisonSettings(_Model):
    """How runs were compared; every field a renderer or the gate needs to read the numbers right."""

    test: Test
    correction: Correction
    alpha: float = 0.05
    seed: int | None = None
    permutations: int | None = None
    bootstrap_samples: int | None = None
    confidence: float = 0.95
    align: Align = Field(
        default="union",
        description="queries paired over: the union of the runs' (missing scores 0) or the shared",
    )
    correction_scope: CorrectionScope = Field(
        default="metric",
        description="correction family: each metric's pairs ('metric') or every pair ('all')",
    )


class QueryDrop(_Model):
    """One query's change in the regression gate's drill-down."""

    query_id: str
    baseline: float
    current: float
    diff: float = Field(description="current minus baseline")


class MetricCheck(_Model):
    """One (run, metric) compared with the baseline over the shared queries."""

    run: str
    metric: str
    n: int
    mean_baseline: float
    mean_current: float
    drop: float = Field(
        description="mean_baseline - mean_current (for latency, tokens and cost: current - baseline); "
        "positive means worse"
    )
    threshold: float
    p_value: float
    p_corrected: float
    significant: bool
    regressed: bool
    worst_queries: list[QueryDrop] = Field(default_factory=list)
    noise_margin: float | None = Field(
        default=None,
        description="judge metrics judged with repeats: the half-width the judge's own noise adds; with "
        "baseline.beyond_judge_noise a drop must also exceed it",
    )
    ppi_diff: Interval | None = Field(
        default=None,
        description="with baseline.use_ppi: the PPI++ estimate of current - baseline corrected by human labels; "
        "it replaces the paired test (significant when its CI excludes 0)",
    )


class GateResult(_Model):
    """The regression gate's verdict against a baseline report: what changed since it, every check, the near
    misses, and notes on what was not checked."""

    baseline: str
    test: str
    correction: str
    alpha: float
    checks: list[MetricCheck] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    incomplete: list[str] = Field(
        default_factory=list,
        description="run/metric pairs not checked because too many of tonight's scores failed",
    )
    changes: list[str] = Field(
        default_factory=list,
        description="what differs from the baseline besides the scores: dataset, judge backend, model, prompt "
        "versions, embedding model, ragmetrics version (reported first)",
    )
    not_comparable: list[str] = Field(
        default_factory=list,
        description="run/metric pairs not checked because their data or judge changed (baseline.on_change: "
        "not_comparable): a judge change is not a quality change",
    )
    untrusted: list[str] = Field(
        default_factory=list,
        description="run/metric pairs not checked because tonight's judge agrees with the human labels less "
        "than trust.min_agreement asks: neither a pass nor a failure",
    )
    skipped_pairs: dict[str, Literal["not_comparable", "incomplete", "untrusted"]] = Field(
        default_factory=dict,
        description="'run / metric' -> why it was not checked (not_comparable, incomplete or untrusted), for "
        "the tables",
    )
    baseline_means: dict[str, dict[str, float | None]] = Field(
        default_factory=dict,
        description="run -> metric -> the baseline's mean over all its queries (the baseline column of every "
        "format; a checked pair's own means are over the queries both reports scored)",
    )
    from_cache: list[str] = Field(
        default_factory=list,
        description="runs whose pipeline/generator outputs all came from the pipeline cache: tonight's build "
        "was not called for them, and the verdict says so first",
    )
    require_fresh: bool = Field(
        default=False,
        description="baseline.require_fresh: a run served from the cache alone makes the gate incomplete",
    )

    @property
    def refused_stale(self) -> bool:
        """Whether the gate refuses to pass on cached outputs alone (require_fresh and a run from the cache)."""
        return self.require_fresh and bool(self.from_cache)

    @staticmethod
    def pair_key(run: str, metric: str) -> str:
        """How a (run, metric) pair is named in `skipped_pairs`."""
        return f"{run} / {metric}"

    @property
    def regressions(self) -> list[MetricCheck]:
        return [c for c in self.checks if c.regressed]

    @property
    def near_misses(self) -> list[MetricCheck]:
        """Checks that passed on one condition only: a drop beyond its threshold that is not significant, or a
        significant drop within its threshold. Not failures; what to watch."""
        return [
            c
            for c in self.checks
            if not c.regressed
            and ((c.drop > c.threshold and not c.significant) or (c.significant and c.drop > 0))
        ]

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    @property
    def status(self) -> Literal["ok", "regression", "incomplete", "untrusted", "not_comparable"]:
        """regression when a check failed; else incomplete when failures kept pairs from being checked; else
        untrusted when the judge's agreement with people was below the floor; else not_comparable when a
        change of data or judge kept pairs from being checked."""
        if self.failed:
            return "regression"
        if self.incomplete or self.refused_stale:
            return "incomplete"
        if self.untrusted:
            return "untrusted"
        return "not_comparable" if self.not_comparable else "ok"

    def describe(self) -> str:
        """Human-readable verdict: what changed, which metrics regressed and the queries that drove each drop,
        the near misses."""
        lines: list[str] = []
        if self.from_cache:
            head = (
                "regression gate: INCOMPLETE: tonight's build was not called (baseline.require_fresh)"
                if self.refused_stale
                else "regression gate: FROM CACHE: this verdict rests on stored outputs, tonight's build was not "
                "called for these runs (--refresh-pipeline calls it; baseline.require_fresh fails such a night)"
            )
            lines.append(head)
            lines.extend(f"  from cache: {item}" for item in self.from_cache)
        if self.changes:
            lines.append(f"changed since the baseline ({self.baseline}):")
            lines.extend(f"  {change}" for change in self.changes)
        if self.not_comparable:
            lines.append(
                f"regression gate: NOT COMPARABLE: {len(self.not_comparable)} run/metric pairs not checked, "
                "their data or judge changed (set baseline.on_change: compare to check them anyway, or make a "
                "new baseline with the new judge)"
            )
            lines.extend(f"  not comparable: {item}" for item in self.not_comparable)
        if self.incomplete:
            lines.append(
                f"regression gate: INCOMPLETE: {len(self.incomplete)} run/metric pairs not checked, too many "
                "of tonight's scores failed"
            )
            lines.extend(f"  incomplete: {item}" for item in self.incomplete)
        if self.untrusted:
            lines.append(
                f"regression gate: JUDGE BELOW THE AGREEMENT FLOOR: {len(self.untrusted)} run/metric pairs "
                "neither pass nor fail, tonight's judge agrees with your labels less than trust.min_agreement "
                "asks (align it: `ragmetrics align`, docs/trust.md)"
            )
            lines.extend(f"  untrusted: {item}" for item in self.untrusted)
        if self.refused_stale and not self.failed:
            lines.append(
                f"regression gate: not passed: {len(self.from_cache)} runs scored on cached outputs alone "
                f"({len(self.checks)} run/metric pairs checked against {self.baseline}, none regressed)"
            )
        elif not self.failed and not self.incomplete and not self.not_comparable and not self.untrusted:
            cached = f"; {len(self.from_cache)} runs scored on cached outputs" if self.from_cache else ""
            lines.append(
                f"regression gate: ok ({len(self.checks)} run/metric pairs checked against {self.baseline}{cached})"
            )
        elif not self.failed and self.checks:
            lines.append(
                f"regression gate: {len(self.checks)} other run/metric pairs checked, none regressed"
            )
        elif self.failed:
            lines.append(f"regression gate: FAILED against {self.baseline}")
            for c in self.regressions:
                lines.append(
                    f"  {c.run} / {c.metric}: mean {c.mean_baseline:.4f} -> {c.mean_current:.4f} "
                    f"(drop {c.drop:.4f} > allowed {c.threshold:.4f}; {self.test} p={format_p(c.p_value)}, "
                    f"{self.correction}-corrected p={format_p(c.p_corrected)}, n={c.n})"
                )
                worst = ", ".join(f"{q.query_id} ({q.diff:+.3f})" for q in c.worst_queries)
                if worst:
                    lines.append(f"    largest drops: {worst}")
        for c in self.near_misses:
            why = (
                "beyond its threshold but not significant"
                if c.drop > c.threshold
                else "significant but within its threshold"
            )
            lines.append(
                f"  near miss: {c.run} / {c.metric}: {c.mean_baseline:.4f} -> {c.mean_current:.4f} (drop "
                f"{c.drop:.4f}, allowed {c.threshold:.4f}; corrected p={format_p(c.p_corrected)}): {why}"
            )
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


class SkippedRow(_Model):
    """A dataset row left out under `on_invalid: skip`, with where and why."""

    row: int
    field: str | None = None
    column: str | None = None
    message: str


class SourceOnlyCheck(_Model):
    """The night's retrieval runs compared again on source-only qrels: each question's own source chunk (and
    byte-identical copies of it), no grade from a judge or person. Its verdict beside the pooled one says how
    far a retrieval verdict rests on the pool's grader (`nightly.source_only`)."""

    questions: int = Field(ge=0, description="questions with a source chunk, the ones compared here")
    metrics: list[str] = Field(description="the retrieval metrics compared on the source-only qrels")
    means: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="run -> metric -> mean on the source-only qrels"
    )
    comparisons: list[PairComparison] = Field(
        default_factory=list,
        description="every pair of runs on each metric, with the night's test, correction and alpha",
    )


class QrelsProvenance(_Model):
    """Where a dataset's relevance grades came from, and what that means for comparing runs on them."""

    source: str = Field(description="the test-set folder or dataset the qrels were read from")
    relevant: int = Field(ge=0, description="relevant grades (grade >= 1)")
    by_origin: dict[str, int] = Field(
        description="relevant grades per origin: 'source' (the chunk a question was written from), 'judge' "
        "(the pooling judge), 'person' (a review), or 'dataset' (the dataset's own, origin not recorded)"
    )
    pool_runs: list[str] = Field(
        default_factory=list, description="the runs whose top-k was pooled and judged"
    )
    pool_judge: dict[str, str | None] | None = Field(
        default=None, description="who graded the pool: backend, model, embedding_model"
    )
    shared_with_copies: int = Field(
        default=0, description="grades a chunk got because a copy of its text was graded (testset.duplicates)"
    )
    pool_members: list[dict[str, Any]] = Field(
        default_factory=list,
        description="what each pooled run was (testset.json pool.members): name, and for a reference retriever "
        "its kind, ranking settings and models",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="compared runs the qrels may favour: runs that were pooled, or that rank with the pooling "
        "judge's model",
    )
    favoured: list[str] = Field(
        default_factory=list, description="the compared runs the warnings name, in the order warned"
    )
    unchecked: list[str] = Field(
        default_factory=list,
        description="compared runs whose ranker ragmetrics did not build (a team's pipeline, a run file), so "
        "whether the pool favours them could not be checked",
    )
    source_only: SourceOnlyCheck | None = Field(
        default=None, description="the retrieval runs compared again on source-only qrels (pooled test sets)"
    )
    utility: UtilityOrigin | None = Field(default=None, description="utility qrels: their utility.json")

    def describe(self) -> str:
        """One line: the share of relevant grades from each origin, and who graded the pool."""
        made = f"; {self.utility.describe()}" if self.utility is not None else ""
        if not self.relevant:
            return f"qrels of {self.source}: no relevant grades{made}"
        names = {"source": "the questions' source chunks", "judge": "the pooling judge",
                 "person": "people", "dataset": "the dataset (origin not recorded)",
                 "utility": "utility judgments"}  # fmt: skip
        parts = [
            f"{count / self.relevant:.0%} from {names.get(origin, origin)}"
            + (f" ({_judge_name(self.pool_judge)})" if origin == "judge" and self.pool_judge else "")
            for origin, count in sorted(self.by_origin.items(), key=lambda kv: -kv[1])
            if count
        ]
        pooled = f"; pooled runs: {', '.join(self.pool_runs)}" if self.pool_runs else ""
        copies = (
            f"; {self.shared_with_copies} grades shared with copies of a chunk"
            if self.shared_with_copies
            else ""
        )
        return f"qrels of {self.source}: {self.relevant} relevant grades, {', '.join(parts)}{pooled}{copies}{made}"


def _judge_name(judge: dict[str, str | None]) -> str:
    model = judge.get("model") or "?"
    return f"{judge.get('backend') or '?'}: {model}"


class DatasetSummary(_Model):
    """What the nightly job read: enough to tell whether two reports scored the same data."""

    source: str
    rows_used: int
    rows_skipped: list[SkippedRow] = Field(default_factory=list)
    columns: dict[str, str] = Field(default_factory=dict, description="our field -> the dataset's column")
    ignored_columns: list[str] = Field(default_factory=list)
    generated_ids: bool = False
    qrels_queries: int = 0
    run_queries: int = 0
    passages: int | None = None
    fingerprint: str | None = None
    qrels: QrelsProvenance | None = Field(
        default=None, description="where the relevance grades came from (None: the dataset has none)"
    )


class SampleText(_Model):
    """A sample's texts, kept so the HTML drill-down can show what was judged."""

    question: str
    answer: str | None = None
    reference: str | None = None
    turn: int | None = Field(default=None, description="its turn, when it is a turn of a conversation")
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, description="the tools the system called ({name, args}), for agents"
    )


class WorkFigures(_Model):
    """Requests, tokens, dollars and seconds of one night, estimated before it or counted after it."""

    pipeline_calls: int = 0
    generator_calls: int = 0
    judge_calls: int = Field(default=0, description="chat requests of the LLM judge")
    embedding_calls: int = Field(default=0, description="embedding requests of the LLM judge")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    cost_usd: float | None = Field(default=None, description="None: no price table in the config")
    cost_usd_batch: float | None = Field(
        default=None, description="the judge's chat requests at batch prices instead (judge.batch)"
    )
    judge_units: int = Field(default=0, description="(sample, metric) pairs judged")
    cached_verdicts: int = 0
    chunks_embedded: int | None = Field(
        default=None,
        description="chunks the reference retrievers sent to the embedding model (their persisted index had no "
        "vector for them: 0 on a night over chunks embedded before); None: not counted (no index_dir)",
    )
    seconds: dict[str, float] = Field(
        default_factory=dict,
        description="stage -> seconds: 'pipeline' and 'generator' (their calls only; ~0 when every output came "
        "from the cache), 'retriever index' (building the retrievers' indexes), 'retrieval' (their searches), "
        "'judge'",
    )

    @property
    def calls(self) -> int:
        return self.pipeline_calls + self.generator_calls + self.judge_calls + self.embedding_calls


class NightWork(_Model):
    """What the night was estimated to cost before it ran, what it cost, and how the estimate was made."""

    estimate: WorkFigures
    actual: WorkFigures | None = None
    assumptions: list[str] = Field(default_factory=list)


class AdaptiveDecision(_Model):
    """One decision of an adaptive night and where it stands (comparison.adaptive)."""

    kind: Literal["pair", "gate", "precision"]
    metric: str
    run: str
    other: str | None = None
    threshold: float = 0.0
    verdict: str = "unsettled"
    settled_at: int | None = Field(default=None, description="questions judged when it was settled")
    n: int = Field(default=0, description="questions it was last updated on")
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    signal_weight: float | None = Field(default=None, description="the free signal's weight (lambda) at the end")
    signal_correlation: float | None = Field(
        default=None, description="correlation of the judged values with the free signal's"
    )
    text: str = ""


class AdaptiveSummary(_Model):
    """What an adaptive night judged and decided, and what it spent against a full night."""

    questions: int = Field(description="questions the full night would judge")
    judged: int = Field(description="questions judged before every decision was settled (or the budget)")
    stopped: Literal["settled", "budget", "all_judged"]
    alpha: float
    batch_size: int
    seed: int
    decisions: list[AdaptiveDecision] = Field(default_factory=list)
    units: int = Field(default=0, description="(question, run, metric) scores judged")
    units_full: int = Field(default=0, description="(question, run, metric) scores a full night would judge")
    calls: int = 0
    calls_full_estimate: int | None = Field(
        default=None, description="judge requests a full night would make, at tonight's rate per question"
    )
    cost_usd: float | None = None
    not_judged: list[str] = Field(default_factory=list, description="question ids left unjudged")
    signal: str | None = Field(default=None, description="the free signal used as a control variate")
    target: Literal["population", "questions"] = Field(
        default="population", description="what pair and gate decisions are about"
    )


class FormattingCheck(_Model):
    """A judge metric re-scored on some of the night's answers with only their formatting changed
    (`judge.text.formatting` holds the rule): whether the metric moved with the formatting."""

    metric: str
    checked: int = Field(description="answers re-scored (all-or-nothing scores, a fixed sample per run)")
    changed: int = Field(description="answers whose score moved when only their formatting did")
    by_perturbation: dict[str, int] = Field(
        default_factory=dict, description="perturbation -> answers it moved"
    )
    depends: bool = Field(description="the metric depends on formatting on this night's data")
    text: str


class RetrieverSeconds(_Model):
    """Where a reference retriever's time went in a night: its index, built once, and each question's search.

    Apart from the pipeline's and generator's calls: building a dense index embeds the whole corpus, which is a
    cost of the night, not of any question; each question's search (and rerank) is part of its latency_s."""

    index_s: float = Field(description="seconds building the index (tokenising, embedding the passages)")
    search_s: dict[str, float] = Field(
        default_factory=dict, description="query id -> seconds its retrieval and rerank took"
    )
    embedded: int | None = Field(
        default=None, description="chunks it sent to the embedding model (None: not counted, no index_dir)"
    )
    reused: int | None = Field(
        default=None, description="chunk vectors or indexes it read from the persisted index instead"
    )


class NightlyRun(_Model):
    """The nightly job's own record: which config, what data, who judged, what failed, how long, the gate."""

    name: str
    dataset: DatasetSummary
    judge: JudgeInfo | None = None
    failures: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="run -> metric -> number of failed scores"
    )
    samples: dict[str, SampleText] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    regression: GateResult | None = None
    work: NightWork | None = Field(
        default=None, description="calls, tokens, cost and time: estimate and actual"
    )
    incomplete: list[str] = Field(
        default_factory=list,
        description="run/metric pairs whose failed share exceeded max_failure_rate: the night is incomplete",
    )
    adaptive: AdaptiveSummary | None = Field(
        default=None, description="an adaptive night's decisions, and what it judged and spent"
    )
    formatting: list[FormattingCheck] = Field(
        default_factory=list,
        description="judge metrics with a significant difference, re-scored with only the answers' formatting "
        "changed: a metric that moves is not declared different in the verdict",
    )
    retrievers: dict[str, RetrieverSeconds] = Field(
        default_factory=dict, description="retriever run -> its index building and per-question search seconds"
    )
    sufficiency: SufficiencySection | None = Field(
        default=None,
        description="the sufficient-context breakdown of each run with context_sufficiency, and of each pair",
    )


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
