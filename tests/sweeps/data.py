"""A small synthetic collection written to files: questions of two kinds, one relevant passage each (marked
``[useful]`` for the loopback judge's context precision), and distractors sharing one of its words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

NOUNS = ["falcon", "granite", "harbor", "lantern", "meadow", "nickel", "orchid", "pepper", "quartz", "raven",
         "saddle", "timber"]  # fmt: skip


def write_collection(folder: Path, questions: int = 48) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rows, passages = [], []
    for i in range(questions):
        noun = f"{NOUNS[i % len(NOUNS)]}{i}"
        rows.append({
            "id": f"q{i:03d}", "question": f"where is the {noun} token{i} kept", "kind": "keyword" if i % 3 else "factoid",
            "reference": f"The {noun} is kept in the vault [attr].", "relevant_ids": [f"p{i:03d}r"],
        })  # fmt: skip
        passages.append({"id": f"p{i:03d}r", "text": f"the {noun} token{i} is kept in the vault [useful]"})
        for j in range(3):
            passages.append(
                {"id": f"p{i:03d}d{j}", "text": f"token{i} appears in unrelated note {j} about paint"}
            )
    qa, corpus = folder / "qa.jsonl", folder / "passages.jsonl"
    qa.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    corpus.write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    return qa, corpus


def sweep_section(**overrides: Any) -> dict[str, Any]:
    section: dict[str, Any] = {
        "metric": "ndcg@10",
        "retrievers": [
            {"name": "bm25", "retriever": "bm25"},
            {"name": "bm25b", "retriever": "bm25", "params": {"k1": 0.9, "b": 0.5}},
        ],
        "fusion": {"runs": ["bm25", "bm25b"], "weights": [0.5], "depth": 4},
        "rerankers": [
            {"name": "none", "kind": "none"},
            {"name": "flip", "kind": "callable", "scorer": "sweeps.scorers:flip", "candidates": 4},
        ],
        "k": [2, 4],
        "split": {"seed": 3},
        "early_drop": {"batch_size": 4, "alpha": 0.05},
    }
    section.update(overrides)
    return section


def write_config(folder: Path, sweep: dict[str, Any], questions: int = 48, **top: Any) -> Path:
    qa, corpus = write_collection(folder / "data", questions)
    config = {
        "name": "synthetic sweep",
        "dataset": {"path": str(qa), "passages": str(corpus)},
        "retrieval": {"metrics": ["ndcg@10"]},
        "output": {"dir": str(folder / "out")},
        "sweep": sweep,
        **top,
    }
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path
