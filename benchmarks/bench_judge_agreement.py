"""How well the built-in local judge agrees with other people's labels: ROC AUC per public set and metric.

    python benchmarks/bench_judge_agreement.py --root /path/to/public-sets [--cap 300] [--json out.json]

`--root` holds local copies of the public repositories listed in `benchmarks/judge_sets.py` (clone them
there; nothing is downloaded here). For every set and metric the local judge scores the items through the
public API (`evaluate_rag` with `LocalJudge`), and the table gives the ROC AUC of its scores against the
people's labels with a 95 % bootstrap interval (1,000 resamples of items), the number of items scored, and
how many the judge could not score (not applicable or failed; left out of the AUC, and counted).

For pairwise sets (RAGChecker: which of two answers is more correct) the AUC is of the score difference.
For the planted contradictions it also prints the share of changed sentences the judge flags (faithfulness
below 0.5). Items are capped per set and metric with a fixed seed, half of each label where possible.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_sets import LabelledSet, load_all

from ragmetrics import evaluate_rag
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.trust.agreement import roc_auc_ci


def _score(samples: list[dict[str, Any]], metric: str, judge: LocalJudge) -> list[float | None]:
    unique = {s["id"]: s for s in samples}
    result = evaluate_rag(list(unique.values()), [metric], judge, progress=False)
    return [result.per_query[s["id"]][metric] for s in samples]


def measure(labelled: LabelledSet, judge: LocalJudge) -> list[dict[str, Any]]:
    rows = []
    for metric, items in labelled.items.items():
        start = time.perf_counter()
        values = _score([item.sample for item in items], metric, judge)
        kept = [(v, item.label) for v, item in zip(values, items, strict=True) if v is not None]
        scores = np.asarray([v for v, _ in kept], dtype=np.float64)
        labels = np.asarray([lab for _, lab in kept], dtype=np.int64)
        row = _row(labelled, metric, scores, labels, len(items), time.perf_counter() - start)
        if labelled.name.startswith("planted_"):
            changed = scores[labels == 0]
            row["flagged"] = float(np.mean(changed < 0.5)) if len(changed) else float("nan")
            row["kept"] = float(np.mean(scores[labels == 1] >= 0.5)) if (labels == 1).any() else float("nan")
        rows.append(row)
    for metric, pairs in labelled.pairs.items():
        start = time.perf_counter()
        firsts = _score([p.first for p in pairs], metric, judge)
        seconds = _score([p.second for p in pairs], metric, judge)
        kept = [
            (b - a, p.label)
            for a, b, p in zip(firsts, seconds, pairs, strict=True)
            if a is not None and b is not None
        ]
        scores = np.asarray([d for d, _ in kept], dtype=np.float64)
        labels = np.asarray([lab for _, lab in kept], dtype=np.int64)
        rows.append(_row(labelled, metric, scores, labels, len(pairs), time.perf_counter() - start))
    return rows


def _row(
    labelled: LabelledSet, metric: str, scores: np.ndarray, labels: np.ndarray, total: int, seconds: float
) -> dict[str, Any]:
    estimate = roc_auc_ci(scores, labels)
    nan = float("nan")
    auc, low, high = (
        (estimate.value, estimate.low, estimate.high) if estimate is not None else (nan, nan, nan)
    )
    return {
        "set": labelled.name,
        "metric": metric,
        "auc": auc,
        "ci": [low, high],
        "n": len(scores),
        "positives": int(labels.sum()),
        "unscored": int(total - len(scores)),
        "seconds": round(seconds, 2),
        "source": labelled.source,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="folder holding the public repositories")
    parser.add_argument("--cap", type=int, default=300, help="items per set and metric (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sets", help="comma-separated set names (default: every set found)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument(
        "--asset", action="store_true",
        help="write the per-metric figures reports print (ragmetrics/judge/backends/assets/public_agreement.json)",
    )  # fmt: skip
    parser.add_argument(
        "--cache", type=Path, default=Path(".ragmetrics-cache/bench_agreement.sqlite"),
        help="embedding cache (vectors only: verdict logic is always run)",
    )  # fmt: skip
    args = parser.parse_args()
    only = set(args.sets.split(",")) if args.sets else None
    judge = LocalJudge(cache=VerdictCache(args.cache))
    rows: list[dict[str, Any]] = []
    print(f"local judge on public human labels (cap {args.cap} per set and metric, seed {args.seed})")
    for labelled in load_all(args.root, args.cap, args.seed, only):
        for row in measure(labelled, judge):
            rows.append(row)
            extra = ""
            if "flagged" in row:
                extra = f"  flagged {row['flagged']:.1%} of changed, kept {row['kept']:.1%} of copied"
            print(
                f"  {row['set']:<18} {row['metric']:<19} AUC {row['auc']:.3f} "
                f"[{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]  n={row['n']} (+{row['unscored']} unscored)"
                f"  {row['seconds']:.1f} s{extra}",
                flush=True,
            )
    print()
    print("| set | metric | ROC AUC [95 % CI] | items (positive) | unscored |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['set']} | {row['metric']} | {row['auc']:.3f} [{row['ci'][0]:.3f}, {row['ci'][1]:.3f}] "
            f"| {row['n']} ({row['positives']}) | {row['unscored']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    if args.asset:
        write_asset(rows, args.cap, args.seed)
    return 0


ASSET = (
    Path(__file__).resolve().parents[1]
    / "ragmetrics"
    / "judge"
    / "backends"
    / "assets"
    / "public_agreement.json"
)


def write_asset(rows: list[dict[str, Any]], cap: int, seed: int) -> None:
    """The figures reports print next to local-judge numbers: per metric, the AUC on each public set. Only
    figures are written, never the sets' text."""
    metrics: dict[str, dict[str, float]] = {}
    for row in rows:
        if np.isfinite(row["auc"]):
            metrics.setdefault(row["metric"], {})[row["set"]] = round(row["auc"], 3)
    asset = {
        "measured_with": f"python benchmarks/bench_judge_agreement.py --root <public repositories> --cap {cap} "
        f"--seed {seed}",
        "sources": sorted({row["source"] for row in rows}),
        "auc": metrics,
    }
    ASSET.write_text(json.dumps(asset, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {ASSET}")


if __name__ == "__main__":
    raise SystemExit(main())
