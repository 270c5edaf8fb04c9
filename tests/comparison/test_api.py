"""compare_results: pairs, alignment, failures, corrections, settings and errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss

from ragmetrics.comparison.corrections import holm
from ragmetrics.comparison.pairs import compare_results
from ragmetrics.errors import InputError
from ragmetrics.schema import Report, RunResult

from .conftest import make_result, random_results

FAST = {"permutations": 2000, "bootstrap_samples": 1000}


def _column(result: RunResult, metric: str) -> np.ndarray:
    return np.array([s[metric] for s in result.per_query.values()], dtype=float)


def test_every_pair_with_the_earlier_run_as_baseline(three_runs: list[RunResult]) -> None:
    report = compare_results(three_runs, ["ndcg@10", "map"], **FAST)
    pairs = [(c.metric, c.baseline, c.candidate) for c in report.comparisons]
    assert pairs == [
        (m, a, b)
        for m in ["ndcg@10", "map"]
        for a, b in [("run0", "run1"), ("run0", "run2"), ("run1", "run2")]
    ]
    assert report.metadata.query_count == 60 and report.metadata.missing_queries == {}


def test_numbers_match_direct_computation(three_runs: list[RunResult]) -> None:
    report = compare_results(three_runs, ["map"], test="t", correction="holm", **FAST)
    raw = []
    for c in report.comparisons:
        a, b = _column(report.run(c.baseline), "map"), _column(report.run(c.candidate), "map")
        d = b - a
        assert c.n == 60
        assert c.mean_diff == pytest.approx(d.mean(), abs=1e-15)
        assert c.mean_candidate - c.mean_baseline == pytest.approx(c.mean_diff, abs=1e-12)
        assert c.p_value == pytest.approx(ss.ttest_rel(b, a).pvalue, abs=1e-12)
        assert c.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
        assert (c.wins, c.ties, c.losses) == (int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()))
        assert c.ci_low < c.mean_diff < c.ci_high
        raw.append(c.p_value)
    assert [c.p_corrected for c in report.comparisons] == pytest.approx(holm(raw))
    assert [c.significant for c in report.comparisons] == [c.p_corrected <= 0.05 for c in report.comparisons]
    # run0 is 0.15 below both others
    assert [c.significant for c in report.comparisons][:2] == [True, True]


def test_correction_families_per_metric_or_all(three_runs: list[RunResult]) -> None:
    per_metric = compare_results(three_runs, ["ndcg@10", "map"], test="t", correction="bonferroni", **FAST)
    together = compare_results(
        three_runs, ["ndcg@10", "map"], test="t", correction="bonferroni", correction_scope="all", **FAST
    )
    for a, b in zip(per_metric.comparisons, together.comparisons, strict=True):
        assert a.p_corrected == pytest.approx(min(1.0, 3 * a.p_value))
        assert b.p_corrected == pytest.approx(min(1.0, 6 * b.p_value))
    none = compare_results(three_runs, ["map"], test="sign", correction="none", **FAST)
    assert all(c.p_corrected == c.p_value for c in none.comparisons)


def test_descriptive_statistics(three_runs: list[RunResult]) -> None:
    report = compare_results(three_runs, ["map"], **FAST)
    values = _column(three_runs[1], "map")
    stats = report.descriptive["run1"]["map"]
    assert stats.count == 60 and stats.failures == 0
    assert stats.mean == pytest.approx(values.mean())
    assert stats.std == pytest.approx(values.std(ddof=1))
    assert (stats.min, stats.max) == (values.min(), values.max())
    assert (stats.q1, stats.median, stats.q3) == pytest.approx(tuple(np.quantile(values, [0.25, 0.5, 0.75])))


def test_missing_queries_score_zero_and_are_reported() -> None:
    metrics = ["ndcg@10"]
    a = make_result("a", {"q1": {"ndcg@10": 0.5}, "q2": {"ndcg@10": 0.4}, "q3": {"ndcg@10": 0.3}}, metrics)
    b = make_result("b", {"q1": {"ndcg@10": 0.7}, "q4": {"ndcg@10": 0.9}}, metrics)
    report = compare_results([a, b], test="t", **FAST)
    assert report.metadata.query_count == 4
    assert report.metadata.missing_queries == {"a": ["q4"], "b": ["q2", "q3"]}
    (c,) = report.comparisons
    # differences over q1..q4: 0.2, -0.4, -0.3, 0.9
    assert c.n == 4
    assert c.mean_diff == pytest.approx((0.2 - 0.4 - 0.3 + 0.9) / 4)
    assert report.descriptive["b"]["ndcg@10"].mean == pytest.approx(1.6 / 4)
    inter = compare_results([a, b], test="sign", align="intersection", bootstrap_samples=100)
    assert inter.metadata.query_count == 1 and inter.comparisons[0].n == 1


def test_missing_queries_declared_by_evaluate_are_kept() -> None:
    metrics = ["map"]
    a = make_result("a", {"q1": {"map": 0.5}, "q2": {"map": 0.0}}, metrics, missing=["q2"])
    b = make_result("b", {"q1": {"map": 0.7}, "q2": {"map": 0.2}}, metrics)
    report = compare_results([a, b], **FAST)
    assert report.metadata.missing_queries == {"a": ["q2"]}


def test_failures_pair_only_where_both_have_a_value() -> None:
    metrics = ["context_recall"]
    rng = np.random.default_rng(3)
    va, vb = rng.random(30), rng.random(30)
    a = make_result(
        "a", {f"q{i}": {"context_recall": None if i < 4 else float(va[i])} for i in range(30)}, metrics
    )
    b = make_result(
        "b", {f"q{i}": {"context_recall": None if i in (2, 10) else float(vb[i])} for i in range(30)}, metrics
    )
    report = compare_results([a, b], test="wilcoxon", **FAST)
    (c,) = report.comparisons
    keep = np.array([i >= 4 and i != 10 for i in range(30)])
    assert c.n == 25
    assert c.mean_diff == pytest.approx(float((vb - va)[keep].mean()))
    assert c.p_value == pytest.approx(ss.wilcoxon(vb[keep], va[keep]).pvalue, abs=1e-12)
    assert c.ci_low < c.mean_diff < c.ci_high
    assert report.descriptive["a"]["context_recall"].failures == 4
    assert report.descriptive["b"]["context_recall"].count == 28
    assert any("both runs scored" in n for n in report.metadata.notes)


def test_fisher_through_the_api_is_reproducible(three_runs: list[RunResult]) -> None:
    first = compare_results(three_runs, ["map"], test="fisher", seed=5, **FAST)
    again = compare_results(three_runs, ["map"], test="fisher", seed=5, **FAST)
    assert first.comparisons == again.comparisons
    assert first.settings.permutations == 2000 and first.settings.seed == 5
    # a pair's p does not depend on which other runs are compared
    pair_only = compare_results(three_runs[1:], ["map"], test="fisher", seed=5, **FAST)
    assert pair_only.comparisons[0].p_value == first.comparisons[2].p_value
    assert pair_only.comparisons[0].ci_low == pytest.approx(first.comparisons[2].ci_low, abs=1e-12)


def test_report_round_trips_through_json(three_runs: list[RunResult]) -> None:
    report = compare_results(three_runs, None, test="sign", **FAST)
    assert report.metrics == ["ndcg@10", "map"]
    assert Report.model_validate_json(report.model_dump_json()) == report


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"test": "mannwhitney"}, "unknown test 'mannwhitney'; choose one of fisher, t, wilcoxon, sign"),
        ({"correction": "fdr"}, "unknown correction 'fdr'; choose one of holm, bonferroni, none"),
        ({"alpha": 0.0}, "alpha"),
        ({"permutations": 0}, "permutations"),
        ({"correction_scope": "run"}, "correction scope"),
    ],
)
def test_bad_settings(three_runs: list[RunResult], kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        compare_results(three_runs, ["map"], **kwargs)  # type: ignore[arg-type]


def test_bad_runs(three_runs: list[RunResult]) -> None:
    with pytest.raises(InputError, match="at least two runs, got 1"):
        compare_results(three_runs[:1], ["map"])
    with pytest.raises(InputError, match="repeated: \\['run0'\\]"):
        compare_results([three_runs[0], three_runs[0]], ["map"])
    with pytest.raises(InputError, match="run 'run0' has no scores for \\['mrr'\\]"):
        compare_results(three_runs, ["mrr"])
    broken = make_result("x", {"q1": {"map": 0.1}, "q2": {}}, ["map"])
    other = make_result("y", {"q1": {"map": 0.1}, "q2": {"map": 0.3}}, ["map"])
    with pytest.raises(InputError, match="run 'x', query 'q2' has no entry for 'map'"):
        compare_results([broken, other], ["map"])
    all_failed = make_result("z", {"q1": {"map": None}, "q2": {"map": None}}, ["map"])
    with pytest.raises(InputError, match="no query where both runs have a score"):
        compare_results([all_failed, other], ["map"])


def test_t_test_needs_two_pairs_names_the_pair() -> None:
    a = make_result("a", {"q1": {"m": 0.1}}, ["m"])
    b = make_result("b", {"q1": {"m": 0.3}}, ["m"])
    with pytest.raises(InputError, match="b vs a on m: t-test needs at least 2"):
        compare_results([a, b], test="t")


def test_many_runs_many_metrics_shapes() -> None:
    runs = random_results(5, 200, ["a", "b", "c"], [0, 0.01, 0.02, 0.03, 0.2], seed=9)
    report = compare_results(runs, test="fisher", **FAST)
    assert len(report.comparisons) == 10 * 3
    assert set(report.descriptive) == {f"run{i}" for i in range(5)}


@pytest.mark.parametrize("test", ["fisher", "t", "wilcoxon", "sign"])
def test_swapping_the_runs_mirrors_the_comparison(three_runs: list[RunResult], test: str) -> None:
    forward = compare_results(three_runs[:2], ["map"], test=test, **FAST).comparisons[0]
    backward = compare_results(three_runs[1::-1], ["map"], test=test, **FAST).comparisons[0]
    assert backward.baseline == forward.candidate
    assert backward.mean_diff == pytest.approx(-forward.mean_diff, abs=1e-15)
    assert backward.p_value == pytest.approx(forward.p_value, abs=1e-12)
    assert (backward.wins, backward.losses) == (forward.losses, forward.wins)
    assert backward.effect_size == pytest.approx(-forward.effect_size)
    assert (backward.ci_low, backward.ci_high) == pytest.approx(
        (-forward.ci_high, -forward.ci_low), abs=1e-12
    )


def test_default_metrics_of_a_hand_built_result_come_from_its_per_query_scores() -> None:
    scores = {"q1": {"m": 0.1, "k": 0.5}, "q2": {"m": 0.4, "k": 0.5}}
    bare = [RunResult(name=name, per_query=scores) for name in ("a", "b")]
    report = compare_results(bare, test="sign", bootstrap_samples=20)
    assert report.metrics == ["m", "k"]
