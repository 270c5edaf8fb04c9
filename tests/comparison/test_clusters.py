"""Turns of one conversation are clustered in comparisons, intervals, power and the gate (issue 42): the
simulation here shows why (turn-level 95 % intervals cover the true difference far less often than 95 % when
conversations differ; clustered ones keep ~95 %), and the unit tests pin the arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.comparison.clusters import cluster_bootstrap_interval, cluster_index, cluster_means
from ragmetrics.comparison.pairs import compare_results
from ragmetrics.comparison.report_power import report_power
from ragmetrics.comparison.stats import paired_t_test
from ragmetrics.schema import RunMetadata, RunResult


def _run(name: str, values: dict[str, float]) -> RunResult:
    result = RunResult(name=name, per_query={q: {"m": v} for q, v in values.items()},
                       metadata=RunMetadata(kind="judge", metrics=["m"], num_queries=len(values)))  # fmt: skip
    result.recompute_aggregate()
    return result


def _conversations(rng: np.random.Generator, conversations: int, turns: int, between: float, within: float):  # type: ignore[no-untyped-def]
    """Two systems' scores on turns whose differences share a per-conversation effect (true mean 0)."""
    base, cand, clusters = {}, {}, {}
    for c in range(conversations):
        shift = rng.normal(0.0, between)
        for t in range(turns):
            qid = f"c{c}-t{t}"
            base[qid] = float(rng.normal(0.5, 0.2))
            cand[qid] = base[qid] + shift + float(rng.normal(0.0, within))
            clusters[qid] = f"c{c}"
    return base, cand, clusters


def test_cluster_index_and_means_by_hand() -> None:
    ids = ["a1", "a2", "b1", "solo", "a3"]
    index = cluster_index(ids, {"a1": "A", "a2": "A", "a3": "A", "b1": "B"})
    assert index is not None and index.tolist() == [0, 0, 1, 2, 0]
    assert cluster_means(np.array([1.0, 2.0, 10.0, 5.0, 3.0]), index).tolist() == [2.0, 10.0, 5.0]
    assert cluster_index(ids, None) is None
    assert cluster_index(["a", "b"], {"a": "A", "b": "B"}) is None  # no cluster of two: nothing changes


def test_a_clustered_comparison_tests_conversation_means() -> None:
    base = {"a1": 0.2, "a2": 0.4, "a3": 0.3, "b1": 0.5, "b2": 0.5, "c1": 0.1}
    cand = {"a1": 0.5, "a2": 0.6, "a3": 0.9, "b1": 0.4, "b2": 0.7, "c1": 0.6}
    clusters = {q: q[0] for q in base}
    report = compare_results([_run("x", base), _run("y", cand)], test="t", clusters=clusters,
                             bootstrap_samples=2000)  # fmt: skip
    (pair,) = report.comparisons
    by_conversation = [np.mean([0.3, 0.2, 0.6]), np.mean([-0.1, 0.2]), 0.5]
    assert pair.clusters == 3 and pair.n == 6
    assert pair.p_value == pytest.approx(paired_t_test(by_conversation))
    assert pair.mean_diff == pytest.approx(np.mean([cand[q] - base[q] for q in base]))  # still over turns
    assert report.metadata.clusters == clusters
    assert any("clustered by conversation (3 conversations, 6 turns)" in n for n in report.metadata.notes)
    (power,) = report_power(report)
    assert power.n == 3  # conversations, not turns
    unclustered = compare_results([_run("x", base), _run("y", cand)], test="t")
    assert unclustered.comparisons[0].clusters is None and unclustered.metadata.clusters is None


def test_without_conversations_nothing_changes() -> None:
    rng = np.random.default_rng(3)
    base = {f"q{i}": float(rng.random()) for i in range(30)}
    cand = {q: v + float(rng.normal(0.05, 0.1)) for q, v in base.items()}
    runs = [_run("x", base), _run("y", cand)]
    plain = compare_results(runs)
    own = compare_results(runs, clusters={q: q for q in base})  # every turn its own conversation
    assert plain.comparisons == own.comparisons


def test_the_cluster_bootstrap_matches_the_resampling_it_describes() -> None:
    values = np.array([1.0, 3.0, 10.0, 0.0, 2.0])
    index = np.array([0, 0, 1, 2, 2])
    low, high = cluster_bootstrap_interval(values, index, samples=20_000, seed=1, confidence=0.95)
    # Cluster sums (4, 10, 2), sizes (2, 1, 2): the resampled means range from 1 (all the third) to 10.
    assert 1.0 <= low < values.mean() < high <= 10.0


def test_clustered_intervals_keep_their_coverage_where_turn_level_ones_do_not() -> None:
    """200 simulated nights: 30 conversations x 6 turns, a per-conversation effect (sd 0.15) on top of
    turn noise (sd 0.1), true difference 0."""
    rng = np.random.default_rng(2026)
    covered = {"clustered": 0, "turns": 0}
    rejected = {"clustered": 0, "turns": 0}
    trials = 200
    for trial in range(trials):
        base, cand, clusters = _conversations(rng, 30, 6, between=0.15, within=0.1)
        runs = [_run("x", base), _run("y", cand)]
        for kind, mapping in (("clustered", clusters), ("turns", None)):
            (pair,) = compare_results(runs, test="t", clusters=mapping, bootstrap_samples=1000,
                                      seed=trial).comparisons  # fmt: skip
            covered[kind] += pair.ci_low <= 0.0 <= pair.ci_high
            rejected[kind] += pair.p_value <= 0.05
    coverage = {k: v / trials for k, v in covered.items()}
    false_alarms = {k: v / trials for k, v in rejected.items()}
    assert 0.90 <= coverage["clustered"] <= 0.99, coverage
    assert coverage["turns"] <= 0.75, coverage
    assert false_alarms["clustered"] <= 0.10 and false_alarms["turns"] >= 0.25, false_alarms


def test_the_pytest_assertions_count_conversations_when_told() -> None:
    """One conversation of four got worse on all ten of its turns: ten turns look like strong evidence, one
    conversation of four cannot be (the smallest two-sided p of four signs is 1/8)."""
    from ragmetrics.testing import assert_at_least, assert_no_regression

    rng = np.random.default_rng(5)
    base = {f"c{c}-t{t}": float(rng.uniform(0.6, 0.9)) for c in range(4) for t in range(10)}
    cur = {q: v - (0.1 if q.startswith("c0-") else 0.0) for q, v in base.items()}
    clusters = {q: q.split("-")[0] for q in base}
    with pytest.raises(AssertionError, match="regress"):
        assert_no_regression(_run("sys", cur), _run("sys", base), ["m"])
    gate = assert_no_regression(_run("sys", cur), _run("sys", base), ["m"], clusters=clusters)
    assert not gate.checks[0].significant and gate.checks[0].p_value >= 0.125
    _, turn_bound = assert_at_least(_run("sys", cur), "m", 0.0)
    _, conversation_bound = assert_at_least(_run("sys", cur), "m", 0.0, clusters=clusters)
    assert conversation_bound < turn_bound  # fewer independent units: a wider interval
