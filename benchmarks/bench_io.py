"""Readers and writers of Qrels/Run on a million entries: process CPU time and wall time, best of N.

    .venv/bin/python benchmarks/bench_io.py [--repeat 3] [--queries 10000] [--depth 100]

Data: the synthetic collection of bench_retrieval.py (ids like ``doc1234567`` from a 2M corpus, scores with
3 decimals), with the run's documents also used as qrels (grades 0-3), so both containers hold
queries x depth entries. Kernels are warmed first, so the figures are steady-state costs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_retrieval import make_data, nested

from ragmetrics import Qrels, Run


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Lowest process CPU time and lowest wall time over `repeat` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()

    import pandas as pd

    _, columns = make_data(args.queries, args.depth)
    grades = np.random.default_rng(5).integers(0, 4, columns["q"].shape[0])
    run_dict = nested(columns["q"], columns["d"], columns["v"], float)
    qrels_dict = nested(columns["q"], columns["d"], grades, int)
    frame = pd.DataFrame({"query_id": columns["q"], "doc_id": columns["d"], "score": columns["v"]})
    run, qrels = Run.from_dict(run_dict), Qrels.from_dict(qrels_dict)
    with tempfile.TemporaryDirectory(prefix="bench_io_") as tmp:
        folder = Path(tmp)
        run.to_trec(folder / "run.trec")
        qrels.to_trec(folder / "qrels.trec")
        run.to_json(folder / "run.json")
        operations: dict[str, Callable[[], Any]] = {
            "Run.from_dict": lambda: Run.from_dict(run_dict),
            "Qrels.from_dict": lambda: Qrels.from_dict(qrels_dict),
            "Run.from_trec": lambda: Run.from_trec(folder / "run.trec"),
            "Qrels.from_trec": lambda: Qrels.from_trec(folder / "qrels.trec"),
            "Run.from_df": lambda: Run.from_df(frame),
            "Run.from_json (json.load included)": lambda: Run.from_json(folder / "run.json"),
            "Run.to_trec": lambda: run.to_trec(folder / "out.trec"),
            "Qrels.to_trec": lambda: qrels.to_trec(folder / "out.qrels"),
            "Run.to_dict": run.to_dict,
        }
        sizes = {name: (folder / name).stat().st_size / 2**20 for name in ("run.trec", "qrels.trec")}
        for fn in operations.values():  # warm the kernels
            fn()
        results = {name: best(fn, args.repeat) for name, fn in operations.items()}
    n = args.queries * args.depth
    print(f"{n:,} entries; TREC files: run {sizes['run.trec']:.0f} MiB, qrels {sizes['qrels.trec']:.0f} MiB; "
          f"{len(run.doc_vocab):,} distinct document ids; best of {args.repeat}\n")  # fmt: skip
    print(f"| operation ({n:,} entries) | CPU time | wall time |\n|---|---:|---:|")
    for name, (cpu, wall) in results.items():
        print(f"| `{name}` | {cpu:.2f} s | {wall:.2f} s |")
    print("\n" + json.dumps({name: {"cpu_s": c, "wall_s": w} for name, (c, w) in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
