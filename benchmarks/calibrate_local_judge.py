"""Build the local judge's labelled pairs and calibrate its thresholds on them.

    python benchmarks/calibrate_local_judge.py build      # topics -> tests/data/local_judge_pairs.jsonl
    python benchmarks/calibrate_local_judge.py calibrate  # thresholds and accuracy per verdict type

Each topic in tests/data/local_judge_topics.jsonl (hand-written, about the Python standard library) holds a
question, a reference answer, a generated-style answer, a chunk that supports the reference, a chunk on a
neighbouring topic that does not, a sentence that answers the question and one that does not. From it:

- context_precision:   (support, reference) -> 1, (distractor, reference) -> 0
- context_utilization: (support, answer) -> 1, (distractor, answer) -> 0
- context_recall:      (each reference statement, support) -> 1, (same statement, distractor) -> 0
- context_relevancy:   (question, relevant sentence) -> 1, (question, irrelevant sentence) -> 0

Topics are dealt into three folds (topic n -> fold n % 3). A threshold is picked on a 0.01 grid as the value
maximising balanced accuracy (ties: the middle of the widest run of best values). The shipped threshold is
picked on all pairs; the honest estimate of its accuracy is the 3-fold cross-validated figure, where each
fold is scored with a threshold picked on the other two folds only (topics never straddle folds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragmetrics.embeddings import MiniLMEmbedder  # noqa: E402
from ragmetrics.judge.backends.local import CALIBRATED_KINDS as VERDICT_KINDS  # noqa: E402
from ragmetrics.judge.backends.local import LocalThresholds, VerdictKind, pair_similarities  # noqa: E402
from ragmetrics.judge.text.sentences import split_statements  # noqa: E402

TOPICS = ROOT / "tests" / "data" / "local_judge_topics.jsonl"
PAIRS = ROOT / "tests" / "data" / "local_judge_pairs.jsonl"
FOLDS = 3


def build_pairs(topics: list[dict[str, str]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n, t in enumerate(topics):
        fold = n % FOLDS

        def add(kind: str, a: str, b: str, label: int, topic: str = t["topic"], fold: int = fold) -> None:
            rows.append({"id": f"{kind}/{topic}/{len(rows)}", "topic": topic, "fold": fold, "kind": kind,
                         "text_a": a, "text_b": b, "label": label})  # fmt: skip

        add("context_precision", t["support"], t["reference"], 1)
        add("context_precision", t["distractor"], t["reference"], 0)
        add("context_utilization", t["support"], t["answer"], 1)
        add("context_utilization", t["distractor"], t["answer"], 0)
        for statement in split_statements(t["reference"]):
            add("context_recall", statement, t["support"], 1)
            add("context_recall", statement, t["distractor"], 0)
        add("context_relevancy", t["question"], t["relevant"], 1)
        add("context_relevancy", t["question"], t["irrelevant"], 0)
    return rows


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def balanced_accuracy(scores: list[float], labels: list[int], threshold: float) -> float:
    pos = [s >= threshold for s, y in zip(scores, labels, strict=True) if y == 1]
    neg = [s < threshold for s, y in zip(scores, labels, strict=True) if y == 0]
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2


def pick_threshold(scores: list[float], labels: list[int]) -> float:
    grid = [round(i / 100, 2) for i in range(0, 101)]
    accs = [balanced_accuracy(scores, labels, t) for t in grid]
    best = max(accs)
    runs: list[tuple[int, int]] = []
    start = None
    for i, a in enumerate([*accs, -1.0]):
        if a == best and start is None:
            start = i
        elif a != best and start is not None:
            runs.append((start, i - 1))
            start = None
    lo, hi = max(runs, key=lambda r: (r[1] - r[0], -r[0]))
    return grid[(lo + hi) // 2]


def make_embedder(model: str) -> Any:
    if model == "e5":
        from ragmetrics.embeddings.e5 import E5Embedder

        return E5Embedder()
    return MiniLMEmbedder()


async def similarities(rows: list[dict[str, Any]], model: str = "minilm") -> dict[str, float]:
    embedder = make_embedder(model)
    out: dict[str, float] = {}
    for kind in VERDICT_KINDS:
        subset = [r for r in rows if r["kind"] == kind]
        sims = await pair_similarities(embedder, kind, [(r["text_a"], r["text_b"]) for r in subset])
        for r, s in zip(subset, sims, strict=True):
            if s is None:
                raise ValueError(f"pair {r['id']} has an empty side")
            out[r["id"]] = s
    return out


def calibrate(rows: list[dict[str, Any]], model: str = "minilm") -> dict[str, Any]:
    sims = asyncio.run(similarities(rows, model))
    shipped = LocalThresholds()
    report: dict[str, Any] = {}
    for kind in VERDICT_KINDS:
        k: VerdictKind = kind
        subset = [r for r in rows if r["kind"] == k]
        scores = [sims[r["id"]] for r in subset]
        labels = [int(r["label"]) for r in subset]
        # Cross-validation: score each fold with a threshold chosen without it; pool the verdicts.
        cv_scores: list[float] = []
        cv_labels: list[int] = []
        fold_thresholds = []
        for fold in range(FOLDS):
            train = [(s, y) for s, y, r in zip(scores, labels, subset, strict=True) if r["fold"] != fold]
            test = [(s, y) for s, y, r in zip(scores, labels, subset, strict=True) if r["fold"] == fold]
            t = pick_threshold([s for s, _ in train], [y for _, y in train])
            fold_thresholds.append(t)
            # Shift each held-out score by the fold's threshold so one cut at 0 pools the folds' verdicts.
            cv_scores += [s - t for s, _ in test]
            cv_labels += [y for _, y in test]
        current = shipped.for_kind(k)
        positives = [s for s, y in zip(scores, labels, strict=True) if y]
        negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
        report[kind] = {
            "pairs": len(subset),
            "positives": len(positives),
            "threshold_picked_on_all": pick_threshold(scores, labels),
            "fold_thresholds": fold_thresholds,
            "cv_balanced_accuracy": round(balanced_accuracy(cv_scores, cv_labels, 0.0), 4),
            "shipped_threshold": current,
            "shipped_balanced_accuracy_all_pairs": round(balanced_accuracy(scores, labels, current), 4),
            "mean_cosine_positive": round(sum(positives) / len(positives), 4),
            "mean_cosine_negative": round(sum(negatives) / len(negatives), 4),
        }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=["build", "calibrate"])
    parser.add_argument(
        "--model", choices=["minilm", "e5"], default="minilm", help="the embedder to calibrate"
    )
    args = parser.parse_args()
    if args.step == "build":
        rows = build_pairs(read_jsonl(TOPICS))
        with PAIRS.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"wrote {len(rows)} pairs to {PAIRS.relative_to(ROOT)}")
        return 0
    print(json.dumps(calibrate(read_jsonl(PAIRS), args.model), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
