"""The shipped thresholds still reach the accuracy recorded in docs/local_judge.md on the shipped labelled set."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.embeddings import MiniLMEmbedder
from ragmetrics.judge.backends.local import (
    CALIBRATED_KINDS as VERDICT_KINDS,
)
from ragmetrics.judge.backends.local import (
    LocalThresholds,
    pair_similarities,
)

DATA = Path(__file__).resolve().parents[1] / "data"

# Recorded balanced accuracy on all pairs (docs/local_judge.md) minus a small margin.
FLOORS = {
    "context_precision": 0.95,
    "context_utilization": 0.94,
    "context_recall": 0.88,
    "context_relevancy": 0.79,
}


def _rows(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_labelled_set_is_well_formed() -> None:
    pairs = _rows("local_judge_pairs.jsonl")
    topics = _rows("local_judge_topics.jsonl")
    assert len(pairs) >= 100
    assert len({p["id"] for p in pairs}) == len(pairs)
    assert len({t["topic"] for t in topics}) == len(topics)
    texts = {v for t in topics for k, v in t.items() if k != "topic"}
    for p in pairs:
        assert set(p) == {"id", "topic", "fold", "kind", "text_a", "text_b", "label"}
        assert p["kind"] in VERDICT_KINDS and p["label"] in (0, 1) and p["fold"] in (0, 1, 2)
        assert p["text_b"] in texts  # every pair is derived from a hand-written topic
    per_kind = Counter((p["kind"], p["label"]) for p in pairs)
    for kind in VERDICT_KINDS:
        assert per_kind[(kind, 1)] == per_kind[(kind, 0)] >= 50


@pytest.mark.parametrize("kind", VERDICT_KINDS)
def test_shipped_threshold_accuracy(kind: str, embedder: MiniLMEmbedder) -> None:
    pairs = [p for p in _rows("local_judge_pairs.jsonl") if p["kind"] == kind]
    sims = asyncio.run(pair_similarities(embedder, kind, [(p["text_a"], p["text_b"]) for p in pairs]))  # type: ignore[arg-type]
    threshold = LocalThresholds().for_kind(kind)  # type: ignore[arg-type]
    hits = {0: [], 1: []}  # type: dict[int, list[bool]]
    for p, s in zip(pairs, sims, strict=True):
        assert s is not None
        hits[p["label"]].append((s >= threshold) == bool(p["label"]))
    balanced = (sum(hits[1]) / len(hits[1]) + sum(hits[0]) / len(hits[0])) / 2
    assert balanced >= FLOORS[kind], f"{kind}: balanced accuracy {balanced:.4f} < floor {FLOORS[kind]}"
