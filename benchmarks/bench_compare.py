"""Speed and reproducibility of run comparisons on this machine.

    .venv/bin/python benchmarks/bench_compare.py [--repeat 3] [--json] [--skip-ranx]

1. compare_results: 5 already-scored runs x 10,000 queries x 5 metrics, Fisher randomization with
   10,000 permutations, Holm, bootstrap CIs with 10,000 samples (10 pairs x 5 metrics = 50 tests).
   Also split into its two kernels (Fisher alone, bootstrap alone) and the other tests.
   Target from the issue: under 5 s on this 2-core machine.
2. compare(): the same shape starting from Qrels and Run objects (100 ranked documents per query), so
   scoring with evaluate is included.
3. Thread-count invariance: the Fisher p-values of a fresh process with NUMBA_NUM_THREADS=1 and =2.
4. ranx (if installed), in a subprocess because importing it changes numba's threading settings:
   its Fisher test on one pair twice with the same seed (do the p-values repeat?) and its time.
Each timing is the median of --repeat warm calls (JIT compilation done once before, reported apart).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragmetrics.comparison.pairs import compare_results  # noqa: E402
from ragmetrics.schema import RunMetadata, RunResult  # noqa: E402

RUNS, QUERIES, METRICS, PERMUTATIONS, SAMPLES = 5, 10_000, 5, 10_000, 10_000


def synthetic_results(seed: int = 0) -> list[RunResult]:
    """Correlated runs (shared per-query difficulty), like real systems on one query set."""
    rng = np.random.default_rng(seed)
    difficulty = rng.random((QUERIES, METRICS))
    metrics = [f"metric{m}" for m in range(METRICS)]
    out = []
    for r in range(RUNS):
        values = np.clip(difficulty + 0.01 * r + rng.normal(0, 0.2, difficulty.shape), 0, 1)
        per_query: dict[str, dict[str, float | None]] = {
            f"q{i}": dict(zip(metrics, map(float, values[i]), strict=True)) for i in range(QUERIES)
        }
        result = RunResult(name=f"run{r}", per_query=per_query, metadata=RunMetadata(metrics=metrics))
        result.recompute_aggregate()
        out.append(result)
    return out


def _median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_compare_results(repeat: int) -> dict[str, float]:
    from ragmetrics.comparison.bootstrap import bootstrap_means
    from ragmetrics.comparison.fisher import fisher_p_values

    results = synthetic_results()
    start = time.perf_counter()
    compare_results(results[:2], permutations=10, bootstrap_samples=10)  # JIT compile or load the cache
    warmup = time.perf_counter() - start

    def full(test: str) -> Callable[[], Any]:
        return lambda: compare_results(
            results, test=test, correction="holm", permutations=PERMUTATIONS, bootstrap_samples=SAMPLES
        )

    rng = np.random.default_rng(1)
    diffs = rng.normal(0, 0.2, (QUERIES, 10 * METRICS))
    scores = rng.random((QUERIES, RUNS * METRICS))
    return {
        "first_call_s": warmup,
        "fisher_full_s": _median_time(full("fisher"), repeat),
        "t_full_s": _median_time(full("t"), repeat),
        "wilcoxon_full_s": _median_time(full("wilcoxon"), repeat),
        "fisher_kernel_50_columns_s": _median_time(
            lambda: fisher_p_values(diffs, permutations=PERMUTATIONS), repeat
        ),
        "bootstrap_kernel_25_columns_s": _median_time(
            lambda: bootstrap_means(scores, samples=SAMPLES), repeat
        ),
    }


def bench_compare_from_runs(repeat: int) -> dict[str, float]:
    from ragmetrics import Qrels, Run, compare

    rng = np.random.default_rng(2)
    qrels = Qrels.from_dict(
        {
            f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in rng.choice(200, 8, replace=False)}
            for i in range(QUERIES)
        }
    )
    runs = []
    for r in range(RUNS):
        ranking = {
            f"q{i}": {f"d{j}": float(s) for j, s in enumerate(rng.random(100))} for i in range(QUERIES)
        }
        runs.append(Run.from_dict(ranking, name=f"run{r}"))
    metrics = ["ndcg@10", "map", "mrr", "recall@100", "precision@5"]
    compare(qrels, runs[:2], metrics, permutations=10, bootstrap_samples=10)
    return {
        "compare_from_runs_s": _median_time(
            lambda: compare(
                qrels, runs, metrics, test="fisher", permutations=PERMUTATIONS, bootstrap_samples=SAMPLES
            ),
            repeat,
        )
    }


_CHILD = """
import json, numpy as np
from ragmetrics.comparison.fisher import fisher_p_values
d = np.random.default_rng(5).normal(0.003, 0.2, (10000, 50))
print(json.dumps(fisher_p_values(d, permutations=10000, seed=42).tolist()))
"""


def thread_invariance() -> dict[str, Any]:
    out = {}
    for threads in (1, 2):
        env = {**os.environ, "NUMBA_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
        )
        out[threads] = json.loads(done.stdout)
    return {"fisher_identical_1_vs_2_threads": out[1] == out[2], "columns": len(out[1])}


_RANX = """
import json, time, numpy as np
from ranx import Qrels, Run, compare
rng = np.random.default_rng(3)
n = 10000
qrels = Qrels({f"q{i}": {f"d{j}": 1 for j in range(3)} for i in range(n)})
def run(name, shift):
    return Run({f"q{i}": {f"d{j}": float(rng.random() + (shift if j < 3 else 0)) for j in range(20)} for i in range(n)}, name=name)
a, b = run("a", 0.0), run("b", 0.003)
compare(qrels, [a, b], metrics=["ndcg@10"], stat_test="fisher", n_permutations=100, random_seed=42)
ps, times = [], []
for _ in range(2):
    t = time.perf_counter()
    report = compare(qrels, [a, b], metrics=["ndcg@10"], stat_test="fisher", n_permutations=10000, random_seed=42)
    times.append(time.perf_counter() - t)
    ps.append(report.comparisons[("a", "b")]["ndcg@10"]["p_value"])
print(json.dumps({"ranx_p_values_same_seed": ps, "ranx_one_pair_one_metric_s": min(times)}))
"""


def ranx_reference() -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _RANX], capture_output=True, text=True)
    if done.returncode != 0:
        return {"ranx": f"not measured: {done.stderr.strip().splitlines()[-1] if done.stderr else 'failed'}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-ranx", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "shape": f"{RUNS} runs x {QUERIES} queries x {METRICS} metrics",
    }
    figures.update(bench_compare_results(args.repeat))
    figures.update(bench_compare_from_runs(args.repeat))
    figures.update(thread_invariance())
    if not args.skip_ranx:
        figures.update(ranx_reference())
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for key, value in figures.items():
        shown = f"{value:.3f}" if isinstance(value, float) else value
        print(f"{key:36s} {shown}")


if __name__ == "__main__":
    main()
