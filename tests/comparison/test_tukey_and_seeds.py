"""Tukey's HSD (equal to scipy's one-way version, and the blocked version restated by hand) and comparisons of
systems run with several seeds (a paired test over seed-averaged queries, a hierarchical bootstrap)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmetrics.comparison.seeds import compare_seed_groups, hierarchical_bootstrap
from ragmetrics.comparison.stats import paired_p_value
from ragmetrics.comparison.tukey import tukey_hsd, tukey_pairs
from ragmetrics.errors import InputError
from ragmetrics.schema import RunMetadata, RunResult


def _result(name: str, values: dict[str, float | None], metric: str = "m") -> RunResult:
    result = RunResult(
        name=name,
        per_query={q: {metric: v} for q, v in values.items()},
        metadata=RunMetadata(metrics=[metric]),
    )
    result.recompute_aggregate()
    return result


def test_unblocked_equals_scipy_tukey_hsd() -> None:
    from scipy.stats import tukey_hsd as scipy_tukey

    rng = np.random.default_rng(3)
    for k in (2, 3, 5):
        x = rng.normal(size=(30, k)) + np.linspace(0, 0.6, k)
        p, means, half, df = tukey_hsd(x, blocked=False)
        theirs = scipy_tukey(*x.T)
        ci = theirs.confidence_interval(0.95)
        assert df == k * 29
        for i in range(k):
            for j in range(k):
                if i != j:
                    assert p[i, j] == pytest.approx(theirs.pvalue[i, j], abs=1e-9)
                    # scipy's interval is of mean_i - mean_j; ours of the difference, same half-width.
                    assert ci.high[i, j] - ci.low[i, j] == pytest.approx(2 * half, rel=1e-9)
                    assert (ci.high[i, j] + ci.low[i, j]) / 2 == pytest.approx(means[i] - means[j])


def test_blocked_restated_as_a_two_way_anova() -> None:
    from scipy.stats import studentized_range

    rng = np.random.default_rng(5)
    n, k = 25, 4
    topics = rng.normal(scale=2.0, size=(n, 1))  # large between-query variation, shared by every run
    x = topics + rng.normal(scale=0.3, size=(n, k)) + np.array([0.0, 0.05, 0.3, 0.35])
    p, _, half, df = tukey_hsd(x, blocked=True)
    grand = sum(x[i, j] for i in range(n) for j in range(k)) / (n * k)
    run_mean = [sum(x[i, j] for i in range(n)) / n for j in range(k)]
    topic_mean = [sum(x[i, j] for j in range(k)) / k for i in range(n)]
    sse = sum((x[i, j] - run_mean[j] - topic_mean[i] + grand) ** 2 for i in range(n) for j in range(k))
    mse = sse / ((k - 1) * (n - 1))
    assert df == (k - 1) * (n - 1)
    for a in range(k):
        for b in range(k):
            if a != b:
                q = abs(run_mean[a] - run_mean[b]) / math.sqrt(mse / n)
                assert p[a, b] == pytest.approx(studentized_range.sf(q, k, df), rel=1e-9, abs=1e-12)
    assert half == pytest.approx(studentized_range.ppf(0.95, k, df) * math.sqrt(mse / n))
    # Blocking removes the queries' own variation: the 0.3 shift is found, the one-way version misses it.
    unblocked, *_ = tukey_hsd(x, blocked=False)
    assert p[0, 2] < 0.05 < unblocked[0, 2]


def test_tukey_pairs_over_results_uses_complete_blocks() -> None:
    a = _result("a", {"q1": 0.1, "q2": 0.5, "q3": 0.2, "q4": None})
    b = _result("b", {"q1": 0.3, "q2": 0.6, "q3": 0.4, "q4": 0.9})
    c = _result("c", {"q1": 0.2, "q2": 0.5, "q3": 0.3, "q4": 0.1})
    pairs = tukey_pairs([a, b, c], ["m"])
    assert [(t.baseline, t.candidate) for t in pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert all(t.n == 3 and t.blocked for t in pairs)  # q4 failed for a: left out for every run
    assert pairs[0].mean_diff == pytest.approx(0.5 / 3)
    assert pairs[0].ci_low < pairs[0].mean_diff < pairs[0].ci_high
    with pytest.raises(InputError, match="at least 2 runs"):
        tukey_pairs([a], ["m"])


def test_seed_groups_average_seeds_per_query_then_test_over_queries() -> None:
    queries = [f"q{i}" for i in range(12)]
    rng = np.random.default_rng(1)
    base = rng.uniform(0.2, 0.6, size=12)
    groups = {
        "bm25": [_result(f"bm25_s{s}", dict(zip(queries, base + rng.normal(0, 0.02, 12), strict=True)))
                 for s in range(3)],
        "dense": [_result(f"dense_s{s}", dict(zip(queries, base + 0.1 + rng.normal(0, 0.02, 12), strict=True)))
                  for s in range(2)],
    }  # fmt: skip
    (pair,) = compare_seed_groups(groups, ["m"], test="t", bootstrap_samples=2000)
    a = np.array([[r.per_query[q]["m"] for r in groups["bm25"]] for q in queries])
    b = np.array([[r.per_query[q]["m"] for r in groups["dense"]] for q in queries])
    assert pair.n == 12 and pair.seeds_baseline == ["bm25_s0", "bm25_s1", "bm25_s2"]
    assert pair.mean_diff == pytest.approx(b.mean() - a.mean())
    assert pair.p_value == pytest.approx(
        paired_p_value("t", (b.mean(axis=1) - a.mean(axis=1)).tolist(), seed=42, permutations=0)
    )
    assert pair.seed_sd_baseline == pytest.approx(a.mean(axis=0).std(ddof=1))
    assert pair.significant and pair.ci_low < pair.mean_diff < pair.ci_high and pair.ci_low > 0


def test_the_hierarchical_interval_widens_with_the_seed_spread() -> None:
    rng = np.random.default_rng(9)
    queries = rng.uniform(0, 1, size=(40, 1))
    calm = np.repeat(queries, 4, axis=1) + rng.normal(0, 0.01, size=(40, 4))
    shaky = (
        queries + rng.normal(0, 0.01, size=(40, 4)) + rng.normal(0, 0.15, size=(1, 4))
    )  # seed-level shifts
    low_calm, high_calm = hierarchical_bootstrap(calm, calm + 0.05, samples=3000, seed=1)
    low_shaky, high_shaky = hierarchical_bootstrap(calm, shaky + 0.05, samples=3000, seed=1)
    assert high_shaky - low_shaky > 3 * (high_calm - low_calm)


def test_under_the_null_the_seed_test_keeps_its_level() -> None:
    """Two identical systems with seed noise: the paired test over seed-averaged queries rejects at about
    alpha (bounded: 300 simulations of 30 queries x 3 seeds, t-test)."""
    rng = np.random.default_rng(11)
    rejections = 0
    queries = [f"q{i}" for i in range(30)]
    for _ in range(300):
        truth = rng.uniform(0, 1, size=30)
        groups = {
            name: [_result(f"{name}{s}", dict(zip(queries, truth + rng.normal(0, 0.1, 30), strict=True)))
                   for s in range(3)]
            for name in ("a", "b")
        }  # fmt: skip
        (pair,) = compare_seed_groups(groups, ["m"], test="t", bootstrap_samples=200)
        rejections += pair.significant
    assert rejections / 300 <= 0.09


def test_cli_tukey_and_seed_groups(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    from pathlib import Path

    from ragmetrics import Qrels, Run
    from ragmetrics.cli import main

    folder = Path(str(tmp_path))
    rng = np.random.default_rng(4)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(8)} for i in range(20)}
    Qrels.from_dict(qrels).to_trec(folder / "qrels.txt")
    paths = []
    for system, quality in (("a", 0.0), ("b", 1.0)):
        for s in range(3):
            run = {
                q: {d: float(g) * quality + float(rng.normal(0, 1)) for d, g in docs.items()}
                for q, docs in qrels.items()
            }
            paths.append(str(folder / f"{system}{s}.run"))
            Run.from_dict(run, name=f"{system}{s}").to_trec(paths[-1])
    code = main(["compare", str(folder / "qrels.txt"), *paths, "-m", "ndcg@5", "--group", "a=a0,a1,a2",
                 "--group", "b=b0,b1,b2", "--tukey", "--format", "json", "--bootstrap-samples", "500",
                 "--permutations", "2000"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    assert [r["name"] for r in report["runs"]] == ["a", "b"]
    (seeds,) = report["metadata"]["seed_comparisons"]
    assert seeds["seeds_baseline"] == ["a0", "a1", "a2"] and seeds["significant"]
    (pair,) = report["comparisons"]
    assert (pair["ci_low"], pair["ci_high"]) == (seeds["ci_low"], seeds["ci_high"])  # the hierarchical CI
    assert pair["p_value"] == seeds["p_value"]
    (tukey,) = report["metadata"]["tukey"]
    assert tukey["blocked"] and tukey["significant"]
    assert main(["compare", str(folder / "qrels.txt"), *paths, "-m", "ndcg@5", "--tukey", "--format",
                 "markdown", "--permutations", "500", "--bootstrap-samples", "200"]) == 0  # fmt: skip
    markdown = capsys.readouterr().out
    assert "Tukey's HSD: all pairs at once" in markdown and markdown.count("| ndcg@5 |") >= 15
    assert main(["compare", str(folder / "qrels.txt"), *paths, "-m", "ndcg@5", "--group", "a=a0,zz"]) == 2
    assert "no run 'zz'" in capsys.readouterr().err
