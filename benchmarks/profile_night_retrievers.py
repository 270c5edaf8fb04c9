"""Where a night's reference retrievers spend their time: cProfile over the three built-in retrievers.

    PYTHONPATH=. .venv/bin/python benchmarks/profile_night_retrievers.py [--chunks 2000] [--questions 100]
        [--index-dir DIR]

The corpus is `bench_dry_run.docstring_paragraphs` (docstring paragraphs of the installed numpy, scipy, pandas,
pydantic and scikit-learn, read with `ast`); questions are the first ten words of evenly spread paragraphs.
Each retriever (bm25, dense, bm25_embedding_rerank) is built and searched as a night does (`timed_search`)
under cProfile; the table gives its index and search seconds, and the functions that took the most of them
(cumulative, in ragmetrics, onnxruntime, tokenizers, bm25s and numpy). With `--index-dir` the persisted index
(`ragmetrics.index`) is used; run it twice with the same folder to profile a second night.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dry_run import docstring_paragraphs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    from ragmetrics import retrievers

    texts = docstring_paragraphs(args.chunks)
    passages = [{"id": f"p{i}", "text": t} for i, t in enumerate(texts)]
    step = len(texts) / args.questions
    queries = [(f"q{k}", " ".join(texts[int(k * step)].split()[:10]) + "?") for k in range(args.questions)]
    print(f"corpus: {len(passages)} docstring paragraphs, {sum(map(len, texts)):,} characters; "
          f"{len(queries)} questions")  # fmt: skip
    extra = {"index_dir": args.index_dir} if args.index_dir is not None else {}
    for kind in ("bm25", "dense", "bm25_embedding_rerank"):
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        _, timing = retrievers.timed_search(kind, {}, passages, queries, **extra)
        profile.disable()
        wall = time.perf_counter() - started
        searched = sum(timing.search_s.values())
        embedded = getattr(timing, "embedded", None)
        print(f"\n## {kind}: {wall:.1f} s (index {timing.index_s:.1f} s, search {searched:.1f} s"
              + (f", embedded {embedded}" if embedded is not None else "") + ")")  # fmt: skip
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).sort_stats("cumulative")
        stats.print_stats(r"ragmetrics|onnxruntime|tokenizers|bm25s|numpy", args.top)
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-4000:])


if __name__ == "__main__":
    main()
