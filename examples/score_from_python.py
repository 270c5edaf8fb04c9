"""Score a retrieval system and its RAG answers from Python: what `ragmetrics run configs/quickstart.yaml` does.

    python examples/score_from_python.py

1. Retrieval metrics for your own rankings: build `Qrels` and `Run` from plain dicts (or TREC/JSON files) and
   call `evaluate`. Here the rankings come from the built-in retrievers over the built-in collection.
2. Judge metrics for RAG samples (question, retrieved contexts, answer, reference) with `evaluate_rag`: the
   local offline judge by default, an OpenAI-compatible endpoint when OPENAI_API_KEY or a base_url is set.
3. A paired comparison of the runs with significance tests via `compare`.
"""

from __future__ import annotations

from ragmetrics import JudgeSettings, Qrels, Run, compare, evaluate, evaluate_rag, format_report, make_judge
from ragmetrics.collection import load_passages, load_pipeline_run, load_qrels, load_questions, load_samples
from ragmetrics.retrievers import build_run

RETRIEVAL_METRICS = ["ndcg@10", "map", "mrr", "recall@10", "precision@5", "hit_rate@5"]
JUDGE_METRICS = ["context_precision", "context_recall", "context_relevancy", "answer_relevancy"]


def toy_example() -> None:
    """The containers from plain dicts: grades are integers, scores floats, ties broken by document id."""
    qrels = Qrels.from_dict({"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d4": 3}})
    run = Run.from_dict({"q1": {"d1": 0.9, "d7": 0.5, "d3": 0.2}, "q2": {"d5": 1.0, "d4": 0.8}}, name="toy")
    result = evaluate(qrels, run, ["ndcg@10", "recall@10", "mrr"])
    print("toy run:", {m: round(v, 4) for m, v in result.aggregate.items() if v is not None})
    print("  per query:", result.per_query)


def main() -> None:
    toy_example()

    qrels = load_qrels()
    passages, questions = load_passages(), load_questions()
    runs = [
        load_pipeline_run("pipeline"),
        build_run("bm25", {"top_k": 100}, passages, questions, "bm25"),
        build_run("bm25_embedding_rerank", {"candidates": 50}, passages, questions, "bm25_embed_rerank"),
    ]
    for run in runs:
        result = evaluate(qrels, run, RETRIEVAL_METRICS)
        print(
            f"{run.name:12s}", "  ".join(f"{m}={v:.4f}" for m, v in result.aggregate.items() if v is not None)
        )

    # The RAG answers of the collection's pipeline, judged offline (no verdict cache: nothing written to disk).
    judge = make_judge(JudgeSettings(backend="local", max_concurrency=1, cache_path=None))
    # One sample at a time: the local judge is CPU-bound and already uses every core for its embeddings.
    judged = evaluate_rag(
        load_samples(), JUDGE_METRICS, judge, name="pipeline", max_concurrency=1, progress=False
    )
    print("\njudge (local):", {m: round(v, 4) for m, v in judged.aggregate.items() if v is not None})
    first = next(iter(judged.details))
    print(f"  why {first} got its context_recall:", judged.details[first]["context_recall"].reason)

    report = compare(qrels, runs, RETRIEVAL_METRICS, test="fisher", correction="holm", seed=42)
    print()
    print(format_report(report, "table"))


if __name__ == "__main__":
    main()
