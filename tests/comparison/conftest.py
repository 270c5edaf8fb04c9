"""Small scored runs built in code, so comparison tests need no retrieval or judge backend."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from ragmetrics.schema import RunMetadata, RunResult, SampleFailure

MakeResult = Callable[..., RunResult]


def make_result(
    name: str,
    scores: dict[str, dict[str, float | None]],
    metrics: list[str],
    missing: list[str] | None = None,
) -> RunResult:
    failures = [
        SampleFailure(query_id=q, metric=m, cause="timeout", message="judge timed out")
        for q, s in scores.items()
        for m, v in s.items()
        if v is None
    ]
    result = RunResult(
        name=name,
        per_query=scores,
        failures=failures,
        metadata=RunMetadata(metrics=metrics, missing_queries=missing or []),
    )
    result.recompute_aggregate()
    return result


def random_results(
    n_runs: int, n_queries: int, metrics: list[str], shifts: list[float], seed: int = 0
) -> list[RunResult]:
    rng = np.random.default_rng(seed)
    base = rng.random((n_queries, len(metrics)))
    out = []
    for r in range(n_runs):
        values = np.clip(base + shifts[r] + rng.normal(0, 0.15, base.shape), 0, 1)
        scores: dict[str, dict[str, float | None]] = {
            f"q{i}": {m: float(values[i, k]) for k, m in enumerate(metrics)} for i in range(n_queries)
        }
        out.append(make_result(f"run{r}", scores, metrics))
    return out


@pytest.fixture
def three_runs() -> list[RunResult]:
    return random_results(3, 60, ["ndcg@10", "map"], [0.0, 0.15, 0.16])
