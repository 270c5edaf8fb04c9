"""Do planted attack texts reach the system? Ranks of poisoned and injected chunks under BM25 and dense retrieval.

    .venv/bin/python benchmarks/bench_attack_rank.py [--cisi DIR] [--cacm DIR] [--seed 0] [--json FILE]

For each collection (the built-in one always; CISI and CACM with their human queries and qrels when their
folder is given, see testset_collections.py) an attack set is built (`ragmetrics.attacks`, poisoning and
injection, 3 poison texts per question) and every planted text is added to the corpus at once, as a poisoned
knowledge base holds them. Each target question is then searched with the reference retrievers
(`ragmetrics.retrievers`: BM25, and the MiniLM bi-encoder with cosine over every passage) and we report:

    poison top-3   share of poisoned questions with at least one of their poison texts in the top 3
    poison top-1   ... at rank 1
    texts top-3    share of all poison texts that rank in the top 3 for their question
    injected top-3 share of injection attacks whose injected chunk (standing in for the question's best
                   relevant chunk) ranks in the top 3: what a system retrieving 3 chunks would read
    relevant top-3 the same for the question's own best relevant chunk in the clean corpus, for comparison

docs/attacks.md keeps the table of the latest run. Nothing is downloaded; the collections' text is never
copied into the project.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import testset_collections

from ragmetrics.attacks.build import Target, build_attacks
from ragmetrics.retrievers._inputs import Corpus
from ragmetrics.retrievers.bm25 import BM25Index
from ragmetrics.testset.corpus import Chunk


def _dense_rankings(
    ids: list[str], texts: list[str], queries: dict[str, str], k: int
) -> dict[str, list[str]]:
    import numpy as np

    from ragmetrics.embeddings.minilm import MiniLMEmbedder

    model = MiniLMEmbedder()
    doc_vecs = np.asarray(model.encode(texts), dtype=np.float32)
    qids = list(queries)
    q_vecs = np.asarray(model.encode([queries[q] for q in qids]), dtype=np.float32)
    out = {}
    for qid, vec in zip(qids, q_vecs, strict=True):
        scores = doc_vecs @ vec
        best = np.argsort(-scores, kind="stable")[:k]
        out[qid] = [ids[i] for i in best]
    return out


def _bm25_rankings(ids: list[str], texts: list[str], queries: dict[str, str], k: int) -> dict[str, list[str]]:
    index = BM25Index(Corpus(tuple(ids), tuple(texts)))
    return {q: [d for d, _ in hits] for q, hits in index.search(queries, k).items()}


def measure(name: str, collection: testset_collections.Collection, seed: int) -> dict[str, Any]:
    passages, queries, qrels = collection
    corpus = {
        p["id"]: Chunk(id=p["id"], text=p["text"], title=p.get("title") or None, line=n)
        for n, p in enumerate(passages, start=1)
    }
    targets = [
        Target(
            id=q,
            question=text,
            reference=None,
            language="en",
            relevant={d: g for d, g in qrels[q].items() if g >= 1},
        )
        for q, text in queries.items()
        if any(g >= 1 for g in qrels[q].values())
    ]
    started = time.perf_counter()
    attack_set = build_attacks(targets, corpus, kinds=["poisoning", "injection"], seed=seed, poison_copies=3)
    built_s = time.perf_counter() - started
    rows = {r.id: r for r in attack_set.rows}
    poison = [c for c in attack_set.checks if c.kind == "poisoning"]
    injection = [c for c in attack_set.checks if c.kind == "injection"]
    planted = {d.id: d.text for c in poison for d in rows[c.id].planted_documents or []}
    base_ids = list(corpus)
    base_texts = [corpus[d].text for d in base_ids]
    ids = base_ids + list(planted)
    texts = base_texts + list(planted.values())
    asked = {c.id: rows[c.id].question for c in poison}
    clean_asked = {t.id: t.question for t in targets}
    result: dict[str, Any] = {
        "collection": name,
        "questions": len(targets),
        "poisoned": len(poison),
        "injected": len(injection),
        "build_s": round(built_s, 2),
    }
    for retriever, rank in (("bm25", _bm25_rankings), ("dense", _dense_rankings)):
        top = rank(ids, texts, asked, 3)
        hit3 = sum(any(d in planted and d.startswith(c.id + "-") for d in top[c.id][:3]) for c in poison)
        hit1 = sum(bool(top[c.id]) and top[c.id][0].startswith(c.id + "-") for c in poison)
        texts_top3 = sum(d.startswith(c.id + "-") for c in poison for d in top[c.id][:3])
        clean = rank(base_ids, base_texts, clean_asked, 3)
        # The injected chunk stands in for the relevant chunk it replaces, so it ranks where that one does.
        replaced = {c.id: (rows[c.id].planted_documents or [])[0].replaces for c in injection}
        injected_hits = sum(replaced[c.id] in clean[c.twin] for c in injection)
        relevant_hits = sum(
            any(d in qrels[t.id] and qrels[t.id][d] >= 1 for d in clean[t.id]) for t in targets
        )
        result[retriever] = {
            "poison_top3": hit3 / len(poison) if poison else None,
            "poison_top1": hit1 / len(poison) if poison else None,
            "texts_top3": texts_top3 / len(planted) if planted else None,
            "injected_top3": injected_hits / len(injection) if injection else None,
            "relevant_top3": relevant_hits / len(targets),
        }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cisi", type=Path, help="folder with CISI.ALL, CISI.QRY, CISI.REL")
    parser.add_argument("--cacm", type=Path, help="folder with cacm.all, query.text, qrels.text")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args()
    collections: list[tuple[str, testset_collections.Collection]] = [
        ("built-in", testset_collections.builtin())
    ]
    if args.cisi:
        collections.append(("CISI", testset_collections.cisi(args.cisi)))
    if args.cacm:
        collections.append(("CACM", testset_collections.cacm(args.cacm)))
    results = [measure(name, collection, args.seed) for name, collection in collections]
    print(
        "| collection | questions | poisoned | retriever | poison top-3 | poison top-1 | texts top-3 | injected top-3 | relevant top-3 |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in results:
        for retriever in ("bm25", "dense"):
            m = r[retriever]
            print(
                f"| {r['collection']} | {r['questions']} | {r['poisoned']} | {retriever} | {m['poison_top3']:.1%} | "
                f"{m['poison_top1']:.1%} | {m['texts_top3']:.1%} | {m['injected_top3']:.1%} | {m['relevant_top3']:.1%} |"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
