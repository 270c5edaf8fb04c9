"""Sweeps with a held-out winner on the built-in collection and on public collections (docs/sweeps.md).

    .venv/bin/python benchmarks/bench_sweep.py [--cisi DIR] [--cacm DIR] [--chunking] [--out DIR]

- builtin: configs/sweep.yaml as shipped (64 questions, context_recall by the local judge);
- builtin test set: the same grid over `ragmetrics testset builtin --size 200` (offline; questions of five kinds,
  so the split is stratified by kind), on context_recall and on ndcg@10;
- CISI / CACM (SMART files in DIR; public copies in ../shared/collections.md; nothing is downloaded and no text
  is copied into the project): the grid on ndcg@10 against their human qrels;
- with --chunking, the built-in test set over two chunkings of its passages (BM25, dense, one hybrid; chunk
  qrels derived from the passages' qrels), and CISI again over two chunkings of its abstracts (scored on chunk qrels derived from the
  abstracts' qrels), two BM25 settings, no reranker.

Prints one table row per sweep; every sweep's files (sweep.json, sweep.md, pareto.png, sweep.html) go to OUT.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import testset_collections

ROOT = Path(__file__).resolve().parent.parent

GRID: dict[str, Any] = {
    "retrievers": [{"name": "bm25", "retriever": "bm25"}, {"name": "dense", "retriever": "dense"}],
    "fusion": {"runs": ["bm25", "dense"], "weights": [0.3, 0.5, 0.7]},
    "rerankers": [
        {"name": "none", "kind": "none"},
        {"name": "minilm", "kind": "embedding", "candidates": 30},
    ],
    "k": [3, 5, 10],
    "baseline": "bm25/none/k5",
    "split": {"seed": 0, "strata": "auto"},
    "early_drop": {"batch_size": 4, "alpha": 0.05},
}


def _write_collection(folder: Path, loaded: testset_collections.Collection) -> tuple[Path, Path]:
    passages, queries, qrels = loaded
    folder.mkdir(parents=True, exist_ok=True)
    qa, corpus = folder / "qa.jsonl", folder / "passages.jsonl"
    with qa.open("w", encoding="utf-8") as out:
        for qid, text in queries.items():
            ids = sorted(qrels[qid])
            row = {
                "id": qid,
                "question": text,
                "relevant_ids": ids,
                "relevant_grades": [qrels[qid][d] for d in ids],
            }
            out.write(json.dumps(row) + "\n")
    with corpus.open("w", encoding="utf-8") as out:
        for p in passages:
            out.write(json.dumps({"id": p["id"], "text": p["text"]}) + "\n")
    return qa, corpus


def _run(name: str, config: dict[str, Any], out: Path) -> dict[str, Any]:
    from ragmetrics.nightly.config import load_config
    from ragmetrics.sweep.report import write_outputs
    from ragmetrics.sweep.run import run_sweep

    out.mkdir(parents=True, exist_ok=True)
    path = out / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": name, **config}, sort_keys=False), encoding="utf-8")
    started = time.perf_counter()
    result = run_sweep(load_config(path))
    s = write_outputs(result, out)
    s["seconds"] = round(time.perf_counter() - started, 1)
    return s


def _row(label: str, s: dict[str, Any]) -> str:
    w, e = s["winner"], s["early_drop"]
    checks = "; ".join(
        f"{c['role']} {c['mean_difference']:+.3f} p_holm={c['p_adjusted']:.3g}" for c in s["checks"]
    )
    return (
        f"| {label} | {s['configurations']} | {s['metric']} | {s['split']['selection']}/{s['split']['confirmation']} "
        f"| `{w['name']}` | {w['selection_mean']:.4f} | {w['confirmation_mean']:.4f} | {w['gap']:+.4f} | {checks} "
        f"| {len(e['dropped'])} | {e['units_avoided']}/{e['units_without_dropping']} | "
        f"{e['judge_calls'] if e['judged'] else '-'} | {s['seconds']} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cisi", type=Path, help="folder with CISI.ALL, CISI.QRY, CISI.REL")
    parser.add_argument("--cacm", type=Path, help="folder with cacm.all, query.text, qrels.text")
    parser.add_argument(
        "--chunking", action="store_true", help="also CISI over two chunkings of its abstracts"
    )
    parser.add_argument(
        "--only",
        choices=("builtin", "testset", "public", "chunking", "testset-chunking"),
        help="run one part",
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/ragmetrics-sweeps"))
    args = parser.parse_args()
    rows: list[str] = []
    if args.only in (None, "builtin"):
        shipped = yaml.safe_load((ROOT / "configs" / "sweep.yaml").read_text())
        shipped.pop("output", None)
        rows.append(_row("builtin (64 q)", _run("pydocs", shipped, args.out / "builtin")))
    if args.only in (None, "testset"):
        testset = args.out / "builtin-testset-data"
        if not (testset / "questions.jsonl").is_file():
            subprocess.run(
                [sys.executable, "-m", "ragmetrics", "testset", "builtin", "-o", str(testset), "--size", "200",
                 "--seed", "0", "--generator", "offline", "--no-judge-checks"],
                check=True, capture_output=True,
            )  # fmt: skip
        for metric, judge in (
            ("context_recall", {"backend": "local", "metrics": ["context_recall"]}),
            ("ndcg@10", None),
        ):
            config: dict[str, Any] = {
                "dataset": {"path": str(testset)},
                "retrieval": {"metrics": ["ndcg@10"]},
                "sweep": {**GRID, "metric": metric},
            }
            if judge:
                config["judge"] = judge
            label = f"builtin test set (200 q, kinds) {metric}"
            rows.append(
                _row(label, _run(label, config, args.out / f"builtin-testset-{metric.replace('@', '')}"))
            )
            if judge:  # the judge calls early dropping saved: the same sweep judged in full
                full = {**config, "sweep": {**config["sweep"], "early_drop": {"enabled": False}}}
                label += ", no early dropping"
                rows.append(_row(label, _run(label, full, args.out / "builtin-testset-full")))
    if args.only == "testset-chunking" or (args.chunking and args.only in (None, "testset")):
        chunked = {
            "dataset": {"path": str(args.out / "builtin-testset-data")},
            "retrieval": {"metrics": ["ndcg@10"]},
            "sweep": {
                **GRID, "metric": "ndcg@10", "fusion": {**GRID["fusion"], "weights": [0.5]},
                "rerankers": GRID["rerankers"][:1],
                "chunking": [{"method": "sentences", "size": 3, "overlap": 1}, {"method": "recursive", "size": 100000}],
                "baseline": "recursive-100000c-0/bm25/none/k5",
            },
        }  # fmt: skip
        label = "builtin test set chunkings"
        rows.append(_row(label, _run(label, chunked, args.out / "builtin-testset-chunking")))
    public = [("CISI", args.cisi, testset_collections.cisi), ("CACM", args.cacm, testset_collections.cacm)]
    for label, folder, loader in public if args.only in (None, "public", "chunking") else []:
        if folder is None:
            print(f"{label}: skipped (no --{label.lower()} folder given)", file=sys.stderr)
            continue
        qa, corpus = _write_collection(args.out / f"{label.lower()}-data", loader(folder))
        config = {
            "dataset": {"path": str(qa), "passages": str(corpus)},
            "retrieval": {"metrics": ["ndcg@10"]},
            "sweep": {**GRID, "metric": "ndcg@10"},
        }
        if args.only != "chunking":
            rows.append(_row(label, _run(label, config, args.out / label.lower())))
        if (args.chunking or args.only == "chunking") and label == "CISI":
            chunked = {
                **config,
                "sweep": {
                    **GRID, "metric": "ndcg@10", "fusion": None,
                    "retrievers": [GRID["retrievers"][0], {"name": "bm25-b0.4", "retriever": "bm25", "params": {"k1": 0.9, "b": 0.4}}],
                    "rerankers": GRID["rerankers"][:1],
                    "chunking": [{"method": "sentences", "size": 3, "overlap": 1}, {"method": "recursive", "size": 100000}],
                    "baseline": "recursive-100000c-0/bm25/none/k5",
                },
            }  # fmt: skip
            rows.append(_row("CISI chunkings", _run("CISI chunkings", chunked, args.out / "cisi-chunking")))
    print("| collection | configs | metric | questions sel/conf | winner | selection | confirmation | gap | "
          "confirmation tests | dropped | units avoided | judgments made | s |")  # fmt: skip
    print("|---|---:|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
