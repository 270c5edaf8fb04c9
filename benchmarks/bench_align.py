"""Alignment time and judge calls for 100 and 1,000 labels: the local judge (head, calibration) and an LLM
judge (few-shot examples, guidance, calibration) through the real `openai` client against the scripted
loopback server on 127.0.0.1 (tests/judge/loopback.py), with the plan `--dry-run` prints beside what was spent.

    python benchmarks/bench_align.py [--sizes 100 1000] [--folds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

from ragmetrics.alignment import align_judge, plan_alignment
from ragmetrics.judge.registry import registered_metrics
from ragmetrics.judge.rubric import RubricMetric
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.trust.labels import labels_from_rows

TOPICS = [
    "The river floods every spring when the snow melts in the mountains.",
    "The bridge was opened in 1932 and carries eight lanes of traffic.",
    "The library lends books for three weeks and charges no fees.",
    "The market opens at seven on Saturdays and closes at noon.",
    "The museum holds a collection of maps from the sixteenth century.",
]


def _loopback() -> object:
    path = Path(__file__).resolve().parents[1] / "tests" / "judge" / "loopback.py"
    spec = importlib.util.spec_from_file_location("bench_loopback", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_loopback"] = module
    spec.loader.exec_module(module)
    return module


def local_case(n: int) -> tuple[list[dict[str, object]], list[tuple[int, dict[str, object]]]]:
    samples, rows = [], []
    for i in range(n):
        fact, other = TOPICS[i % 5], TOPICS[(i + 2) % 5]
        faithful = i % 2 == 0
        samples.append({"id": f"q{i}", "question": f"What is said in item {i}?", "contexts": [fact],
                        "answer": fact if faithful else other})  # fmt: skip
        rows.append((i + 1, {"sample_id": f"q{i}", "metric": "faithfulness", "label": int(faithful)}))
    return samples, rows


def llm_case(n: int) -> tuple[list[dict[str, object]], list[tuple[int, dict[str, object]]]]:
    samples, rows = [], []
    for i in range(n):
        negative = i % 2 == 1
        answer = (f"Perhaps {i}, hard to say [trait:hedge] [truth:no] [id:s{i}] [rating:yes]" if negative
                  else f"It is {i} [truth:yes] [id:s{i}] [rating:yes]")  # fmt: skip
        samples.append({"id": f"s{i}", "question": f"How many in case {i}?", "answer": answer})
        rows.append(
            (i + 1, {"sample_id": f"s{i}", "metric": "grounded_claim", "label": 0 if negative else 1})
        )
    return samples, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    loopback = _loopback()
    server = loopback.LoopbackServer().start()  # type: ignore[attr-defined]
    os.environ["RAGMETRICS_BENCH_KEY"] = "sk-bench"
    rubric = RubricMetric.model_validate({"name": "grounded_claim", "type": "rubric",
                                          "question": "Does the answer commit to a claim?", "scale": {"type": "binary"}})  # fmt: skip
    print("| judge | labels | steps kept | planned calls (at most) | judge calls | HTTP requests | seconds |")
    print("|---|---:|---|---:|---:|---:|---:|")
    try:
        with registered_metrics([rubric.to_spec("bench")]):
            for n in args.sizes:
                for kind in ("local", "llm"):
                    tmp = Path(tempfile.mkdtemp())
                    if kind == "local":
                        samples, rows = local_case(n)
                        metric, steps = "faithfulness", ["head", "calibration"]
                        settings = JudgeSettings(backend="local", cache_path=tmp / "v.sqlite")
                    else:
                        samples, rows = llm_case(n)
                        metric, steps = "grounded_claim", ["few_shot", "instructions", "calibration"]
                        settings = JudgeSettings(backend="openai", model="bench", base_url=server.url,
                                                 api_key_env="RAGMETRICS_BENCH_KEY", cache_path=tmp / "v.sqlite",
                                                 max_concurrency=16)  # fmt: skip
                    labels = labels_from_rows(rows, source=f"{kind}-{n}")
                    plan = plan_alignment(n, args.folds, steps)
                    before = server.count(path="/v1/chat/completions") if kind == "llm" else 0
                    start = time.perf_counter()
                    report = align_judge(
                        samples, labels, metric, judge=settings, folds=args.folds, steps=steps
                    )
                    seconds = time.perf_counter() - start
                    requests = server.count(path="/v1/chat/completions") - before if kind == "llm" else 0
                    print(f"| {kind} | {n:,} | {', '.join(report.kept) or 'none'} | {plan.total:,} | {report.calls:,} | "
                          f"{requests:,} | {seconds:.1f} |", flush=True)  # fmt: skip
    finally:
        server.stop()


if __name__ == "__main__":
    main()
