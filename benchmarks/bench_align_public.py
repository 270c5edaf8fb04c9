"""The local judge aligned on half of each public human-labelled set, measured on the other half.

    python benchmarks/bench_align_public.py --root /path/to/public-sets [--cap 200] [--only begin,qags_cnndm]

`--root` holds local copies of the repositories `benchmarks/judge_sets.py` reads (nothing is downloaded).
For every set and metric: `ragmetrics.align_judge` with the local judge, 2 folds (each half of the labels
fitted on the other half), steps decided on held-out ROC AUC, seed 0; prints held-out ROC AUC before and
after with 95 % bootstrap CIs, the steps kept and the learning curve's verdict (docs/trust.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_sets import load_all

from ragmetrics.alignment import align_judge
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.trust.labels import labels_from_rows


def _fmt(e: object) -> str:
    est, low, high = e.estimate, e.low, e.high  # type: ignore[attr-defined]
    return "n/a" if est is None else f"{est:.3f} [{low:.3f}, {high:.3f}]" if low is not None else f"{est:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--cap", type=int, default=200)
    parser.add_argument("--only", help="comma-separated set names")
    parser.add_argument("--curve", help="SET:METRIC whose learning curve is printed after the table")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    cache = Path(tempfile.mkdtemp()) / "verdicts.sqlite"
    curves: list[tuple[str, Any]] = []
    print(
        "| set | metric | labels | held-out ROC AUC, judge as it is | aligned | steps kept | learning curve |"
    )
    print("|---|---|---:|---|---|---|---|")
    for labelled in load_all(args.root, args.cap, 0, only=only):
        for metric, items in labelled.items.items():
            samples = {}
            rows = []
            for n, item in enumerate(items, start=1):
                samples[item.sample["id"]] = dict(item.sample)
                rows.append((n, {"sample_id": item.sample["id"], "metric": metric, "label": item.label}))
            labels = labels_from_rows(rows, source=f"{labelled.name}:{metric}")
            start = time.perf_counter()
            report = align_judge(
                list(samples.values()), labels, metric, judge=JudgeSettings(backend="local", cache_path=cache),
                folds=2, statistic="roc_auc", seed=0,
            )  # fmt: skip
            auc = next(f for f in report.figures if f.statistic == "roc_auc")
            curve = report.curve_note.split(": ", 1)[1] if ": " in report.curve_note else report.curve_note
            print(
                f"| {labelled.name} | {metric} | {report.n} | {_fmt(auc.before)} | {_fmt(auc.after)} | "
                f"{', '.join(report.kept) or 'none'} | {curve} |",
                flush=True,
            )
            print(f"<!-- {labelled.name} {metric}: {time.perf_counter() - start:.0f} s -->", file=sys.stderr)
            if args.curve == f"{labelled.name}:{metric}":
                curves.append((args.curve, report))
    for name, report in curves:
        print(f"\nLearning curve, {name} ({report.curve_note}):\n")
        print("| share of training labels | labels | held-out ROC AUC |")
        print("|---:|---:|---|")
        for point in report.curve:
            print(f"| {point.share:.0%} | {point.labels} | {_fmt(point.value)} |")


if __name__ == "__main__":
    main()
