"""Building a test set from a large corpus, offline: wall time and peak memory of `ragmetrics testset`.

    .venv/bin/python benchmarks/bench_testset_build.py [--chunks 100000] [--size 500] [--keep DIR]

The corpus is synthetic but shaped like chunked documentation: each chunk is a window of 3-8 consecutive
sentences of one of the built-in collection's passages (fixed seed), under that passage's title, as overlapping
chunkers make them (each ends with a section number, so the overlapping windows are distinct texts); a few
hundred exact duplicates and boilerplate footers are planted so the skipping runs
too. The command runs in its own process (so its peak
resident memory is measured alone) with the default settings: offline generator, local-judge checks on, no
pool. Goal (issue 39): <= 2 minutes and <= 1.5 GB peak for 100,000 chunks and 500 questions.

No other tool is run beside it: the peers' generators (RAGAS's TestsetGenerator, DeepEval's Synthesizer) need
an LLM for every question and produce no qrels, so there is nothing offline to compare against.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def make_corpus(path: Path, chunks: int, seed: int) -> None:
    from ragmetrics import collection
    from ragmetrics.judge.text.sentences import split_sentences

    rng = np.random.default_rng(seed)
    passages = [(p["title"], split_sentences(p["text"], "en")) for p in collection.load_passages()]
    passages = [(t, s) for t, s in passages if len(s) >= 3]
    sentences = [s for _, ss in passages for s in ss]
    footer = "Copyright 2026 Example Corp. All rights reserved. Terms of use and privacy policy apply here."
    with path.open("w", encoding="utf-8") as fh:
        for n in range(chunks):
            if n % 400 == 7:
                text = footer
            elif n % 500 == 11:
                text = "Duplicate chunk: " + sentences[n % len(sentences)]
            else:
                title, own = passages[int(rng.integers(len(passages)))]
                width = int(rng.integers(3, 9))
                start = int(rng.integers(0, max(1, len(own) - width + 1)))
                text = " ".join(own[start : start + width])
                # Chunkers cut one page many ways; a section number keeps these overlapping windows distinct.
                text += f" (See section {int(rng.integers(1, 10**6))}.)"
            fh.write(
                json.dumps({"id": f"c{n}", "title": title if n % 400 != 7 else "Footer", "text": text}) + "\n"
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="write the test set here instead of a temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragmetrics-bench-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        started = time.monotonic()
        make_corpus(corpus, args.chunks, args.seed)
        print(
            f"corpus: {args.chunks:,} chunks, {corpus.stat().st_size / 1e6:.0f} MB, made in "
            f"{time.monotonic() - started:.1f} s",
            file=sys.stderr,
        )
        out = args.keep or Path(tmp) / "testset"
        command = [
            sys.executable,
            "-m",
            "ragmetrics",
            "testset",
            str(corpus),
            "-o",
            str(out),
            "--size",
            str(args.size),
            "--seed",
            str(args.seed),
        ]
        started = time.monotonic()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        manifest = json.loads((out / "testset.json").read_text(encoding="utf-8"))
    print("| chunks | questions | seconds | peak RSS (MB) | skipped chunks | groups covered |")
    print("|---:|---:|---:|---:|---|---|")
    cov = manifest["coverage"]
    print(
        f"| {args.chunks:,} | {manifest['questions']} | {seconds:.1f} | {peak_mb:.0f} | "
        f"{manifest['chunks']['skipped']} | {cov['groups_with_questions']} of {cov['groups']} |"
    )
    print(f"goal: <= 120 s and <= 1536 MB: {'met' if seconds <= 120 and peak_mb <= 1536 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
