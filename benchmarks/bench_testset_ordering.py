"""Does a generated test collection order retrieval systems as people's judgments do?

    .venv/bin/python benchmarks/bench_testset_ordering.py [--cisi DIR] [--cacm DIR] [--size 300] [--seed 0]

For each collection (the built-in one always; CISI and CACM when their folder is given, see
testset_collections.py), seven retrieval systems of different quality are run on the human questions and on
a test set generated offline from the same corpus:

    bm25          BM25 (k1 1.5, b 0.75, English stop words)
    bm25_weak     BM25 with k1 0.2, b 1.0 and no stop words (saturates at once, over-normalises length)
    bm25_nonorm   BM25 with b 0 and k1 3 (no length normalisation)
    dense         MiniLM bi-encoder, cosine over every passage
    rerank        BM25 top 50 reranked by the MiniLM cosine
    rrf           reciprocal rank fusion of bm25 and dense
    dense_title   MiniLM over the title (or first 80 characters) only

and their nDCG@10 under the human qrels and under the generated ones are compared by Kendall's tau, with a
95% bootstrap interval (questions of both collections resampled, 1,000 times). Three generated collections:

    plain        known-item queries as Azzopardi et al. (SIGIR 2007) make them: terms drawn from the whole
                 chunk by tf-idf, no word forms changed, identifiers at full weight; source chunk only
    ragmetrics   the offline generator's defaults (lead terms, fewer identifiers, other word forms);
                 source chunk only
    + pool       the same questions with the seven systems' top 10 pooled and graded by the local judge
                 (the `--pool` path), on MiniLM (the embedder four of the systems rank with)
    + pool, e5 judge   the same pool graded by the local judge on multilingual-e5-small (no system's model)

Prints a Markdown table (docs/testset.md keeps the one from the latest run) and, with --json, the numbers.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import testset_collections

METRIC = "ndcg@10"


class CachedEmbedder:
    """The default MiniLM embedder with a memory of every text it embedded (the seven systems share texts)."""

    def __init__(self) -> None:
        from ragmetrics.retrievers.rerank import default_embedder

        self.base = default_embedder()
        self.memory: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.memory))
        if missing:
            for text, vector in zip(missing, self.base.encode(missing), strict=True):
                self.memory[text] = vector
        return np.stack([self.memory[t] for t in texts]).astype(np.float32)


def systems(
    passages: list[dict[str, Any]], queries: dict[str, str], embedder: CachedEmbedder
) -> dict[str, Any]:
    from ragmetrics.retrieval.fusion import fuse
    from ragmetrics.retrievers import build_run

    docs = [{"id": p["id"], "text": p["text"]} for p in passages]
    titles = [{"id": p["id"], "text": p.get("title") or p["text"][:80]} for p in passages]
    runs = {
        "bm25": build_run("bm25", {}, docs, queries, "bm25"),
        "bm25_weak": build_run("bm25", {"k1": 0.2, "b": 1.0, "stopwords": None}, docs, queries, "bm25_weak"),
        "bm25_nonorm": build_run("bm25", {"b": 0.0, "k1": 3.0}, docs, queries, "bm25_nonorm"),
        "dense": build_run("dense", {}, docs, queries, "dense", embedder=embedder),
        "rerank": build_run("bm25_embedding_rerank", {}, docs, queries, "rerank", embedder=embedder),
        "dense_title": build_run("dense", {}, titles, queries, "dense_title", embedder=embedder),
    }
    runs["rrf"] = fuse([runs["bm25"], runs["dense"]], "rrf", name="rrf")
    return runs


def per_query(qrels: dict[str, dict[str, int]], runs: dict[str, Any]) -> tuple[list[str], np.ndarray]:
    """(system names, matrix questions x systems of nDCG@10) over the judged questions."""
    from ragmetrics import Qrels, evaluate

    judged = Qrels.from_dict(qrels)
    names = list(runs)
    qids = sorted(qrels)
    matrix = np.zeros((len(qids), len(names)))
    for j, name in enumerate(names):
        result = evaluate(judged, runs[name], [METRIC])
        for i, q in enumerate(qids):
            matrix[i, j] = result.per_query.get(q, {}).get(METRIC, 0.0)
    return names, matrix


def tau_with_ci(
    human: np.ndarray, generated: np.ndarray, seed: int, draws: int = 1000
) -> tuple[float, float, float]:
    from scipy.stats import kendalltau

    point = float(kendalltau(human.mean(0), generated.mean(0)).statistic)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(draws):
        h = human[rng.integers(0, len(human), len(human))].mean(0)
        g = generated[rng.integers(0, len(generated), len(generated))].mean(0)
        value = kendalltau(h, g).statistic
        values.append(0.0 if np.isnan(value) else float(value))
    low, high = np.percentile(values, [2.5, 97.5])
    return point, float(low), float(high)


def generated_collections(
    passages: list[dict[str, Any]], size: int, seed: int, embedder: CachedEmbedder
) -> dict[str, tuple[dict[str, Any], dict[str, dict[str, int]], int]]:
    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.testset import build_testset
    from ragmetrics.testset.build import add_pool

    judge = make_judge(JudgeSettings(backend="local"))
    e5 = make_judge(JudgeSettings(backend="local", local_model="e5"))
    out = {}
    variants = {
        "plain": {
            "lead_terms": 1_000_000,
            "variant_rate": 0.0,
            "identifier_weight": 1.0,
            "judge_checks": False,
        },
        "ragmetrics": {},
    }
    for label, knobs in variants.items():
        testset = build_testset(passages, size=size, seed=seed, judge=judge, **knobs)
        questions = {i.id: i.question for i in testset.items if i.answerable}
        runs = systems(passages, questions, embedder)
        out[label] = (runs, {q: d for q, d in testset.qrels().items() if q in questions}, len(questions))
        if label == "ragmetrics":
            # The same questions pooled twice: graded by the local judge on MiniLM (the model the dense,
            # rerank, rrf and title systems rank with) and on e5 (a model none of the systems uses).
            for pool_label, pool_judge in (("ragmetrics + pool", judge), ("ragmetrics + pool, e5 judge", e5)):
                pooled_set = copy.deepcopy(testset)
                add_pool(pooled_set, list(runs.values()), pool_judge, corpus=passages)
                pooled = {q: d for q, d in pooled_set.qrels().items() if q in questions}
                out[pool_label] = (runs, pooled, len(questions))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cisi", type=Path, help="folder with CISI.ALL, CISI.QRY, CISI.REL")
    parser.add_argument("--cacm", type=Path, help="folder with cacm.all, query.text, qrels.text")
    parser.add_argument("--size", type=int, default=300, help="generated questions per collection")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args()
    collections: dict[str, Any] = {"built-in (pydocs)": testset_collections.builtin}
    if args.cisi:
        collections["CISI"] = lambda: testset_collections.cisi(args.cisi)
    if args.cacm:
        collections["CACM"] = lambda: testset_collections.cacm(args.cacm)
    rows = []
    report: dict[str, Any] = {}
    for name, load in collections.items():
        started = time.monotonic()
        passages, queries, qrels = load()
        embedder = CachedEmbedder()
        human_runs = systems(passages, queries, embedder)
        names, human = per_query(qrels, human_runs)
        report[name] = {
            "human": dict(zip(names, human.mean(0).round(4).tolist(), strict=True)),
            "questions": len(qrels),
            "passages": len(passages),
        }
        for label, (runs, gen_qrels, count) in generated_collections(
            passages, args.size, args.seed, embedder
        ).items():
            _, generated = per_query(gen_qrels, runs)
            tau, low, high = tau_with_ci(human, generated, args.seed)
            report[name][label] = {
                "tau": round(tau, 3),
                "ci": [round(low, 3), round(high, 3)],
                "questions": count,
                "ndcg@10": dict(zip(names, generated.mean(0).round(4).tolist(), strict=True)),
            }
            rows.append((name, label, count, tau, low, high))
        report[name]["seconds"] = round(time.monotonic() - started, 1)
        print(f"{name}: human nDCG@10 {report[name]['human']}", file=sys.stderr)
    print("| collection | generated collection | questions | Kendall tau vs human | 95% CI |")
    print("|---|---|---:|---:|---|")
    for name, label, count, tau, low, high in rows:
        print(f"| {name} | {label} | {count} | {tau:.2f} | [{low:.2f}, {high:.2f}] |")
    print()
    for name, data in report.items():
        systems_ = list(data["human"])
        print(f"{name}, nDCG@10 per system:")
        labels = [k for k in data if isinstance(data[k], dict) and "ndcg@10" in data[k]]
        print("| system | human | " + " | ".join(labels) + " |")
        print("|---|---:|" + "---:|" * len(labels))
        for s in systems_:
            cells = " | ".join(f"{data[k]['ndcg@10'][s]:.3f}" for k in labels)
            print(f"| {s} | {data['human'][s]:.3f} | {cells} |")
        print()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
