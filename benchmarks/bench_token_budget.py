"""Metrics at a token budget beside the same metrics at a count cutoff, and pytrec_eval at the cutoff.

    .venv/bin/python benchmarks/bench_token_budget.py [--quick] [--repeat N]

The 10,000 queries x 100 documents collection of bench_retrieval.py (same generator and seed), each document
given a random length of 50-400 tokens. Warm evaluate (best of N, after one warm-up call) of
ndcg@10, map@100, recall@100, precision@10 against ndcg@2ktok, map@8ktok, recall@8ktok, precision@2ktok
(about the same depths: 2,000 tokens hold about 9 passages), in this process; pytrec_eval (no token budgets:
the @k metrics only) for scale. Prints the times and the ratio budget / count cutoff.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_retrieval import make_data, nested

AT_K = ["ndcg@10", "map@100", "recall@100", "precision@10"]
AT_BUDGET = ["ndcg@2ktok", "map@8ktok", "recall@8ktok", "precision@2ktok"]
TREC = {"ndcg_cut_10", "map_cut_100", "recall_100", "P_10"}


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1,000 queries (a smoke run)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n_queries = 1_000 if args.quick else 10_000
    qrels_cols, run_cols = make_data(n_queries, 100)
    qrels = nested(qrels_cols["q"], qrels_cols["d"], qrels_cols["v"], int)
    run = nested(run_cols["q"], run_cols["d"], run_cols["v"], float)
    rng = np.random.default_rng(7)
    lengths = {
        doc: int(n)
        for doc, n in zip(
            np.unique(run_cols["d"]).tolist(),
            rng.integers(50, 401, size=len(np.unique(run_cols["d"]))),
            strict=True,
        )
    }

    from ragmetrics import Qrels, Run, evaluate
    from ragmetrics.retrieval.budget import TokenLengths

    q, r = Qrels.from_dict(qrels), Run.from_dict(run)
    start = time.perf_counter()
    table = TokenLengths(lengths)  # built once, as when scoring several runs
    print(
        f"TokenLengths of {len(lengths):,} documents built in {(time.perf_counter() - start) * 1000:.0f} ms"
    )
    lengths = table  # type: ignore[assignment]
    evaluate(q, r, AT_K)
    start = time.perf_counter()
    evaluate(q, r, AT_BUDGET, lengths=lengths)
    first = time.perf_counter() - start
    print(
        f"first @token-budget evaluate of this run (aligns the counts with its vocabulary): {first * 1000:.0f} ms"
    )
    at_k = best(lambda: evaluate(q, r, AT_K), args.repeat)
    at_budget = best(lambda: evaluate(q, r, AT_BUDGET, lengths=lengths), args.repeat)
    print(f"{n_queries:,} queries x 100 documents, warm evaluate, best of {args.repeat}")
    print(f"ragmetrics @k metrics        {at_k * 1000:8.1f} ms")
    print(f"ragmetrics @token budgets    {at_budget * 1000:8.1f} ms   ({at_budget / at_k:.2f}x the @k time)")
    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval not installed (dev extra): no reference row")
        return 0
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC)
    evaluator.evaluate(run)
    trec = best(lambda: evaluator.evaluate(run), args.repeat)
    print(
        f"pytrec_eval @k metrics       {trec * 1000:8.1f} ms   (ragmetrics @token budgets {trec / at_budget:.1f}x faster)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
