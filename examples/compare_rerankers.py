"""Does a reranker help? The comparison of configs/rerankers.yaml, written against the public Python API.

    python examples/compare_rerankers.py                 # table in the terminal
    python examples/compare_rerankers.py --format markdown --candidates 20 50

Plain BM25 against BM25 whose top-N candidates are reranked by the cosine between local MiniLM embeddings of
question and passage, on the built-in collection's 64 judged questions. Each pair of runs is compared per
question with a paired randomisation (Fisher) test and Holm's correction, so a difference marked significant
is unlikely to be noise. Needs the `examples` extra (bm25s); runs offline.
"""

from __future__ import annotations

import argparse

from ragmetrics import Qrels, Run, compare, evaluate, format_report
from ragmetrics.collection import load_passages, load_qrels, load_questions
from ragmetrics.retrievers import build_run

METRICS = ["ndcg@10", "map", "mrr", "recall@10", "precision@5", "hit_rate@3"]


def build_runs(candidates: list[int]) -> list[Run]:
    passages, questions = load_passages(), load_questions()
    runs = [build_run("bm25", {"top_k": 100}, passages, questions, "bm25")]
    for n in candidates:
        runs.append(
            build_run("bm25_embedding_rerank", {"candidates": n}, passages, questions, f"embed_rerank_top{n}")
        )
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, nargs="+", default=[50], help="BM25 depths to rerank")
    parser.add_argument("--format", default="table", choices=["table", "markdown", "latex", "json", "csv"])
    parser.add_argument("--test", default="fisher", choices=["fisher", "t", "wilcoxon", "sign"])
    args = parser.parse_args()

    qrels: Qrels = load_qrels()
    runs = build_runs(args.candidates)

    # One run on its own: means over the judged questions, and the per-question scores behind them.
    single = evaluate(qrels, runs[-1], METRICS)
    worst = min(single.per_query, key=lambda q: single.per_query[q]["ndcg@10"] or 0.0)
    print(f"{runs[-1].name}: ndcg@10 = {single.aggregate['ndcg@10']:.4f} (hardest question: {worst})\n")

    # All runs side by side, every pair tested; the seed makes p-values and intervals reproducible.
    report = compare(qrels, runs, METRICS, test=args.test, correction="holm", seed=42)
    print(format_report(report, args.format))

    better = [c for c in report.comparisons if c.significant and c.mean_diff > 0 and c.baseline == "bm25"]
    for c in better:
        print(
            f"{c.candidate} beats bm25 on {c.metric}: {c.mean_diff:+.4f} (Holm-corrected p = {c.p_corrected:.4f})"
        )


if __name__ == "__main__":
    main()
