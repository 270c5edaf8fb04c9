"""An in-memory night for the validity tests: runs whose per-query values are given as questions x runs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult


def report_of(columns: Mapping[str, np.ndarray], runs: list[str] | None = None) -> Report:
    """metric -> questions x runs values (NaN: no value) as a Report (t-test, Holm, seed 0)."""
    first = next(iter(columns.values()))
    questions, count = first.shape
    names = runs or [f"run{j}" for j in range(count)]
    results = []
    for j, name in enumerate(names):
        per_query = {
            f"q{i:03d}": {m: (None if np.isnan(v[i, j]) else float(v[i, j])) for m, v in columns.items()}
            for i in range(questions)
        }
        results.append(RunResult(name=name, per_query=per_query, metadata=RunMetadata(metrics=list(columns))))
    return Report(runs=results, metrics=list(columns), settings=ComparisonSettings(test="t", correction="holm",
                                                                                    seed=0))  # fmt: skip


def world(questions: int = 60, runs: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    """Answers that follow a 'good' metric closely, a 'noisy' one loosely, and a random one not at all."""
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.2, 0.8, runs)
    good = np.clip(rng.normal(skill, 0.25, (questions, runs)), 0, 1)
    answer = np.clip(good + rng.normal(0, 0.1, good.shape), 0, 1)
    noisy = np.clip(good + rng.normal(0, 0.6, good.shape), 0, 1)
    return {
        "ndcg@10 (utility)": good,
        "ndcg@10": noisy,
        "recall@5 (random)": rng.random(good.shape),
        "token_f1": answer,
    }
