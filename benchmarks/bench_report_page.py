"""How heavy report.html is for a night with many runs and metrics, and how many of its plots it shows.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_report_page.py [--runs 5] [--queries 200] [--out DIR]

A night's report built from scores alone (no judge, no retriever): `--runs` runs over `--queries` questions
with four quality metrics, latency_s and cost (so the quality-against-cost panel is drawn), compared pairwise,
written by the night's own `write_artifacts` with plots. Prints the page's size, the plots it shows and where
they are (inline or files beside it) and the plot files' total. Run it with another checkout first on
PYTHONPATH for the "before" figures; `--out` keeps the folder to look at in a browser.
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
from pathlib import Path

QUALITY = ["ndcg@10", "recall@10", "faithfulness", "answer_relevancy"]


def night(runs: int, queries: int):  # type: ignore[no-untyped-def]
    from ragmetrics.comparison.pairs import compare_results
    from ragmetrics.schema import RunMetadata, RunResult

    rng = random.Random(7)
    metrics = [*QUALITY, "latency_s", "cost"]
    results = []
    for k in range(runs):
        per_query = {
            f"q{i:03d}": {
                **{m: min(1.0, max(0.0, rng.gauss(0.45 + 0.04 * k, 0.2))) for m in QUALITY},
                "latency_s": 0.3 + 0.2 * k + rng.random() * 0.1,
                "cost": 0.0004 * (k + 1) + rng.random() * 1e-4,
            }
            for i in range(queries)
        }
        result = RunResult(name=f"system {k} ({['bm25', 'dense', 'rerank', 'hybrid', 'team'][k % 5]})",
                           per_query=per_query,
                           metadata=RunMetadata(kind="mixed", metrics=metrics, num_queries=queries))  # fmt: skip
        result.recompute_aggregate()
        results.append(result)
    return compare_results(results, metrics, test="t", bootstrap_samples=1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from ragmetrics.nightly.artifacts import write_artifacts

    report = night(args.runs, args.queries)
    root = args.out or Path(tempfile.mkdtemp())
    started = time.perf_counter()
    folder, _ = write_artifacts(report, root, formats=["json", "html"], plots=True)
    took = time.perf_counter() - started
    page = (folder / "report.html").read_bytes()
    inline = page.count(b"data:image/png;base64,")
    files = sorted((folder / "plots").glob("*.png")) if (folder / "plots").is_dir() else []
    drawn = len(report.metrics) + len(report.comparisons) + 1
    capped = re.search(rb"the first \d+ of \d+ are shown", page)
    print(f"{args.runs} runs, {len(report.metrics)} metrics, {len(report.comparisons)} pairs, {args.queries} queries: "
          f"{drawn} plots to show")  # fmt: skip
    print(f"report.html {len(page) / 1e6:.2f} MB; plots shown: {inline} inline, {len(files)} files "
          f"({sum(f.stat().st_size for f in files) / 1e6:.2f} MB in plots/)"
          + (f"; page says: {capped.group(0).decode()}" if capped else "") + f"; written in {took:.1f} s")  # fmt: skip
    print(f"folder: {folder}")


if __name__ == "__main__":
    main()
