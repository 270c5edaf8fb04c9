"""The regression gate's verdict as a report stores it: every (run, metric) checked against the baseline,
the queries that drove a drop, what was not checked and why, and the verdict's status and text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragmetrics._format import format_p
from ragmetrics.schema_base import Interval, _Model


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
