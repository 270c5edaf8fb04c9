"""The seed study's shape (a ranked list of relevant ids per question, grades by position) and sizing a test
set from a pilot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmetrics import Qrels, Run, compare
from ragmetrics.comparison.power import questions_needed
from ragmetrics.errors import InputError
from ragmetrics.nightly.config import DatasetConfig
from ragmetrics.nightly.dataset import load_dataset
from ragmetrics.testset.sizing import questions_for_delta


def test_ranked_relevant_ids_get_grades_by_position(tmp_path: Path) -> None:
    rows = [
        {"question": "q one", "relevant_ids": ["t7", "t2", "t9"]},
        {"question": "q two", "relevant_ids": ["t1"], "relevant_grades": [3]},
    ]
    path = tmp_path / "seed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ranked = load_dataset(DatasetConfig(path=path, relevant_order="ranked"), progress=False)
    assert ranked.relevance == {"row-1": {"t7": 3, "t2": 2, "t9": 1}, "row-2": {"t1": 3}}
    flat = load_dataset(DatasetConfig(path=path), progress=False)
    assert flat.relevance["row-1"] == {"t7": 1, "t2": 1, "t9": 1}


def pilot(seed: int, n: int = 16) -> object:
    rng = np.random.default_rng(seed)
    qrels = Qrels.from_dict({f"q{i}": {"d1": 1} for i in range(n)})
    runs = []
    for name, shift in (("a", 0.0), ("b", 0.3)):
        ranking = {
            f"q{i}": {"d1": float(rng.random() + shift), "d2": float(rng.random() + 0.4)} for i in range(n)
        }
        runs.append(Run.from_dict(ranking, name=name))
    return compare(qrels, runs, ["mrr"], seed=0)


def test_size_from_a_pilot_is_the_paired_t_tests_sample_size() -> None:
    report = pilot(0)
    size, why = questions_for_delta(report, metric="mrr", delta=0.05, power=0.8)  # type: ignore[arg-type]
    a, b = ({q: v["mrr"] for q, v in r.per_query.items()} for r in report.runs)  # type: ignore[attr-defined]
    sd = float(np.std([a[q] - b[q] for q in a], ddof=1))
    assert size == questions_needed(0.05, sd, 0.05, 0.8)
    assert "pair a vs b (16 shared questions)" in why and f"sd {sd:.3f}" in why
    assert questions_for_delta(report, metric="mrr", delta=0.2, power=0.8)[0] < size  # type: ignore[arg-type]


def test_size_from_a_pilot_checks_its_inputs() -> None:
    report = pilot(1)
    with pytest.raises(InputError, match="no metric 'ndcg@10'"):
        questions_for_delta(report, metric="ndcg@10", delta=0.05, power=0.8)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="positive"):
        questions_for_delta(report, metric="mrr", delta=0.0, power=0.8)  # type: ignore[arg-type]
