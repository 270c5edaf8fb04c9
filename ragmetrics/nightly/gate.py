"""The regression gate: did a metric drop for real since the baseline report?

A (run, metric) regresses when, over the queries both reports scored, the mean drops by more than its allowed
absolute drop AND a paired test (the config's test) says the drop is significant after the config's correction
across every (run, metric) checked. Requiring both keeps the gate quiet on noise and on tiny but consistent
drops nobody cares about. Queries with a failed score (None) on either side are left out of that pair; a
pair the test cannot assess (a t-test on one shared query) cannot be shown significant and is noted, not checked.

Two switches make judge metrics answer to more than the judge: `use_ppi` replaces the paired test by the
PPI++ estimate of the difference corrected by human labels (a drop counts when that estimate drops by more
than the threshold and its CI excludes 0), and `beyond_judge_noise` requires a drop larger than the noise the
judge itself adds (measured with `judge.repeats`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from ragmetrics._textfile import read_utf8
from ragmetrics.comparison.clusters import cluster_index, cluster_means
from ragmetrics.comparison.stats import paired_p_value
from ragmetrics.errors import InputError
from ragmetrics.judge.cascade.run import abstained_count
from ragmetrics.nightly.provenance import Changes, changes_since
from ragmetrics.options import OPERATIONAL_METRICS, TESTS, is_descriptive, is_significant, lower_is_better
from ragmetrics.schema import (
    AdaptiveDecision,
    GateResult,
    Interval,
    MetricCheck,
    QueryDrop,
    Report,
    RunResult,
)
from ragmetrics.trust.labels import HumanLabels

WORST_QUERIES = 5


def load_baseline(path: Path, *, what: str = "baseline report") -> Report:
    """An earlier report.json; any problem is an InputError naming the file (and `what` it was read as)."""
    if not path.exists():
        if path.is_symlink():
            raise InputError(
                f"{what}: a symbolic link to {os.readlink(path)}, which does not exist (a pruned night? output.keep "
                "keeps the night a baseline link names only when the link is given as baseline.path or made with "
                "ragmetrics bless)",
                source=str(path),
            )
        raise InputError(f"{what} not found", source=str(path))
    text = read_utf8(path, prefix=f"{what}: ")
    try:
        return Report.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(
            f"not a ragmetrics report.json ({exc.error_count()} problems; first: {where}: {first['msg']})",
            source=str(path),
        ) from None


def check_regressions(
    current: Report,
    baseline: Report,
    *,
    baseline_source: str,
    thresholds: Callable[[str], float],
    metrics: Sequence[str] | None = None,
    test: str = "fisher",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 42,
    permutations: int = 10_000,
    labels: HumanLabels | None = None,
    use_ppi: bool = False,
    beyond_judge_noise: bool = False,
    incomplete: Sequence[tuple[str, str, str]] = (),
    explicit: set[str] | None = None,
    on_change: str = "not_comparable",
    below_floor: Mapping[tuple[str, str], str] | None = None,
    anytime: Mapping[tuple[str, str], AdaptiveDecision] | None = None,
) -> GateResult:
    """Compare every run/metric the two reports share; see the module docstring for the rule.

    `incomplete` lists (run, metric, description) pairs whose scores failed too often tonight: they are
    reported as incomplete, not checked, and never read as a data mismatch. Operational metrics (latency,
    tokens, cost: lower is better) are checked only when named in `explicit` (baseline.metrics or
    max_drop_per_metric), since a machine's load moves them from night to night. What changed since the baseline
    (data, judge, prompts: `provenance.changes_since`) is reported first; with `on_change` 'not_comparable' the
    pairs it touches are listed as not comparable instead of checked. `below_floor` maps (run, metric) pairs
    whose judge agrees with the human labels less than trust.min_agreement asks to why: they are listed as
    untrusted, neither passed nor failed. `anytime` maps the (run, metric) pairs an adaptive night decided to
    their decision: judging stopped when it was settled, so a fixed-sample test on the questions judged would not
    hold its error rate; the anytime-valid interval decides (dropped: regressed; held or unsettled: not)."""
    from ragmetrics.comparison.corrections import adjust

    if test not in TESTS:  # checked up front: a per-check InputError below only means "cannot assess"
        raise InputError(f"unknown test {test!r}; tests: {', '.join(TESTS)}")
    gate = GateResult(baseline=baseline_source, test=test, correction=correction, alpha=alpha)
    changes = changes_since(baseline, current)
    gate.changes = changes.lines
    refuse = on_change == "not_comparable"
    old_print, new_print = baseline.metadata.dataset_fingerprint, current.metadata.dataset_fingerprint
    if old_print and new_print and old_print != new_print and not (changes.data_changed and refuse):
        gate.notes.append(
            "the baseline was scored on different data (dataset fingerprints differ); "
            "each check pairs only the queries both reports scored"
        )
    gate.baseline_means = {r.name: dict(r.aggregate) for r in baseline.runs}
    gate.incomplete = [text for _, _, text in incomplete]
    gate.skipped_pairs = {GateResult.pair_key(run, metric): "incomplete" for run, metric, _ in incomplete}
    pending = _pairs_to_check(
        gate, current, baseline, changes, metrics=metrics, explicit=explicit or set(), refuse=refuse,
        skipped={(run, metric) for run, metric, _ in incomplete}, below_floor=below_floor or {},
    )  # fmt: skip
    if not pending and (gate.incomplete or gate.not_comparable or gate.untrusted):
        return gate
    if not pending:
        raise InputError(
            "the baseline shares no scored run, metric and query with this report; "
            "is it a report of the same dataset and runs?",
            source=baseline_source,
        )
    tested = _tested_pairs(gate, pending, current, test=test, seed=seed, permutations=permutations)
    corrected = adjust([pair.p for pair in tested], correction)
    for pair, p_adj in zip(tested, corrected, strict=True):
        check = _check(pair, float(p_adj), thresholds(pair.metric), alpha=alpha, labels=labels if use_ppi else None,
                       beyond_judge_noise=beyond_judge_noise)  # fmt: skip
        decision = (anytime or {}).get((pair.run.name, pair.metric))
        if decision is not None:
            check.regressed = decision.verdict == "dropped"
            check.significant = decision.low is not None and decision.high is not None and (
                decision.low > 0 or decision.high < 0
            )
            gate.notes.append(f"{pair.run.name} / {pair.metric}: decided by the adaptive night: {decision.text}")
        gate.checks.append(check)
    return gate


@dataclass(frozen=True)
class _Pair:
    """A (run, metric) to check: tonight's and the baseline's results, the queries both scored, and (once
    tested) the signed differences (negative is worse) and the paired test's p-value."""

    run: RunResult
    old: RunResult
    metric: str
    shared: list[str]
    diffs: list[float] = field(default_factory=list)
    p: float = 1.0


def _pairs_to_check(
    gate: GateResult,
    current: Report,
    baseline: Report,
    changes: Changes,
    *,
    metrics: Sequence[str] | None,
    explicit: set[str],
    refuse: bool,
    skipped: set[tuple[str, str]],
    below_floor: Mapping[tuple[str, str], str],
) -> list[_Pair]:
    """The (run, metric) pairs the gate checks, with the queries both reports scored; every pair left out is
    recorded on `gate` with why (incomplete, untrusted, not comparable, not in the baseline, nothing shared)."""
    base_runs = {r.name: r for r in baseline.runs}
    pending: list[_Pair] = []
    for run in current.runs:
        old = base_runs.get(run.name)
        if old is None:
            gate.notes.append(f"run {run.name!r} is not in the baseline (runs there: {', '.join(base_runs)})")
            continue
        for metric in list(metrics) if metrics is not None else run.metrics:
            if metric not in run.metrics or (run.name, metric) in skipped:
                continue
            # Costs and descriptive metrics (answer length) are recorded and compared but gate only when named;
            # a quality metric where less is better (hallucination) gates by default like any other.
            by_default = metric not in OPERATIONAL_METRICS and not is_descriptive(metric)
            if not by_default and metrics is None and metric not in explicit:
                continue
            if metric not in old.metrics:
                gate.notes.append(f"{run.name} / {metric}: not in the baseline, not checked")
                continue
            floor = below_floor.get((run.name, metric))
            if floor is not None:
                gate.untrusted.append(f"{run.name} / {metric}: {floor}")
                gate.skipped_pairs[GateResult.pair_key(run.name, metric)] = "untrusted"
                continue
            why = changes.why_not_comparable(run.name, metric)
            if why is not None and refuse:
                gate.not_comparable.append(f"{run.name} / {metric}: {why}")
                gate.skipped_pairs[GateResult.pair_key(run.name, metric)] = "not_comparable"
                continue
            if why is not None:
                gate.notes.append(f"{run.name} / {metric}: checked although {why} (baseline.on_change: compare)")
            shared = [q for q in run.per_query
                      if run.per_query[q].get(metric) is not None and old.per_query.get(q, {}).get(metric) is not None]  # fmt: skip
            abstained = (abstained_count(run, metric), abstained_count(old, metric))
            if any(abstained):  # a cascade's abstentions are never scores: the pair reads the decided queries alone
                gate.notes.append(f"{run.name} / {metric}: read on the {len(shared)} queries decided in both "
                                  f"reports; the cascade abstained on {abstained[0]} tonight, {abstained[1]} "
                                  "in the baseline")  # fmt: skip
            if not shared:
                gate.notes.append(f"{run.name} / {metric}: no query scored in both reports, not checked")
                continue
            pending.append(_Pair(run, old, metric, shared))
    for name in base_runs:
        if all(r.name != name for r in current.runs):
            gate.notes.append(f"baseline run {name!r} is absent from this report")
    return pending


def _tested_pairs(
    gate: GateResult, pending: Sequence[_Pair], current: Report, *, test: str, seed: int, permutations: int
) -> list[_Pair]:
    """Each pair with its signed differences and paired p-value (over conversations where the report clusters
    queries); a pair the test cannot assess is noted on `gate` and left out."""
    tested: list[_Pair] = []
    for pair in pending:
        # Signed so that negative is worse for every metric (for latency and cost, a rise is the drop).
        sign = -1.0 if lower_is_better(pair.metric) else 1.0
        diffs = [sign * (_value(pair.run, q, pair.metric) - _value(pair.old, q, pair.metric)) for q in pair.shared]
        index = cluster_index(pair.shared, current.metadata.clusters)
        values = diffs if index is None else list(cluster_means(np.asarray(diffs), index))
        try:
            p = paired_p_value(test, values, seed=seed, permutations=permutations)
        except InputError as exc:
            # Without a p-value no drop can be shown significant: say so instead of failing the whole run.
            gate.notes.append(f"{pair.run.name} / {pair.metric}: not checked: {exc.what}")
            continue
        tested.append(replace(pair, diffs=diffs, p=p))
    return tested


def _check(
    pair: _Pair,
    p_adj: float,
    threshold: float,
    *,
    alpha: float,
    labels: HumanLabels | None,
    beyond_judge_noise: bool,
) -> MetricCheck:
    """The verdict on one tested pair (module docstring): the drop, its significance (or the PPI++ difference's
    interval with `labels`), the judge-noise margin, and the worst queries."""
    run, old, metric, shared, diffs = pair.run, pair.old, pair.metric, pair.shared, pair.diffs
    mean_old = math.fsum(_value(old, q, metric) for q in shared) / len(shared)
    mean_cur = math.fsum(_value(run, q, metric) for q in shared) / len(shared)
    drop = mean_old - mean_cur if not lower_is_better(metric) else mean_cur - mean_old
    significant = is_significant(p_adj, alpha)
    regressed = drop > threshold and significant
    ppi_diff = _ppi_diff(old, run, metric, shared, labels, 1 - alpha) if labels else None
    if ppi_diff is not None and ppi_diff.estimate is not None and ppi_diff.high is not None:
        significant = ppi_diff.high < 0 or (ppi_diff.low is not None and ppi_diff.low > 0)
        regressed = -ppi_diff.estimate > threshold and ppi_diff.high < 0
    margin = _noise_margin(run, metric)
    if beyond_judge_noise and margin is not None:
        regressed = regressed and drop > margin
    order = sorted(range(len(shared)), key=lambda i: (diffs[i], shared[i]))
    worst = [
        QueryDrop(query_id=shared[i], baseline=_value(old, shared[i], metric), current=_value(run, shared[i], metric),
                  diff=_value(run, shared[i], metric) - _value(old, shared[i], metric))
        for i in order[:WORST_QUERIES]
        if diffs[i] < 0
    ]  # fmt: skip
    return MetricCheck(
        run=run.name, metric=metric, n=len(shared), mean_baseline=mean_old, mean_current=mean_cur, drop=drop,
        threshold=threshold, p_value=pair.p, p_corrected=p_adj, significant=significant, regressed=regressed,
        worst_queries=worst, noise_margin=margin, ppi_diff=ppi_diff,
    )  # fmt: skip


def _value(result: RunResult, query_id: str, metric: str) -> float:
    value = result.per_query[query_id][metric]
    assert value is not None
    return value


def _noise_margin(run: RunResult, metric: str) -> float | None:
    """The half-width judge noise adds to `metric`'s CI in `run` (None without repeats)."""
    if run.trust is None:
        return None
    for stats in run.trust.noise:
        if stats.metric == metric and stats.repeats > 1:
            with_noise, without = stats.ci_with_noise, stats.ci_samples
            if None in (with_noise.low, with_noise.high, without.low, without.high):
                return None
            half_with = (with_noise.high - with_noise.low) / 2  # type: ignore[operator]
            half_without = (without.high - without.low) / 2  # type: ignore[operator]
            return math.sqrt(max(half_with**2 - half_without**2, 0.0))
    return None


def _ppi_diff(
    old: RunResult, run: RunResult, metric: str, shared: list[str], labels: HumanLabels, confidence: float
) -> Interval | None:
    from ragmetrics.trust import ppi_difference

    pick = set(shared)
    base = old.model_copy(update={"per_query": {q: s for q, s in old.per_query.items() if q in pick}})
    cur = run.model_copy(update={"per_query": {q: s for q, s in run.per_query.items() if q in pick}})
    pair = ppi_difference(base, cur, labels, metric, confidence=confidence)
    if pair is None:
        return None
    return pair.estimate.ppi_plus or pair.estimate.ppi
