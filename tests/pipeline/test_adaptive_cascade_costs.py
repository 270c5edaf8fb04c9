"""The adaptive night's per-question costs (`question_costs`, which trims each batch to the budget) with a cascade.

The budget is planned per question before the question is sent. A cascade asks its first judge about every
question (once per view) and each later judge about the escalated ones, unknown until they are judged: the cost
model counts every judge's views, each at its own prices, an upper bound. Counting the night's plain judge
settings instead (a judge the cascade never asks) planned one request per question at the wrong prices, so a
budget could be passed by a factor of the cascade's length.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.estimate import question_costs

METRIC = "context_sufficiency"


def _config(tmp_path: Path, **judge: object) -> NightlyConfig:
    return NightlyConfig.model_validate({
        "dataset": {"path": str(tmp_path / "qa.jsonl")},
        "judge": {
            "metrics": [METRIC],
            "backend": "openai",
            "model": "night-default",  # the night's own judge: not one the cascade asks
            "price_per_million_tokens": {"prompt": 1000.0, "completion": 1000.0},
            "cache_path": str(tmp_path / "cache" / "v.sqlite"),
            "cascade": [
                {"name": "small", "model": "small-m", "base_url": "http://127.0.0.1:9/v1",
                 "price_per_million_tokens": {"prompt": 1.0, "completion": 1.0}},
                {"name": "big", "model": "big-m", "base_url": "http://127.0.0.1:9/v1",
                 "price_per_million_tokens": {"prompt": 10.0, "completion": 10.0}},
            ],
            "labels": str(tmp_path / "labels.csv"),
            "adaptive": {"batch_size": 4, "max_calls": 100},
            **judge,
        },
        "output": {"dir": str(tmp_path / "out"), "history": False},
    })  # fmt: skip


def _plan(n: int) -> dict[str, tuple[list[RagSample], list[str]]]:
    samples = [RagSample(id=f"q{i}", question=f"question {i}?", contexts=[f"context {i}."]) for i in range(n)]
    return {"run": (samples, [METRIC])}


@pytest.mark.parametrize(("confidence", "views"), [("logprobs", 1), ("samples", 3)])
def test_a_cascade_costs_its_first_judge_and_a_bound_for_every_later_one(
    tmp_path: Path, confidence: str, views: int
) -> None:
    config = _config(tmp_path, confidence=confidence, samples=3)
    costs = question_costs(config, _plan(3), ["q0", "q1", "q2"])
    # every view of both judges, on an empty cache: `views` requests each
    assert [calls for calls, _ in costs] == [2 * views] * 3
    # at the members' prices (1 and 10 per million), never the night's own 1000
    alone = _config(tmp_path, confidence=confidence, samples=3,
                    cascade=[{"name": "small", "model": "small-m", "base_url": "http://127.0.0.1:9/v1",
                              "price_per_million_tokens": {"prompt": 1.0, "completion": 1.0}}])  # fmt: skip
    small = question_costs(alone, _plan(3), ["q0", "q1", "q2"])
    assert [calls for calls, _ in small] == [views] * 3
    for (_, both_usd), (_, small_usd) in zip(costs, small, strict=True):
        assert small_usd > 0 and both_usd == pytest.approx(11 * small_usd)
