"""Local judge on real-sized data: time and peak memory, empty caches.

    python benchmarks/bench_local_judge_real.py [--metrics a,b,...] [--before /path/to/old/checkout]

The case is the built-in collection's 64 RAG samples (3 retrieved passages of about 1,400 characters each, a
reference and an answer) judged for five metrics by the default local judge with no verdict or embedding
cache (so no shipped seed vectors either: every text goes through the model). Each measurement runs in a
fresh interpreter so its peak resident memory is its own. Then `examples/score_from_python.py`, the
README's Python walk-through, end to end. With `--before`, the same two measurements for another checkout
(PYTHONPATH), and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_METRICS = "context_precision,context_recall,context_relevancy,faithfulness,answer_relevancy"

JUDGE_CASE = """
import json, resource, sys, time
from ragmetrics import JudgeSettings, evaluate_rag, make_judge
from ragmetrics.collection import load_samples
samples = load_samples()
judge = make_judge(JudgeSettings(backend="local", max_concurrency=1, cache_path=None))
start = time.perf_counter()
result = evaluate_rag(samples, sys.argv[1].split(","), judge, name="bench", max_concurrency=1, progress=False)
seconds = time.perf_counter() - start
failed = len(result.failures)
chars = sum(len(c) for s in samples for c in s.context_list)
print(json.dumps({"seconds": seconds, "samples": len(samples), "context_chars": chars, "failed": failed,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

EXAMPLE_CASE = """
import json, resource, runpy, time, contextlib, io
start = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    runpy.run_path(sys_path, run_name="__main__")
print(json.dumps({"seconds": time.perf_counter() - start,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(code: str, pythonpath: Path, args: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=pythonpath,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"measurement failed in {pythonpath}:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def example(pythonpath: Path) -> dict[str, float]:
    script = pythonpath / "examples" / "score_from_python.py"
    return measure(f"sys_path = {str(script)!r}\n" + EXAMPLE_CASE, pythonpath, [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--metrics", default=DEFAULT_METRICS, help=f"comma-separated (default {DEFAULT_METRICS})"
    )
    parser.add_argument("--before", type=Path, help="another checkout to measure the same way, for ratios")
    args = parser.parse_args()
    checkouts = [("this checkout", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    rows = []
    for label, path in checkouts:
        judged = measure(JUDGE_CASE, path, [args.metrics])
        walk = example(path)
        rows.append((label, judged, walk))
        print(
            f"{label:14s} local judge, {judged['samples']:.0f} samples x {args.metrics.count(',') + 1} metrics "
            f"({judged['context_chars'] / 1000:.0f}k context characters): {judged['seconds']:.1f} s, "
            f"peak {judged['peak_mb']:.0f} MB, {judged['failed']:.0f} failed | "
            f"examples/score_from_python.py: {walk['seconds']:.1f} s, peak {walk['peak_mb']:.0f} MB",
            flush=True,
        )
    if len(rows) == 2:
        (_, now, walk_now), (_, old, walk_old) = rows
        print(
            f"ratio before/now: judge {old['seconds'] / now['seconds']:.1f}x faster, "
            f"{old['peak_mb'] / now['peak_mb']:.1f}x less memory; example "
            f"{walk_old['seconds'] / walk_now['seconds']:.1f}x faster"
        )


if __name__ == "__main__":
    main()
