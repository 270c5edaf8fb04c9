"""Plug your own reranker into the comparison: a Python function, or an HTTP rerank endpoint.

    python examples/custom_reranker.py                      # a toy word-overlap reranker, offline
    python examples/custom_reranker.py --url http://127.0.0.1:8080/rerank --format tei
                                                            # e.g. text-embeddings-inference serving a cross-encoder

Any callable `(question, passages) -> one float per passage` works (a cross-encoder's `predict`, an LLM call);
in a config it is named "package.module:function" (`params: {reranker: mypkg.rerank:score}`), an endpoint as
`params: {reranker: {url: ..., model: ..., format: cohere|tei, api_key_env: ...}}`. The built-in
`bm25_embedding_rerank` without `reranker` uses the cosine of local MiniLM embeddings (a bi-encoder).
"""

from __future__ import annotations

import argparse
from typing import Any

from ragmetrics import compare, evaluate
from ragmetrics.collection import load_passages, load_qrels, load_questions
from ragmetrics.retrievers import build_run


def word_overlap(question: str, passages: list[str]) -> list[float]:
    """A stand-in for a cross-encoder: the share of the question's words found in each passage."""
    words = {w.lower().strip("?.,") for w in question.split() if len(w) > 3}
    return [sum(w in p.lower() for w in words) / max(1, len(words)) for p in passages]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="an HTTP rerank endpoint instead of the toy function")
    parser.add_argument("--format", default="cohere", choices=["cohere", "tei"])
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    reranker: Any = (
        word_overlap if args.url is None else {"url": args.url, "format": args.format, "model": args.model}
    )
    passages, questions, qrels = load_passages(), load_questions(), load_qrels()
    runs = [
        build_run("bm25", {"top_k": 50}, passages, questions, "bm25"),
        build_run("bm25_embedding_rerank", {"candidates": 50}, passages, questions, "embed_rerank"),
        build_run(
            "bm25_embedding_rerank", {"candidates": 50, "reranker": reranker}, passages, questions, "custom"
        ),
    ]
    results = [evaluate(qrels, run, ["ndcg@10", "mrr", "recall@10"]) for run in runs]
    for result in results:
        print(
            f"{result.name:<14} "
            + "  ".join(f"{m} {v:.4f}" for m, v in result.aggregate.items() if v is not None)
        )
    report = compare(qrels, runs, ["ndcg@10"], test="fisher", correction="holm", seed=42)
    for c in report.comparisons:
        if c.metric == "ndcg@10":
            print(f"ndcg@10 {c.baseline} -> {c.candidate}: {c.mean_diff:+.4f} (Holm p = {c.p_corrected:.4f})")


if __name__ == "__main__":
    main()
