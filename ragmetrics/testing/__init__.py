"""Quality gates as pytest assertions: `assert_no_regression` and `assert_at_least`.

A threshold on a point estimate flakes: 0.81 one night and 0.79 the next is noise, not a regression. These
assertions decide the way the nightly gate does. `assert_no_regression` fails only when a metric drops by more
than `max_drop` AND a paired test says the drop is significant; `assert_at_least` passes when the lower bound
of the mean's bootstrap CI clears the value, so a small sample cannot pass on luck.

Correction across the test run: with the pytest plugin active (installed with ragmetrics), the tests marked
`@pytest.mark.ragmetrics` are counted at collection; each gets alpha / T (Bonferroni over the T gating tests,
valid whatever order or worker runs them; every pytest-xdist worker collects the same tests), and the metrics
of one call are Holm-corrected within it. A gating test that is not marked counts as one more. The figures go
into the JUnit XML as properties (`--junitxml`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics._format import format_p
from ragmetrics.errors import InputError
from ragmetrics.schema import ComparisonSettings, GateResult, Report, RunResult

if TYPE_CHECKING:
    from ragmetrics.trust.labels import HumanLabels

__all__ = ["assert_at_least", "assert_no_regression", "family_size"]

Result = Any
"""A Report, one RunResult, a PipelineOutcome (its report), or a path to a report.json."""

WORST_SHOWN = 5


def _as_report(value: Result, run: str | None, role: str) -> Report:
    report: Report
    if isinstance(value, str | Path):
        from ragmetrics.nightly.gate import load_baseline

        report = load_baseline(Path(value))
    elif isinstance(value, Report):
        report = value
    elif isinstance(value, RunResult):
        report = Report(
            runs=[value],
            metrics=list(value.metrics),
            settings=ComparisonSettings(test="fisher", correction="holm"),
        )
    elif isinstance(getattr(value, "report", None), Report):
        report = value.report
    else:
        raise InputError(
            f"{role}: expected a Report, a RunResult, a pipeline outcome or a report.json path, got "
            f"{type(value).__name__}"
        )
    if run is None:
        return report
    runs = [r for r in report.runs if r.name == run]
    if not runs:
        raise InputError(f"{role}: no run {run!r}; runs: {', '.join(r.name for r in report.runs)}")
    return report.model_copy(update={"runs": runs})


MAX_FAILURE_RATE = 0.05
"""The nightly's default `max_failure_rate`: above it a run/metric's scores cannot stand for the data."""


def _failure_problems(report: Report, metrics: Sequence[str] | None, max_failure_rate: float) -> list[str]:
    """Run/metric pairs whose share of failed scores exceeds `max_failure_rate`: a broken night (a dead judge,
    a pipeline that failed most questions) is never a pass, in pytest as in `ragmetrics run` (exit 3)."""
    found = []
    for scored in report.runs:
        for metric in metrics or scored.metrics:
            if metric not in scored.metrics:
                continue
            failed = scored.failure_count(metric)
            total = failed + sum(1 for s in scored.per_query.values() if s.get(metric) is not None)
            if failed and total and failed / total > max_failure_rate:
                causes = sorted({f.cause for f in scored.failures if f.metric == metric})
                found.append(
                    f"{scored.name} / {metric}: {failed} of {total} scores failed ({', '.join(causes)}), more "
                    f"than max_failure_rate {max_failure_rate:g}"
                )
    return found


def _check_rate(max_failure_rate: float) -> None:
    if not (isinstance(max_failure_rate, int | float) and 0 <= max_failure_rate <= 1):
        raise InputError(f"max_failure_rate must be in [0, 1], got {max_failure_rate!r}")


def family_size() -> int:
    """How many gating tests share the run's alpha (1 outside pytest or without the plugin)."""
    from ragmetrics.testing import plugin

    return plugin.current_family()


def _threshold(max_drop: float | Mapping[str, float]) -> Callable[[str], float]:
    if isinstance(max_drop, Mapping):
        drops = dict(max_drop)
        for metric, value in drops.items():
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise InputError(f"max_drop[{metric!r}] must be a number >= 0, got {value!r}")
        return lambda metric: float(drops.get(metric, 0.0))
    if not (isinstance(max_drop, int | float) and math.isfinite(max_drop) and max_drop >= 0):
        raise InputError(f"max_drop must be a number >= 0, got {max_drop!r}")
    return lambda metric: float(max_drop)


def assert_no_regression(
    result: Result,
    baseline: Result,
    metrics: Sequence[str] | None = None,
    max_drop: float | Mapping[str, float] = 0.0,
    *,
    run: str | None = None,
    test: str = "fisher",
    alpha: float = 0.05,
    labels: HumanLabels | str | Path | None = None,
    use_ppi: bool = False,
    beyond_judge_noise: bool = False,
    on_change: str = "not_comparable",
    family: int | None = None,
    seed: int = 42,
    permutations: int = 10_000,
    max_failure_rate: float = MAX_FAILURE_RATE,
    clusters: Mapping[str, str] | None = None,
) -> GateResult:
    """Fail when a metric dropped by more than `max_drop` (one number or per metric) and significantly.

    Every metric named (default: every metric both share, latency and cost only when named) is compared over
    the queries both scored with the paired `test`, Holm-corrected across the metrics at alpha / family size.
    `use_ppi` with human `labels` replaces the test by the prediction-powered difference; `beyond_judge_noise`
    also requires a drop larger than the judge's own noise (judged with repeats). A judge or data change since
    the baseline fails the assertion as not comparable unless `on_change='compare'`. A run/metric of `result`
    with more than `max_failure_rate` of its scores failed fails the assertion too: the scores that remain
    cannot stand for the data. `clusters` (query id -> conversation id, e.g.
    `judge.conversation.conversation_clusters(samples)`) tests conversation means instead of turns; a
    night's report carries its own. Returns the gate's result.
    """
    from ragmetrics.nightly.gate import check_regressions

    __tracebackhide__ = True  # pytest shows the test's line and this message, not ragmetrics' own source
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    _check_rate(max_failure_rate)
    current, base = _as_report(result, run, "result"), _as_report(baseline, run, "baseline")
    if clusters is not None:
        current = current.model_copy(
            update={"metadata": current.metadata.model_copy(update={"clusters": dict(clusters)})}
        )
    size = family if family is not None else family_size()
    human = None
    if labels is not None:
        from ragmetrics.trust.labels import HumanLabels, load_labels

        human = labels if isinstance(labels, HumanLabels) else load_labels(Path(labels))
    gate = check_regressions(
        current,
        base,
        baseline_source=str(baseline) if isinstance(baseline, str | Path) else "baseline",
        thresholds=_threshold(max_drop),
        metrics=metrics,
        test=test,
        correction="holm",
        alpha=alpha / size,
        seed=seed,
        permutations=permutations,
        labels=human,
        use_ppi=use_ppi,
        beyond_judge_noise=beyond_judge_noise,
        explicit=set(metrics or ()),
        on_change=on_change,
    )
    from ragmetrics.testing import plugin

    for check in gate.checks:
        key = f"ragmetrics.{check.run}.{check.metric}"
        plugin.record_properties(
            {
                f"{key}.baseline": round(check.mean_baseline, 6),
                f"{key}.current": round(check.mean_current, 6),
                f"{key}.drop": round(check.drop, 6),
                f"{key}.p_corrected": round(check.p_corrected, 6),
                f"{key}.verdict": "regression" if check.regressed else "ok",
            }
        )
    unchecked = [m for m in (metrics or []) if not any(c.metric == m for c in gate.checks)]
    broken = _failure_problems(current, metrics or [c.metric for c in gate.checks], max_failure_rate)
    problems = []
    if broken:
        problems.append("too many failed scores")
    if gate.regressions:
        problems.append(f"{len(gate.regressions)} regression{'s' if len(gate.regressions) > 1 else ''}")
    if gate.not_comparable:
        problems.append("not comparable with the baseline")
    if unchecked:
        problems.append(f"not checked: {', '.join(unchecked)}")
    if not problems:
        return gate
    head = (
        f"ragmetrics: {'; '.join(problems)} (alpha {alpha:g} / {size} gating test{'s' if size > 1 else ''} = "
        f"{alpha / size:.4g}; {test} test, Holm across {len(gate.checks)} metric(s))"
    )
    lines = [head]
    for c in gate.regressions:
        lines.append(
            f"  {c.run} / {c.metric}: {c.mean_baseline:.4f} -> {c.mean_current:.4f} (drop {c.drop:.4f} > allowed "
            f"{c.threshold:.4f}; p = {format_p(c.p_value)}, corrected {format_p(c.p_corrected)}, n = {c.n})"
        )
        worst = ", ".join(f"{q.query_id} ({q.baseline:.2f} -> {q.current:.2f})" for q in c.worst_queries)
        lines.append(f"    worst queries: {worst}")
    lines += [f"  {c}" for c in gate.changes]
    lines += [f"  not comparable: {c}" for c in gate.not_comparable]
    if gate.not_comparable:
        lines.append("  (a judge or data change is not a quality change; on_change='compare' checks anyway)")
    lines += [f"  incomplete: {b}" for b in broken]
    lines += [f"  note: {n}" for n in gate.notes]
    raise AssertionError("\n".join(lines))


def assert_at_least(
    result: Result,
    metric: str,
    value: float,
    *,
    run: str | None = None,
    confidence: float = 0.95,
    family: int | None = None,
    samples: int = 10_000,
    seed: int = 42,
    max_failure_rate: float = MAX_FAILURE_RATE,
    clusters: Mapping[str, str] | None = None,
) -> tuple[float, float]:
    """Pass when the lower end of the mean's percentile-bootstrap CI is at least `value` (for a metric where
    lower is better, the upper end at most `value`). The CI is two-sided at `confidence`, widened by the run's
    family size (its tails at (1 - confidence) / 2 / family). More than `max_failure_rate` of the metric's scores
    failed fails it whatever the rest say. Turns of conversations (`clusters`, or the report's own) are
    resampled by conversation (a cluster bootstrap, `comparison.clusters`). Returns (mean, bound)."""
    from ragmetrics.comparison.bootstrap import bootstrap_means
    from ragmetrics.comparison.clusters import cluster_bootstrap_interval, cluster_index
    from ragmetrics.options import lower_is_better

    __tracebackhide__ = True  # pytest shows the test's line and this message, not ragmetrics' own source
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    _check_rate(max_failure_rate)
    report = _as_report(result, run, "result")
    if len(report.runs) != 1:
        raise InputError(f"result has {len(report.runs)} runs; name one with run=")
    scored = report.runs[0]
    if metric not in scored.metrics:
        raise InputError(f"run {scored.name!r} has no metric {metric!r}; it has {', '.join(scored.metrics)}")
    pairs = [(q, v) for q, s in scored.per_query.items() if (v := s.get(metric)) is not None]
    failed = scored.failure_count(metric)
    if not pairs:
        raise AssertionError(f"ragmetrics: {scored.name} / {metric}: no query has a score ({failed} failed)")
    broken = _failure_problems(report.model_copy(update={"runs": [scored]}), [metric], max_failure_rate)
    if broken:
        raise AssertionError(f"ragmetrics: incomplete: {broken[0]}")
    values = np.asarray([v for _, v in pairs], dtype=np.float64)
    size = family if family is not None else family_size()
    tail = (1 - confidence) / 2 / size
    lower_better = lower_is_better(metric)
    index = cluster_index(
        [q for q, _ in pairs], clusters if clusters is not None else report.metadata.clusters
    )
    if index is None:
        means = bootstrap_means(values, samples=samples, seed=seed)[:, 0]
        bound = float(np.quantile(means, 1 - tail if lower_better else tail))
    else:
        low, high = cluster_bootstrap_interval(
            values, index, samples=samples, seed=seed, confidence=1 - 2 * tail
        )
        bound = high if lower_better else low
    mean = float(values.mean())
    from ragmetrics.testing import plugin

    key = f"ragmetrics.{scored.name}.{metric}"
    plugin.record_properties(
        {f"{key}.mean": round(mean, 6), f"{key}.bound": round(bound, 6), f"{key}.n": len(pairs)}
    )
    ok = bound <= value if lower_better else bound >= value
    if ok:
        return mean, bound
    side = "upper" if lower_better else "lower"
    order = sorted(pairs, key=lambda p: (-p[1], p[0]) if lower_better else (p[1], p[0]))[:WORST_SHOWN]
    level = 1 - 2 * tail
    raise AssertionError(
        f"ragmetrics: {scored.name} / {metric}: mean {mean:.4f}, but the {side} end of its {level:.1%} CI is "
        f"{bound:.4f}, {'above' if lower_better else 'below'} {value:g} (n = {len(pairs)}"
        + (f", {failed} failed" if failed else "")
        + f"; family of {size})\n    worst queries: "
        + ", ".join(f"{q} ({v:.2f})" for q, v in order)
    )
