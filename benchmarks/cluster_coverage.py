"""Coverage of the 95 % interval and false-alarm rate of the paired test when turns of one conversation are
treated as independent questions, against clustering them by conversation (comparison.clusters).

    python benchmarks/cluster_coverage.py [--trials 1000] [--conversations 30] [--turns 6]

Each trial: two systems whose per-turn differences are a per-conversation effect (sd --between) plus turn
noise (sd --within), true difference 0; one comparison with clusters, one without.
"""

from __future__ import annotations

import argparse

import numpy as np

from ragmetrics.comparison.pairs import compare_results
from ragmetrics.schema import RunMetadata, RunResult


def _run(name: str, values: dict[str, float]) -> RunResult:
    result = RunResult(name=name, per_query={q: {"m": v} for q, v in values.items()},
                       metadata=RunMetadata(kind="judge", metrics=["m"], num_queries=len(values)))  # fmt: skip
    result.recompute_aggregate()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--conversations", type=int, default=30)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--between", type=float, default=0.15)
    parser.add_argument("--within", type=float, default=0.1)
    parser.add_argument("--test", default="t", choices=["t", "fisher", "wilcoxon", "sign"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    covered = {"clustered": 0, "turns": 0}
    rejected = {"clustered": 0, "turns": 0}
    for trial in range(args.trials):
        base, cand, clusters = {}, {}, {}
        for c in range(args.conversations):
            shift = rng.normal(0.0, args.between)
            for t in range(args.turns):
                qid = f"c{c}-t{t}"
                base[qid] = float(rng.normal(0.5, 0.2))
                cand[qid] = base[qid] + shift + float(rng.normal(0.0, args.within))
                clusters[qid] = f"c{c}"
        runs = [_run("x", base), _run("y", cand)]
        for kind, mapping in (("clustered", clusters), ("turns", None)):
            (pair,) = compare_results(runs, test=args.test, clusters=mapping, bootstrap_samples=2000,
                                      permutations=2000, seed=trial).comparisons  # fmt: skip
            covered[kind] += pair.ci_low <= 0.0 <= pair.ci_high
            rejected[kind] += pair.p_value <= 0.05
    print(f"{args.trials} trials, {args.conversations} conversations x {args.turns} turns, "
          f"between sd {args.between}, within sd {args.within}, test {args.test}")  # fmt: skip
    for kind in ("turns", "clustered"):
        print(f"  {kind:>9}: 95% CI coverage {covered[kind] / args.trials:.3f}, "
              f"false alarms at alpha 0.05 {rejected[kind] / args.trials:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
