"""Latency and throughput of the bundled MiniLM embedder on this machine.

    .venv/bin/python benchmarks/bench_embeddings.py [--repeat 3] [--json]

1. Cold start: a fresh interpreter imports ragmetrics.embeddings, builds the embedder and embeds one
   sentence; timed from before the import to after the vectors return (ONNX session and tokenizer load
   included), as a user's first call would see it. Run --repeat times, each in a new process.
2. Throughput: 1,000 distinct short sentences (6-12 words), embedded with the cache off, timed both
   warm (session already loaded) and cold (load included, in a fresh process).
Targets from the issue: first call under 2 s, 1,000 short sentences under 4 s. The CPU seconds of the warm
run and the load average are printed too: on a shared machine the wall time depends on what else runs,
the CPU time much less.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SUBJECTS = ["The json module", "A pathlib.Path", "The asyncio event loop", "A csv.writer", "The re module",
             "An itertools chain", "The logging root logger", "A sqlite3 cursor", "The heapq module",
             "A dataclass", "The subprocess module", "A threading.Lock"]  # fmt: skip
_VERBS = [
    "parses",
    "returns",
    "writes",
    "reads",
    "caches",
    "validates",
    "sorts",
    "yields",
    "locks",
    "formats",
]
_OBJECTS = ["a list of records", "the text of a file", "every matching line", "the numbers in order",
            "a dictionary of counts", "one row at a time"]  # fmt: skip
_ENDINGS = ["", " quickly", " on every call", " without copying"]


def short_sentences(n: int = 1000) -> list[str]:
    combos = itertools.product(_SUBJECTS, _VERBS, _OBJECTS, _ENDINGS)
    out = [f"{s} {v} {o}{e}." for s, v, o, e in itertools.islice(combos, n)]
    if len(out) < n:
        raise ValueError(f"only {len(out)} distinct sentences available")
    return out


_COLD = """
import time, json, sys
t0 = time.perf_counter()
from ragmetrics.embeddings import MiniLMEmbedder
e = MiniLMEmbedder(cache_size=0)
e.encode(["How do I read a file line by line?"])
t1 = time.perf_counter()
texts = json.loads(sys.stdin.read())
if texts:
    e.encode(texts)
t2 = time.perf_counter()
print(json.dumps({"first_call_s": t1 - t0, "batch_s": t2 - t1}))
"""


def _fresh(texts: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _COLD], input=json.dumps(texts), capture_output=True, text=True,
                         check=True, env=env, cwd=ROOT)  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from ragmetrics.embeddings import MiniLMEmbedder, physical_cores

    texts = short_sentences()
    first_calls = [_fresh([])["first_call_s"] for _ in range(args.repeat)]
    cold_thousand = [sum(_fresh(texts).values()) for _ in range(args.repeat)]
    embedder = MiniLMEmbedder(cache_size=0)
    embedder.encode(texts[:8])
    warm = []
    warm_cpu = []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        embedder.encode(texts)
        warm.append(time.perf_counter() - t0)
        warm_cpu.append(time.process_time() - c0)
    figures = {
        "cpu_threads": physical_cores(),
        "first_call_s_median": round(statistics.median(first_calls), 3),
        "first_call_s_max": round(max(first_calls), 3),
        "thousand_short_warm_s_median": round(statistics.median(warm), 3),
        "thousand_short_cold_s_median": round(statistics.median(cold_thousand), 3),
        "sentences_per_s_warm": round(len(texts) / statistics.median(warm), 1),
        "thousand_short_warm_cpu_s_median": round(statistics.median(warm_cpu), 3),
        "load_average_1min_after": round(os.getloadavg()[0], 2),
    }
    ok = figures["first_call_s_max"] < 2.0 and figures["thousand_short_cold_s_median"] < 4.0
    if args.json:
        print(json.dumps({**figures, "targets_met": ok}, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:32s} {value}")
        print("targets (first call < 2 s, 1,000 short sentences < 4 s):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
