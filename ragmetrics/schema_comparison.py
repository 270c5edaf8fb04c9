"""Runs compared, as a report stores it: descriptive statistics, paired comparisons, what each pair's
questions can detect, Tukey's all-pairs comparison, systems over several seeds, side-by-side preferences, and
the settings that say how to read them (computed by `ragmetrics.comparison`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ragmetrics.options import Align, Correction, CorrectionScope, Test
from ragmetrics.schema_base import Interval, _Model


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
    share_b: Interval | None = Field(
        default=None, description="b's share of the untied questions, exact interval"
    )
    p_value: float | None = Field(default=None, description="exact two-sided sign test")
    log_odds_b: Interval | None = Field(
        default=None, description="Bradley-Terry log(p_b / p_a), bootstrap interval"
    )
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
        default=None,
        description="judge only: share of questions where its net preference equals the people's",
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
