"""The chunking axis: every chunking scored on chunk qrels derived from the same judgments, each index built once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from ragmetrics.nightly.config import load_config
from ragmetrics.sweep.run import run_sweep

from .data import sweep_section, write_config

CHUNKINGS = [{"method": "tokens", "size": 6, "overlap": 2}, {"method": "recursive", "size": 10000}]


def test_chunkings_are_compared_on_the_same_questions(tmp_path: Path) -> None:
    section = sweep_section(chunking=CHUNKINGS, rerankers=[{"name": "none", "kind": "none"}])
    config = load_config(write_config(tmp_path, section))
    result = run_sweep(config)
    labels = ["tokens-6-2", "recursive-10000c-0"]
    assert len(result.grid) == 2 * 3 * 2
    assert Counter(c.chunking for c in result.grid) == dict.fromkeys(labels, 6)
    assert dict(result.stages.index_builds) == {(label, r): 1 for label in labels for r in ("bm25", "bm25b")}
    # a chunking that keeps each passage whole gives back the passage qrels, under the chunk ids
    rows = [json.loads(line) for line in (tmp_path / "data" / "qa.jsonl").read_text().splitlines()]
    lines = (tmp_path / "data" / "passages.jsonl").read_text().splitlines()
    corpus = {p["id"]: p["text"] for p in map(json.loads, lines)}
    for row in rows:
        pid = row["relevant_ids"][0]
        derived = run_relevance(result, "recursive-10000c-0", row["id"])
        assert derived == {f"{pid}:0-{len(corpus[pid])}": 1}
        assert run_relevance(result, "tokens-6-2", row["id"])  # the span reaches some chunk of every chunking
    # every configuration that finished the race was scored on the very same selection questions
    kept = [c.name for c in result.grid if c.name not in {d.name for d in result.drops}]
    for name in kept:
        assert set(result.scores[name]) >= set(result.split.selection)


def run_relevance(result: object, chunking: str, qid: str) -> dict[str, int]:
    relevance = result.relevance  # type: ignore[attr-defined]
    return {doc: g for doc, g in relevance[chunking][qid].items() if g >= 1}
