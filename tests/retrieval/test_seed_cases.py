"""Every acceptance case of ../shared/seed_cases.json (values printed by a reference library, 3 decimals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.retrieval.evaluate import evaluate
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run

SEED = Path(__file__).resolve().parents[2].parent / "shared" / "seed_cases.json"


def _cases() -> list[Any]:
    if not SEED.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"shared seed cases absent: {SEED}"))]
    data = json.loads(SEED.read_text(encoding="utf-8"))
    return [pytest.param(case, id=case["id"]) for case in data["cases"]]


@pytest.mark.parametrize("case", _cases())
def test_seed_case(case: dict[str, Any]) -> None:
    tolerance = json.loads(SEED.read_text(encoding="utf-8"))["tolerance"]
    qrels = Qrels.from_dict(case["qrels"])
    run = Run.from_dict(case["run"], name=case["id"])
    result = evaluate(qrels, run, list(case["expected"]))
    for metric, expected in case["expected"].items():
        assert result.aggregate[metric] == pytest.approx(expected, abs=tolerance), metric
