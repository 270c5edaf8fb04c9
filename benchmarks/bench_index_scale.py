"""Persisted indexes at 10k, 100k and 1M chunks beside what teams use instead, in one run.

    PYTHONPATH=. python benchmarks/bench_index_scale.py [--sizes 10000 100000 1000000] [--queries 100]
        [--workdir DIR] [--tools ...]

Needs the dev extra's peers (bm25s, rank-bm25, faiss-cpu); a missing one is skipped and said. Each tool runs in
its own process, so its peak resident memory (ru_maxrss) is its own; memory-mapped index pages a process
touched count in its RSS although the kernel can drop them.

Corpus: synthetic, written once per size as JSONL under --workdir: chunks of 30-90 words drawn from a
200,000-word vocabulary with Zipf-like frequencies (exponent 1.07, seeded), ids c0..cN. BM25 questions are four
words of middling frequency. Dense vectors are NOT embeddings of these texts (MiniLM embeds ~50 chunks a second
on this machine: a million would take hours): each text's vector is drawn from its hash, around one of 1,000
cluster centres (384 dimensions, unit length), and questions are noisy copies of random chunks' vectors. Our
dense "build" is the persisted index's own work (storing, gathering, checksumming), the synthetic vectors'
generation timed apart and left out; FAISS is given the same vectors in memory.

Rows:
- ragmetrics BM25 (`ragmetrics.index.bm25`): built streaming from the file; "reopen" is a second night's cost
  (hash the corpus, open and verify the stored index);
- bm25s (texts read into a list, tokenised, indexed; `retrieve` k=100) and rank_bm25 (BM25Okapi over
  lower-cased split words; `get_scores` then the top 100), both in memory, rebuilt every night;
- ragmetrics dense exact (memory-mapped, blockwise), FAISS IndexFlatIP (in memory), and FAISS IndexHNSWFlat
  (M=32, efConstruction=80, efSearch=128), which is ragmetrics's `search: hnsw`, with its recall@10 and
  recall@100 against exact search on the same questions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
VOCAB, DIM, CENTRES, K = 200_000, 384, 1000, 100
TOOLS = ("ours_bm25", "bm25s", "rank_bm25", "ours_dense", "faiss_flat", "faiss_hnsw")


def _word(i: int) -> str:
    return "w" + np.base_repr(i, 36).lower()


def write_corpus(path: Path, size: int, seed: int = 7) -> None:
    if path.exists() and sum(1 for _ in path.open("rb")) == size:
        return
    words = np.array([_word(i) for i in range(VOCAB)], dtype=object)
    cdf = np.cumsum(1.0 / np.arange(1, VOCAB + 1) ** 1.07)
    cdf /= cdf[-1]
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for start in range(0, size, 10_000):
            rng = np.random.default_rng([seed, start])
            count = min(10_000, size - start)
            lengths = rng.integers(30, 91, size=count)
            tokens = words[np.searchsorted(cdf, rng.random(int(lengths.sum())))]
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            out.write("".join(json.dumps({"id": f"c{start + i}", "text": " ".join(tokens[offsets[i]:offsets[i + 1]])})
                              + "\n" for i in range(count)))  # fmt: skip
    tmp.replace(path)


def chunks(path: Path) -> Iterator[tuple[str, str]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            yield row["id"], row["text"]


def bm25_queries(n: int) -> list[str]:
    rng = np.random.default_rng(11)
    return [" ".join(_word(int(i)) for i in rng.integers(50, 5000, size=4)) for _ in range(n)]


class SyntheticEmbedder:
    """A text's vector from its hash: near one of CENTRES centres (module docstring). Times itself."""

    name = "synthetic-clustered-384"

    def __init__(self) -> None:
        self.centres = np.random.default_rng(5).standard_normal((CENTRES, DIM)).astype(np.float32)
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    def encode(self, texts: list[str]) -> np.ndarray:
        started, cpu = time.perf_counter(), time.process_time()
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            rng = np.random.default_rng(seed)
            vec = self.centres[seed % CENTRES] + 0.9 * rng.standard_normal(DIM).astype(np.float32)
            out[i] = vec / np.linalg.norm(vec)
        self.seconds += time.perf_counter() - started
        self.cpu_seconds += time.process_time() - cpu
        return out


def dense_queries(vectors: np.ndarray, n: int) -> np.ndarray:
    rng = np.random.default_rng(13)
    picked = np.asarray(vectors[rng.integers(0, vectors.shape[0], size=n)], dtype=np.float32)
    noisy = picked + 0.05 * rng.standard_normal(picked.shape).astype(np.float32)
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def all_vectors(path: Path, embedder: SyntheticEmbedder) -> np.ndarray:
    rows: list[np.ndarray] = []
    batch: list[str] = []
    for _, text in chunks(path):
        batch.append(text)
        if len(batch) == 4096:
            rows.append(embedder.encode(batch))
            batch = []
    if batch:
        rows.append(embedder.encode(batch))
    return np.concatenate(rows)


def worker(tool: str, corpus: Path, root: Path, queries: int) -> dict[str, object]:
    """One tool on one corpus: build seconds, mean query ms, and more (see main)."""
    result: dict[str, object] = {}
    if tool == "ours_bm25":
        from ragmetrics.index import build_bm25, close_all

        started, cpu = time.perf_counter(), time.process_time()
        index, _ = build_bm25(root, lambda: chunks(corpus))
        result["build_s"] = time.perf_counter() - started
        result["build_cpu_s"] = time.process_time() - cpu
        close_all()
        started, cpu = time.perf_counter(), time.process_time()
        index, counts = build_bm25(root, lambda: chunks(corpus))
        result["reopen_s"] = time.perf_counter() - started
        result["reopen_cpu_s"] = time.process_time() - cpu
        assert not counts.built
        qs = bm25_queries(queries)
        started, cpu = time.perf_counter(), time.process_time()
        for q in qs:
            index.search(q, K)
        result["query_ms"] = (time.perf_counter() - started) / len(qs) * 1000
        result["query_cpu_ms"] = (time.process_time() - cpu) / len(qs) * 1000
    elif tool == "bm25s":
        import bm25s

        started, cpu = time.perf_counter(), time.process_time()
        texts = [t for _, t in chunks(corpus)]
        model = bm25s.BM25(method="lucene")
        model.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        result["build_s"] = time.perf_counter() - started
        result["build_cpu_s"] = time.process_time() - cpu
        del texts
        qs = bm25_queries(queries)
        started, cpu = time.perf_counter(), time.process_time()
        for q in qs:
            model.retrieve(bm25s.tokenize([q], stopwords="en", show_progress=False), k=K, show_progress=False)
        result["query_ms"] = (time.perf_counter() - started) / len(qs) * 1000
        result["query_cpu_ms"] = (time.process_time() - cpu) / len(qs) * 1000
    elif tool == "rank_bm25":
        from rank_bm25 import BM25Okapi

        started, cpu = time.perf_counter(), time.process_time()
        model = BM25Okapi([t.lower().split() for _, t in chunks(corpus)])
        result["build_s"] = time.perf_counter() - started
        result["build_cpu_s"] = time.process_time() - cpu
        qs = bm25_queries(queries)
        started, cpu = time.perf_counter(), time.process_time()
        for q in qs:
            scores = model.get_scores(q.lower().split())
            np.argpartition(-scores, K)[:K]
        result["query_ms"] = (time.perf_counter() - started) / len(qs) * 1000
        result["query_cpu_ms"] = (time.process_time() - cpu) / len(qs) * 1000
    elif tool == "ours_dense":
        from ragmetrics.index import build_dense, close_all

        embedder = SyntheticEmbedder()
        started, cpu = time.perf_counter(), time.process_time()
        index, counts = build_dense(root, lambda: chunks(corpus), embedder)
        result["build_s"] = time.perf_counter() - started - embedder.seconds
        result["build_cpu_s"] = time.process_time() - cpu - embedder.cpu_seconds
        result["vectors_s"] = embedder.seconds
        close_all()
        started, cpu = time.perf_counter(), time.process_time()
        index, counts = build_dense(root, lambda: chunks(corpus), SyntheticEmbedder())
        result["reopen_s"] = time.perf_counter() - started
        result["reopen_cpu_s"] = time.process_time() - cpu
        assert counts.embedded == 0
        qs = dense_queries(index.vectors, queries)
        started, cpu = time.perf_counter(), time.process_time()
        exact = [[p for p, _ in index.search(q, K)] for q in qs]
        result["query_ms"] = (time.perf_counter() - started) / len(qs) * 1000
        result["query_cpu_ms"] = (time.process_time() - cpu) / len(qs) * 1000
        (root / "exact.json").write_text(json.dumps(exact), encoding="utf-8")
    elif tool in ("faiss_flat", "faiss_hnsw"):
        import faiss

        vectors = all_vectors(corpus, SyntheticEmbedder())
        qs = dense_queries(vectors, queries)
        started, cpu = time.perf_counter(), time.process_time()
        if tool == "faiss_flat":
            index = faiss.IndexFlatIP(DIM)
        else:
            index = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 80
        index.add(vectors)
        result["build_s"] = time.perf_counter() - started
        result["build_cpu_s"] = time.process_time() - cpu
        if tool == "faiss_hnsw":
            index.hnsw.efSearch = 128
        found = []
        started, cpu = time.perf_counter(), time.process_time()
        for q in qs:
            found.append(index.search(q.reshape(1, -1), K)[1][0].tolist())
        result["query_ms"] = (time.perf_counter() - started) / len(qs) * 1000
        result["query_cpu_ms"] = (time.process_time() - cpu) / len(qs) * 1000
        exact_file = root / "exact.json"
        if tool == "faiss_hnsw" and exact_file.exists():
            exact = json.loads(exact_file.read_text(encoding="utf-8"))
            for k in (10, 100):
                result[f"recall@{k}"] = float(np.mean([len(set(f[:k]) & set(e[:k])) / k for f, e in zip(found, exact, strict=True)]))
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    parser.add_argument("--workdir", type=Path, default=None, help="where corpora and indexes go (default: a temp dir)")
    parser.add_argument("--rank-bm25-max", type=int, default=1_000_000, help="largest size rank_bm25 runs at")
    parser.add_argument("--worker", nargs=3, metavar=("TOOL", "CORPUS", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tool, corpus, root = args.worker
        print(json.dumps(worker(tool, Path(corpus), Path(root), args.queries)))
        return
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-index-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print("| chunks | tool | build: wall s (CPU s) | second night: reopen, wall s (CPU s) | query: wall ms (CPU ms), "
          "k=100 | peak RSS (MB) | recall@10 / @100 vs exact |")  # fmt: skip
    print("|---:|:---|---:|---:|---:|---:|:---|")
    for size in args.sizes:
        corpus = workdir / f"corpus-{size}.jsonl"
        started = time.perf_counter()
        write_corpus(corpus, size)
        print(f"<!-- corpus of {size:,} chunks written in {time.perf_counter() - started:.0f} s -->", flush=True)
        root = workdir / f"index-{size}"
        for tool in args.tools:
            if tool == "rank_bm25" and size > args.rank_bm25_max:
                print(f"| {size:,} | rank_bm25 | not run above {args.rank_bm25_max:,} chunks (--rank-bm25-max) | | | | |")
                continue
            command = [sys.executable, __file__, "--queries", str(args.queries), "--worker", tool, str(corpus), str(root)]
            env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # one question, one core
            done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
            if done.returncode != 0:
                reason = (done.stderr.strip().splitlines() or ["failed"])[-1][:120]
                print(f"| {size:,} | {tool} | not run: {reason} | | | | |", flush=True)
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            recall = f"{r['recall@10']:.3f} / {r['recall@100']:.3f}" if "recall@10" in r else ""
            reopen = f"{r['reopen_s']:.1f} ({r['reopen_cpu_s']:.1f})" if "reopen_s" in r else "rebuilt every night"
            print(f"| {size:,} | {tool} | {r['build_s']:.1f} ({r['build_cpu_s']:.1f}) | {reopen} | "
                  f"{r['query_ms']:.2f} ({r['query_cpu_ms']:.2f}) | {r['peak_rss_mb']:,.0f} | {recall} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
