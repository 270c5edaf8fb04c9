"""Two nights on one unchanged corpus: the first embeds and indexes it, the second reads the persisted index.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_index_nights.py [--chunks 10000] [--questions 50] [--before]

The corpus is `bench_dry_run.docstring_paragraphs` (docstring paragraphs of the installed numpy, scipy, pandas,
pydantic and scikit-learn, read with `ast`), the night `bench_dry_run.write_night`'s: three reference retrievers
(bm25, dense, bm25_embedding_rerank), a generator and the local judge on two metrics, with the default
`index_dir` (.ragmetrics-cache/index beside the config). Each night is its own `ragmetrics run` process, as cron
starts it, so nothing is shared between them but the folder. Printed per night: wall time, the chunks the
retrievers sent to the model (the report's `work.actual.chunks_embedded` and each retriever's count), and the
night's seconds per stage. `--before` adds a night with `index_dir: null` (every night embeds everything, as
before the persisted index), run after the two.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dry_run import docstring_paragraphs, write_night

REPO = Path(__file__).resolve().parents[1]


def night(config: Path) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragmetrics", "run", str(config), "--no-progress"],
                          cwd=config.parent, capture_output=True, text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"night failed ({done.returncode}): {done.stderr[-2000:]}")
    reports = sorted((config.parent / "out").glob("*/report.json"))
    report = json.loads(reports[-1].read_text(encoding="utf-8"))
    return wall, report["metadata"]["nightly"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--before", action="store_true", help="also a night without the persisted index")
    args = parser.parse_args()
    corpus = docstring_paragraphs(args.chunks)
    print(f"corpus: {len(corpus):,} docstring paragraphs ({sum(map(len, corpus)):,} characters); "
          f"{args.questions} questions; three retrievers, a generator, the local judge")  # fmt: skip
    print("| night | wall (s) | chunks embedded | per retriever (embedded) | stages (s) |")
    print("|---|---:|---:|:---|:---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = write_night(folder, corpus, args.questions)
        labels = ["first (index built)", "second (same corpus)"]
        if args.before:
            raw = yaml.safe_load(config.read_text(encoding="utf-8"))
            raw["index_dir"] = None
            before = folder / "night_no_index.yaml"
            before.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
        for label, path in [*zip(labels, [config, config], strict=True),
                            *([("no persisted index (before)", before)] if args.before else [])]:  # fmt: skip
            wall, nightly = night(path)
            work = nightly.get("work") or {}
            actual = work.get("actual") or {}
            retrievers = nightly.get("retrievers") or {}
            per = ", ".join(f"{n} {t.get('embedded')}" for n, t in retrievers.items())
            stages = ", ".join(f"{k} {v:.1f}" for k, v in (actual.get("seconds") or {}).items())
            print(f"| {label} | {wall:.1f} | {actual.get('chunks_embedded')} | {per} | {stages} |", flush=True)


if __name__ == "__main__":
    main()
