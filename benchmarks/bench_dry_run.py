"""How far `ragmetrics run --dry-run` is from what the night then takes, on corpora of a few sizes.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_dry_run.py [--sizes 500 2000 5000] [--questions 30]

A corpus nobody tuned for: docstring paragraphs of the libraries installed beside ragmetrics (numpy, scipy,
pandas, pydantic, scikit-learn), read with `ast` (nothing imported), split at blank lines, 80-1,500 characters,
deduplicated, in a fixed order. Questions are known-item: the first words of evenly spread paragraphs, each
relevant to its own. The night has the three reference retrievers (bm25, dense, bm25_embedding_rerank), a
generator (a Python callable that answers with the first context), and the local judge on two metrics, with
an empty output folder, so the dry run has no earlier night to time it by: everything it says is measured on
samples now.

For each size it prints the dry run's own wall time and its estimate (total and per stage) beside the night's
wall time and its measured seconds per stage. Run it with another checkout first on PYTHONPATH to get the
"before" figures (the API it calls, `estimate_night` and `run_pipeline`, is the same).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

PACKAGES = ("numpy", "scipy", "pandas", "pydantic", "sklearn")

GENERATOR = """
def generate(inputs):
    contexts = inputs["contexts"]
    return {"answer": contexts[0][:300] if contexts else "I don't know."}
"""


def docstring_paragraphs(limit: int) -> list[str]:
    """Up to `limit` distinct docstring paragraphs of PACKAGES, in a fixed order (package, file, position)."""
    import importlib.util

    seen: set[str] = set()
    out: list[str] = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*.py")):
            if "tests" in path.parts:
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef | ast.Module):
                    continue
                doc = ast.get_docstring(node)
                for block in (doc or "").split("\n\n"):
                    text = " ".join(block.split())
                    if 80 <= len(text) <= 1500 and text not in seen and not text.startswith((">>>", "--")):
                        seen.add(text)
                        out.append(text)
                        if len(out) >= limit:
                            return out
    return out


def write_night(folder: Path, paragraphs: list[str], questions: int) -> Path:
    """The corpus, its questions and the night's config in `folder`; returns the config's path."""
    with (folder / "passages.jsonl").open("w", encoding="utf-8") as fh:
        for i, text in enumerate(paragraphs):
            fh.write(json.dumps({"id": f"p{i}", "text": text}) + "\n")
    step = len(paragraphs) / questions
    with (folder / "qa.jsonl").open("w", encoding="utf-8") as fh:
        for k in range(questions):
            i = int(k * step)
            words = paragraphs[i].split()
            fh.write(json.dumps({"id": f"q{k}", "question": " ".join(words[:10]) + "?",
                                 "reference": paragraphs[i], "relevant_ids": [f"p{i}"]}) + "\n")  # fmt: skip
    (folder / "bench_generator.py").write_text(textwrap.dedent(GENERATOR), encoding="utf-8")
    config = {
        "name": "dry-run benchmark",
        "dataset": {"path": "qa.jsonl", "passages": "passages.jsonl"},
        "retrieval": {"metrics": ["ndcg@10", "recall@10"]},
        "runs": [
            {"source": "retriever", "retriever": "bm25", "name": "bm25"},
            {"source": "retriever", "retriever": "dense", "name": "dense"},
            {"source": "retriever", "retriever": "bm25_embedding_rerank", "name": "rerank"},
        ],
        "generator": {"target": "bench_generator:generate", "top_k": 3},
        "judge": {
            "backend": "local",
            "metrics": ["faithfulness", "context_recall"],
            "contexts_top_k": 3,
            "cache_path": str(folder / "verdicts.sqlite"),
        },
        "output": {"dir": str(folder / "out"), "plots": False, "formats": ["json"], "history": False},
        "pipeline_cache": str(folder / "pipeline_cache.sqlite"),
        "progress": False,
    }
    path = folder / "night.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _stages(seconds: dict[str, float]) -> str:
    return ", ".join(f"{stage} {value:.1f}" for stage, value in seconds.items()) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 5000])
    parser.add_argument("--questions", type=int, default=30)
    args = parser.parse_args()
    from ragmetrics.nightly.config import load_config
    from ragmetrics.nightly.estimate import estimate_night
    from ragmetrics.nightly.pipeline import run_pipeline

    corpus = docstring_paragraphs(max(args.sizes))
    print(f"corpus: {len(corpus)} docstring paragraphs of {', '.join(PACKAGES)}; {args.questions} questions")
    print("| passages | dry run took (s) | estimate (s) | night took (s) | estimate / night | estimated stages (s) | "
          "measured stages (s) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|:---|:---|")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            config_path = write_night(folder, corpus[:size], args.questions)
            sys.path.insert(0, str(folder))
            try:
                config = load_config(config_path)
                started = time.perf_counter()
                work = estimate_night(config)
                dry = time.perf_counter() - started
                started = time.perf_counter()
                outcome = run_pipeline(config, progress=False, log=lambda _: None)
                night = time.perf_counter() - started
            finally:
                sys.path.remove(str(folder))
            estimate = sum(work.estimate.seconds.values())
            nightly = outcome.report.metadata.nightly
            actual = nightly.work.actual.seconds if nightly and nightly.work and nightly.work.actual else {}
            print(f"| {min(size, len(corpus)):,} | {dry:.1f} | {estimate:.1f} | {night:.1f} | {estimate / night:.2f} | "
                  f"{_stages(work.estimate.seconds)} | {_stages(actual)} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
