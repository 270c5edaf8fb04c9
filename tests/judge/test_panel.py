"""A panel of judges (judge.panel) at scripted OpenAI-compatible servers: requests counted at the servers."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.panel import PanelJudge, combine_item
from ragmetrics.judge.select import make_judge
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.render.judge_note import judge_note

from .conftest import KEY_ENV
from .loopback import LoopbackServer

METRIC = "context_sufficiency"


@pytest.fixture
def two_servers() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    a, b = LoopbackServer().start(), LoopbackServer().start()
    yield a, b
    a.stop()
    b.stop()


def _samples(n: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"id": f"q{i}", "question": f"question {i} [z:{rng.gauss(0, 1):.3f}]", "answer": "an answer",
         "contexts": ["a context" + (" [enough]" if rng.random() < 0.5 else "")]}
        for i in range(n)
    ]  # fmt: skip


def _settings(a: LoopbackServer, b: LoopbackServer, cache: Path, **panel: Any) -> JudgeSettings:
    members = [
        {"name": "big-a", "base_url": a.url, "model": "big", "price_per_million_tokens": {"prompt": 10.0}},
        {"name": "mid-a", "base_url": a.url, "model": "mid", "price_per_million_tokens": {"prompt": 1.0}},
        # the same model name on another endpoint: another judge, whose verdicts must never be shared
        {"name": "big-b", "base_url": b.url, "model": "big", "price_per_million_tokens": {"prompt": 0.5}},
    ]
    return JudgeSettings(api_key_env=KEY_ENV, cache_path=cache, max_retries=0, panel={"members": members, **panel})


def _by_model(server: LoopbackServer) -> Counter[str | None]:
    return Counter(r.model for r in server.records if r.path == "/v1/chat/completions" and r.status == 200)


def test_a_panel_asks_each_member_each_unit_once_and_a_rerun_asks_nothing(
    two_servers: tuple[LoopbackServer, LoopbackServer], tmp_path: Path, fake_key: str
) -> None:
    a, b = two_servers
    a.persona("big", 0.95)
    a.persona("mid", 0.8)
    b.persona("big", 0.6)  # same model name, a much worse judge
    samples = _samples(40)
    judge = make_judge(_settings(a, b, tmp_path / "v.sqlite"))
    assert isinstance(judge, PanelJudge)
    first = evaluate_rag(samples, [METRIC], judge, progress=False)
    assert _by_model(a) == {"big": 40, "mid": 40}
    assert _by_model(b) == {"big": 40}
    scores = {q: {v["judge"]: v["score"] for v in d[METRIC].verdicts} for q, d in first.details.items()}
    assert any(s["big-a"] != s["big-b"] for s in scores.values()), "the two 'big' judges shared verdicts"
    assert all(first.per_query[q][METRIC] == pytest.approx(sum(s.values()) / 3) for q, s in scores.items())

    a.reset_records()
    b.reset_records()
    again = evaluate_rag(samples, [METRIC], make_judge(_settings(a, b, tmp_path / "v.sqlite")), progress=False)
    assert a.count() == 0 and b.count() == 0
    assert again.per_query == first.per_query
    rerun = {q: {v["judge"]: v["score"] for v in d[METRIC].verdicts} for q, d in again.details.items()}
    assert rerun == scores

    info = first.metadata.judge
    assert info is not None and info.backend == "panel"
    members = {m["name"]: m for m in info.settings["panel"]["members"]}
    assert {n: m["usage"]["calls"] for n, m in members.items()} == {"big-a": 40, "mid-a": 40, "big-b": 40}
    costs = {n: m["verdicts_usage"]["cost_usd"] for n, m in members.items()}
    assert costs["big-a"] == pytest.approx(10 * costs["mid-a"]) == pytest.approx(20 * costs["big-b"])
    note = judge_note(info, [METRIC])
    assert note is not None and "big-a" in note and "of the bill" in note


def test_a_failing_member_fails_the_unit_by_name_and_a_rerun_asks_only_that_member(
    two_servers: tuple[LoopbackServer, LoopbackServer], tmp_path: Path, fake_key: str
) -> None:
    a, b = two_servers
    b.inject("server_error", times=None, match="question 7 ")
    samples = _samples(12)
    result = evaluate_rag(samples, [METRIC], make_judge(_settings(a, b, tmp_path / "v.sqlite")), progress=False)
    failed = [f for f in result.failures if f.query_id == "q7"]
    assert len(failed) == 1 and result.per_query["q7"][METRIC] is None
    assert "big-b" in failed[0].message and failed[0].cause != "internal_error"
    assert sum(1 for q in result.per_query.values() if q[METRIC] is not None) == 11

    b.clear_faults()
    a.reset_records()
    b.reset_records()
    again = evaluate_rag(samples, [METRIC], make_judge(_settings(a, b, tmp_path / "v.sqlite")), progress=False)
    assert a.count() == 0 and _by_model(b) == {"big": 1}
    assert again.per_query["q7"][METRIC] is not None and not again.failures


def test_two_members_that_are_the_same_judge_are_refused(tmp_path: Path) -> None:
    same = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    settings = JudgeSettings(cache_path=tmp_path / "v.sqlite",
                             panel=[{"name": "one", **same}, {"name": "two", **same}])  # fmt: skip
    with pytest.raises(ConfigError, match=r"judge\.panel\.members\.1: 'two' is the same judge as 'one'"):
        make_judge(settings)


def test_majority_and_mean_of_one_item() -> None:
    assert combine_item([1.0, 0.0, 1.0], "majority", 0.5) == 1.0
    assert combine_item([0.6, 0.2, 0.1], "majority", 0.5) == 0.0
    assert combine_item([1.0, 0.0], "majority", 0.5) == 0.5
    assert combine_item([0.6, 0.2, 0.1], "mean", 0.5) == pytest.approx(0.3)
