"""Local judge throughput: answer_relevancy (two texts a sample) on N distinct samples, empty caches.

    python benchmarks/bench_local_judge.py [--samples 20000] [--metric answer_relevancy]

Prints samples/s for the local judge through `evaluate_rag` (cache in a fresh temporary folder, so every
text is embedded once), next to the bare embedder's texts/s on the same texts: the ceiling the judge's
orchestration should approach. Run it against an older checkout (PYTHONPATH) for a before/after figure.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

WORDS = [
    "index",
    "query",
    "vector",
    "cache",
    "server",
    "latency",
    "retrieval",
    "answer",
    "context",
    "sentence",
    "model",
    "token",
    "batch",
    "config",
    "dataset",
    "metric",
    "judge",
    "prompt",
    "schema",
    "report",
    "gate",
    "baseline",
    "python",
    "function",
    "module",
    "class",
]


def make_samples(n: int, seed: int = 7) -> list[dict[str, object]]:
    rng = random.Random(seed)
    samples = []
    for i in range(n):
        question = f"How does the {rng.choice(WORDS)} {rng.choice(WORDS)} handle {rng.choice(WORDS)} {i}?"
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))) + f" ({i})."
        samples.append({"id": f"s{i}", "question": question, "answer": answer, "contexts": ["x."]})
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--metric", default="answer_relevancy")
    args = parser.parse_args()

    from ragmetrics.embeddings.minilm import MiniLMEmbedder
    from ragmetrics.judge.backends.local import LocalJudge
    from ragmetrics.judge.cache import VerdictCache
    from ragmetrics.judge.evaluate import evaluate_rag

    samples = make_samples(args.samples)
    texts = [str(t) for s in samples for t in (s["question"], s["answer"])]  # the judge's own mix
    bare = MiniLMEmbedder(cache_size=0)
    asyncio.run(bare.embed(texts[:64]))  # load the model outside the timing
    probe = texts[: min(len(texts), 4000)]
    start = time.perf_counter()
    asyncio.run(bare.embed(probe))
    bare_rate = len(probe) / (time.perf_counter() - start)

    with tempfile.TemporaryDirectory() as tmp:
        judge = LocalJudge(MiniLMEmbedder(), cache=VerdictCache(Path(tmp) / "verdicts.sqlite"))
        asyncio.run(judge._embedder.embed(["warm up"]))  # model load outside the timing
        start = time.perf_counter()
        result = evaluate_rag(samples, [args.metric], judge, progress=False)
        elapsed = time.perf_counter() - start
    failures = len(result.failures)
    print(
        f"local judge, {args.metric}, {args.samples} samples: {elapsed:.1f} s, "
        f"{args.samples / elapsed:.0f} samples/s ({failures} failures)"
    )
    print(
        f"bare embedder: {bare_rate:.0f} texts/s = {bare_rate / 2:.0f} samples/s at two texts a sample; "
        f"the judge reaches {args.samples / elapsed / (bare_rate / 2):.0%} of that"
    )


if __name__ == "__main__":
    main()
