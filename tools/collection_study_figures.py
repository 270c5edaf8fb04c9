"""Re-runs the figures of docs/collection.md's retriever study that are not a config run: the fusion weight
search on three splits, and fill-qrels with the local judge on the collection with 30 % of its judgments
removed (human-only, filled and full qrels side by side).

    python tools/collection_study_figures.py

(The six-run table itself is `ragmetrics run configs/rerankers.yaml`.)
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragmetrics import Qrels, evaluate, search_fusion  # noqa: E402
from ragmetrics.collection import load_passages, load_qrels, load_questions  # noqa: E402
from ragmetrics.judge.backends.local import LocalJudge  # noqa: E402
from ragmetrics.judge.cache import VerdictCache  # noqa: E402
from ragmetrics.qrels_fill import fill_qrels  # noqa: E402
from ragmetrics.retrievers import build_run  # noqa: E402


def main() -> int:
    passages, questions, qrels = load_passages(), load_questions(), load_qrels()
    bm25 = build_run("bm25", {"top_k": 100}, passages, questions, "bm25")
    dense = build_run("dense", {"top_k": 100}, passages, questions, "dense")

    print("| method | split seed | chosen | nDCG@10, validation | nDCG@10, held out |")
    print("|---|---|---|---|---|")
    for method in ("wsum", "rrf"):
        for seed in (0, 1, 2):
            found = search_fusion(
                qrels, [bm25, dense], method=method, metric="ndcg@10", held_out=0.5, seed=seed
            )
            print(
                f"| {method} | {seed} | {found.best} | {found.validation_score:.4f} | {found.held_out_score:.4f} |"
            )

    full = qrels.to_dict()
    rng = random.Random(0)
    kept = {q: {d: g for d, g in docs.items() if rng.random() >= 0.3} for q, docs in full.items()}
    human = Qrels.from_dict(kept)
    with tempfile.TemporaryDirectory() as tmp:
        judge = LocalJudge(cache=VerdictCache(Path(tmp) / "v.sqlite"))
        filled = fill_qrels(
            human, [bm25, dense], dict(questions), {p["id"]: p["text"] for p in passages}, judge, top_k=10
        )
    print(f"\npool {filled.pool_pairs} pairs, {filled.human_in_pool} human-judged, {filled.filled} filled")
    for label, agreement in (("visible", filled.agreement), ("removed", filled.agreement_with(qrels))):
        assert agreement is not None
        print(label, agreement.n_labeled, "accuracy", agreement.accuracy, "balanced", agreement.balanced_accuracy,
              "spearman", agreement.spearman, "bias", agreement.bias)  # fmt: skip
    combined = filled.combined(scale=2)
    for run in (dense, bm25):
        cells = []
        for q in (human, combined, qrels):
            scores = evaluate(q, run, ["ndcg@10", "judged@10"]).aggregate
            cells.append(f"{scores['ndcg@10']:.4f} ({scores['judged@10']:.3f})")
        print(f"| {run.name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
