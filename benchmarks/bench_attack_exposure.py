"""Exposure per retriever: how often planted attack text reaches a retriever's top contexts, per kind.

    .venv/bin/python benchmarks/bench_attack_exposure.py [--cisi DIR] [--cacm DIR] [--top-k 3] [--json FILE]

For the built-in collection (always) and CISI / CACM with their human queries and qrels (when their folder is
given; see testset_collections.py), an attack set is built with `ragmetrics attack` (injection, poisoning,
leak; out-of-scope questions plant nothing) and a night is run over it with three reference retrievers and no
generator: BM25, dense (MiniLM bi-encoder) and BM25 reranked by the MiniLM cosine. Each retriever indexes the
corpus plus every planted document and each question keeps its own attack's documents only
(`ragmetrics.attacks.exposure`). Printed per collection: exposure per kind and run with Wilson 95 % intervals,
mean reciprocal rank of the first planted context, and the paired exposure differences between runs (exact
McNemar, Holm) that attacks.json holds. Nothing is downloaded; collection text is written to a temporary folder
only, never into the project.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import testset_collections

from ragmetrics.cli.main import main

RETRIEVERS = ("bm25", "dense", "bm25_embedding_rerank")


def _write_collection(folder: Path, collection: testset_collections.Collection) -> list[str]:
    passages, queries, qrels = collection
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": p["id"], "title": p.get("title"), "text": p["text"]}) + "\n"
                              for p in passages), encoding="utf-8")  # fmt: skip
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"id": q, "question": t}) + "\n" for q, t in queries.items()), encoding="utf-8"
    )
    (folder / "qrels.txt").write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()), encoding="utf-8"
    )
    return [str(corpus), "--questions", str(folder / "queries.jsonl"), "--qrels", str(folder / "qrels.txt")]


def run(name: str, source: list[str], folder: Path, top_k: int) -> dict[str, Any]:
    attack_set = folder / "set"
    started = time.perf_counter()
    code = main(["attack", *source, "-o", str(attack_set), "--kinds", "injection,poisoning,leak", "--seed", "0"])
    if code != 0:
        raise SystemExit(f"{name}: ragmetrics attack exited {code}")
    built = time.perf_counter() - started
    config = {
        "name": f"exposure {name}",
        "dataset": {"attacks": str(attack_set)},
        "retrieval": {"metrics": ["ndcg@10", "recall@10"]},
        "runs": [{"source": "retriever", "retriever": r} for r in RETRIEVERS],
        "judge": {"backend": "local", "metrics": [], "contexts_top_k": top_k, "cache_path": None},
        "output": {"dir": str(folder / "out"), "formats": ["json"], "history": False},
    }
    path = folder / "night.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    started = time.perf_counter()
    code = main(["run", str(path), "--no-progress"])
    if code not in (0, 1, 4):
        raise SystemExit(f"{name}: ragmetrics run exited {code}")
    night = time.perf_counter() - started
    summary = json.loads((folder / "out" / "latest" / "attacks.json").read_text(encoding="utf-8"))
    return {"collection": name, "build_s": round(built, 1), "night_s": round(night, 1), "exposure": summary["exposure"]}


def show(result: dict[str, Any]) -> None:
    exposure = result["exposure"]
    runs = exposure["runs"]
    print(f"\n{result['collection']}: attack set {result['build_s']} s, night {result['night_s']} s")
    print(f"{'kind':<22}" + "".join(f"{r:>44}" for r in runs))
    for group in exposure["groups"]:
        cells = []
        for r in runs:
            rate = exposure["rates"][r][group]
            if rate["rate"] is None:
                cells.append(f"{'-':>44}")
            else:
                cell = (f"{100 * rate['rate']:.1f} % [{100 * rate['low']:.1f}, {100 * rate['high']:.1f}] "
                        f"mrr {rate['mrr']:.2f} n{rate['n']}")  # fmt: skip
                cells.append(f"{cell:>44}")
        print(f"{group:<22}" + "".join(cells))
    for pair in exposure["pairs"]:
        for row in pair["rows"]:
            if "/" in row["group"]:
                continue
            diff = "-" if row["difference"] is None else f"{100 * row['difference']:+.1f} pts"
            mark = " *" if row["significant"] else ""
            print(f"  {pair['b']} - {pair['a']:<24} {row['group']:<10} {diff:>11} "
                  f"(only a {row['only_a']}, only b {row['only_b']}; p Holm {row['p_holm']:.3g}){mark}")  # fmt: skip


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cisi", type=Path)
    parser.add_argument("--cacm", type=Path)
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="ragmetrics-exposure-") as tmp:
        jobs: list[tuple[str, Any]] = [("builtin", None)]
        if args.cisi:
            jobs.append(("CISI", testset_collections.cisi(args.cisi)))
        if args.cacm:
            jobs.append(("CACM", testset_collections.cacm(args.cacm)))
        for name, collection in jobs:
            folder = Path(tmp) / name
            folder.mkdir()
            source = ["builtin"] if collection is None else _write_collection(folder, collection)
            result = run(name, source, folder, args.top_k)
            show(result)
            results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main_()
