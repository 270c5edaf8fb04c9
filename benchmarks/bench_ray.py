"""The Ray engine against the local engine: judge throughput and retrieval over a partitioned run.

    python benchmarks/bench_ray.py [--samples 20000] [--lines 10000000] [--skip-judge] [--skip-retrieval]

Judge: the local judge (answer_relevancy, two texts a sample, fresh caches) on N distinct samples, in this
process and on a local Ray cluster with 1 and 2 workers. Retrieval: a run of `--lines` lines (100 documents a
query) written as 20 Parquet partitions, scored by the local engine (the whole run in one process) and by
`evaluate_partitions` on clusters of 1 and 2 CPUs; the peak resident memory of the largest Ray worker is
sampled while it runs. Prints one line per configuration and the ratios; docs/scale.md records a run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

METRICS = ["ndcg@10", "map", "recall@100", "mrr"]


class PeakRss:
    """Samples the resident memory of this machine's Ray worker processes until stopped."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            for proc in psutil.process_iter(["cmdline", "memory_info"]):
                cmd = " ".join(proc.info.get("cmdline") or [])
                mem = proc.info.get("memory_info")
                if mem is not None and ("ray::" in cmd or "default_worker" in cmd):
                    self.peak_mb = max(self.peak_mb, mem.rss / 2**20)
            time.sleep(0.2)


def bench_judge(samples_n: int) -> None:
    from bench_local_judge import make_samples

    from ragmetrics.engines import LocalEngine
    from ragmetrics.engines.ray import RayEngine
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.settings import JudgeSettings

    samples = [RagSample.model_validate(s) for s in make_samples(samples_n)]
    rates: dict[str, float] = {}
    for label, workers in (("local engine", 0), ("ray, 1 worker", 1), ("ray, 2 workers", 2)):
        with tempfile.TemporaryDirectory() as tmp:
            settings = JudgeSettings(backend="local", cache_path=Path(tmp) / "v.sqlite")
            engine: Any = (
                LocalEngine() if not workers else RayEngine(workers=workers, batch_size=500, num_cpus=2)
            )
            session = engine.judge_session(settings)
            try:
                # Load the model in every worker outside the timing (one small batch each).
                session.score(
                    samples[: max(1, workers) * 2], ["answer_relevancy"], name="warm", progress=False
                )
                start = time.perf_counter()
                result = session.score(samples, ["answer_relevancy"], name="bench", progress=False)
                elapsed = time.perf_counter() - start
            finally:
                session.close()
                engine.close()
            rates[label] = samples_n / elapsed
            print(f"judge  {label:<16} {samples_n} samples: {elapsed:6.1f} s  {rates[label]:6.0f} samples/s "
                  f"({len(result.failures)} failures)")  # fmt: skip
    base = rates["local engine"]
    print("judge  ratios to the local engine: " + ", ".join(f"{k} {v / base:.2f}x" for k, v in rates.items()))


def bench_retrieval(lines: int) -> None:
    import numpy as np
    import pandas as pd

    from ragmetrics.engines.ray import evaluate_partitions
    from ragmetrics.engines.ray.cluster import connect, disconnect
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run

    per_query = 100
    queries = lines // per_query
    rng = np.random.default_rng(3)
    qids = np.repeat(np.array([f"q{i:07d}" for i in range(queries)], dtype=object), per_query)
    docs = np.array([f"d{i}" for i in rng.integers(0, 1_000_000, size=lines)], dtype=object)
    scores = rng.random(lines)
    frame = pd.DataFrame({"query_id": qids, "doc_id": docs, "score": scores}).drop_duplicates(
        ["query_id", "doc_id"]
    )
    rel = frame.groupby("query_id").head(5)
    qrels = Qrels.from_df(
        pd.DataFrame({"query_id": rel["query_id"], "doc_id": rel["doc_id"], "relevance": 1}),
        score_col="relevance",
    )
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, part in enumerate(np.array_split(np.arange(len(frame)), 20)):
            files.append(Path(tmp) / f"part-{i:02d}.parquet")
            frame.iloc[part].to_parquet(files[-1], index=False)
        print(f"retrieval: {len(frame)} run lines, {queries} queries, 20 partitions")
        start = time.perf_counter()
        run = Run.from_df(frame, name="big")
        local = evaluate(qrels, run, METRICS, name="big")
        local_s = time.perf_counter() - start
        print(f"retrieval local engine (read frame + score): {local_s:6.1f} s")
        del run
        timings = {"local engine": local_s}
        for cpus in (1, 2):
            started = connect(None, cpus)
            try:
                with PeakRss() as rss:
                    start = time.perf_counter()
                    result = evaluate_partitions(qrels, files, METRICS, name="big", shards=40)
                    elapsed = time.perf_counter() - start
            finally:
                disconnect(started)
            same = all(abs(result.aggregate[m] - local.aggregate[m]) < 1e-12 for m in METRICS)  # type: ignore[operator]
            timings[f"ray {cpus} cpu"] = elapsed
            print(f"retrieval ray, {cpus} CPU(s), 40 shards: {elapsed:6.1f} s, peak worker RSS {rss.peak_mb:,.0f} MB, "
                  f"means equal: {same}")  # fmt: skip
        print(
            "retrieval ratios (time / local): "
            + ", ".join(f"{k} {v / local_s:.2f}x" for k, v in timings.items())
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--skip-judge", action="store_true")
    parser.add_argument("--skip-retrieval", action="store_true")
    args = parser.parse_args()
    if not args.skip_judge:
        bench_judge(args.samples)
    if not args.skip_retrieval:
        bench_retrieval(args.lines)


if __name__ == "__main__":
    main()
