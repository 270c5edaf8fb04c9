"""The first minutes of a new user: CLI calls on a small qrels/run pair, and the quickstart with empty caches.

    python benchmarks/bench_first_run.py [--skip-quickstart]

Prints, each the median of a few runs in fresh processes:
- `ragmetrics retrieval` on a 3-query qrels/run pair with an empty numba cache (the first call after install)
  and again with the cache as the first call left it, next to the same evaluation with pytrec_eval and ranx;
- `ragmetrics run configs/quickstart.yaml` with an empty verdict cache and an empty numba cache (once: it is
  the slow one), and a rerun with both caches warm.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d4 1\nq3 0 d5 1\nq3 0 d6 3\n"
RUN = "q1 Q0 d1 1 0.9 r\nq1 Q0 d7 2 0.5 r\nq2 Q0 d4 1 0.3 r\nq3 Q0 d6 1 0.8 r\nq3 Q0 d9 2 0.2 r\n"

PYTREC = """
import pytrec_eval
def read(path, run):
    out = {}
    for line in open(path):
        p = line.split()
        if run: out.setdefault(p[0], {})[p[2]] = float(p[4])
        else: out.setdefault(p[0], {})[p[2]] = int(p[3])
    return out
q, r = read(QRELS_PATH, False), read(RUN_PATH, True)
print(pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut_10", "map"}).evaluate(r))
"""
RANX = """
from ranx import Qrels, Run, evaluate
print(evaluate(Qrels.from_file(QRELS_PATH, kind="trec"), Run.from_file(RUN_PATH, kind="trec"), ["ndcg@10", "map"]))
"""


def timed(command: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def median_of(n: int, command: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    return statistics.median(timed(command, env, cwd) for _ in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skip-quickstart", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="ragmetrics-first-run-") as tmp:
        work = Path(tmp)
        qrels, run = work / "qrels.txt", work / "run.txt"
        qrels.write_text(QRELS, encoding="utf-8")
        run.write_text(RUN, encoding="utf-8")
        numba_cache = work / "numba-cache"
        env = {**os.environ, "NUMBA_CACHE_DIR": str(numba_cache)}
        cli = [py, "-m", "ragmetrics", "retrieval", str(qrels), str(run), "-m", "ndcg@10", "map"]
        first = timed(cli, env)
        warm = median_of(args.repeat, cli, env)
        rows = [("ragmetrics retrieval, first call after install (empty numba cache)", first),
                ("ragmetrics retrieval, later calls", warm)]  # fmt: skip
        for name, script in (("pytrec_eval", PYTREC), ("ranx", RANX)):
            code = script.replace("QRELS_PATH", repr(str(qrels))).replace("RUN_PATH", repr(str(run)))
            try:
                rows.append(
                    (
                        f"{name}, same evaluation in a fresh process",
                        median_of(args.repeat, [py, "-c", code], env),
                    )
                )
            except SystemExit as exc:
                rows.append((f"{name}: not available ({str(exc).splitlines()[0][:60]})", float("nan")))
        if not args.skip_quickstart:
            home = work / "quickstart"
            shutil.copytree(ROOT / "configs", home / "configs")
            config = home / "configs" / "quickstart.yaml"
            quick = [py, "-m", "ragmetrics", "run", str(config), "--no-progress"]
            rows.append(("quickstart run step, empty verdict and numba caches", timed(quick, env, cwd=home)))
            rows.append(("quickstart rerun, caches warm", timed(quick, env, cwd=home)))
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:6.2f} s")
    ratio = rows[1][1] / rows[2][1] if len(rows) > 2 and rows[2][1] == rows[2][1] else float("nan")
    print(f"later calls vs pytrec_eval: {ratio:.1f}x its time")


if __name__ == "__main__":
    main()
