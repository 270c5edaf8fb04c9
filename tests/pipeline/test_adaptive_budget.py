"""An adaptive night's budgets are never overrun: the budget is checked before each group of questions is sent,
and a batch is trimmed to what it allows (before, a whole batch was sent and the budget read after it: 200 chat
requests against max_calls 130). Counted at the scripted OpenAI-compatible server, with questions whose cost
varies (a question the two runs retrieve the same passage for costs one request, the others two)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.main import main
from tests.pipeline.test_batch_night import N, _chat_requests, _config, _data, _judge_usage, _report


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_BATCH_KEY", "sk-budget-test")


def _night(tmp_path: Path, loopback: Any, out: str, **budget: Any) -> dict[str, Any]:
    loopback.reset_records()
    adaptive = {"batch_size": 8, "seed": 0, "margin": 0.0001, **budget}  # a pair that cannot settle on 24
    assert main(["run", str(_config(tmp_path, loopback, out, out, adaptive=adaptive)), "--no-progress"]) == 0
    return _report(tmp_path, out)


def test_a_budget_below_one_question_sends_nothing_and_says_so(
    tmp_path: Path, loopback: Any, key: None, capsys: Any
) -> None:
    _data(tmp_path)
    config = _config(tmp_path, loopback, "tiny", "tiny", adaptive={"batch_size": 8, "seed": 0, "max_calls": 1})
    assert main(["run", str(config), "--no-progress"]) == 2
    assert _chat_requests(loopback) == 0
    assert "judge.adaptive.max_calls: 1 allows not one question" in capsys.readouterr().err


@pytest.mark.parametrize("max_calls", [3, 5, 13])
def test_max_calls_is_never_exceeded(tmp_path: Path, loopback: Any, key: None, max_calls: int) -> None:
    _data(tmp_path)
    report = _night(tmp_path, loopback, "calls", max_calls=max_calls)
    summary = report["metadata"]["nightly"]["adaptive"]
    assert _chat_requests(loopback) <= max_calls
    assert summary["calls"] == _chat_requests(loopback)
    assert summary["stopped"] == "budget" and 0 < summary["judged"] < N
    assert _chat_requests(loopback) >= max_calls - 2  # trimmed, not stopped a batch early: at most one question short


def test_max_questions_is_never_exceeded(tmp_path: Path, loopback: Any, key: None) -> None:
    _data(tmp_path)
    summary = _night(tmp_path, loopback, "questions", max_questions=5)["metadata"]["nightly"]["adaptive"]
    assert summary["judged"] == 5 and summary["stopped"] == "budget"
    assert len(summary["not_judged"]) == N - 5


def test_max_cost_is_never_exceeded(tmp_path: Path, loopback: Any, key: None) -> None:
    _data(tmp_path)
    full = _night(tmp_path, loopback, "full")
    per_request = _judge_usage(full)["cost_usd"] / _chat_requests(loopback)
    limit = 9.5 * per_request
    report = _night(tmp_path, loopback, "cost", max_cost=limit)
    usage = _judge_usage(report)
    assert usage["cost_usd"] <= limit
    assert usage["cost_usd"] >= limit - 2.5 * per_request
    assert report["metadata"]["nightly"]["adaptive"]["stopped"] == "budget"


def test_a_cost_budget_without_prices_is_refused(tmp_path: Path, loopback: Any, key: None, capsys: Any) -> None:
    _data(tmp_path)
    config = _config(tmp_path, loopback, "noprice", "noprice", adaptive={"max_cost": 0.01},
                     price_per_million_tokens=None)  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    assert "max_cost needs judge.price_per_million_tokens" in capsys.readouterr().err
    assert _chat_requests(loopback) == 0
