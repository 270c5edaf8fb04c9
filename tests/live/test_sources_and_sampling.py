"""The file source follows a growing, rotated, truncated OTLP file from its cursor; the sampler decides by trace
id (a restart decides the same) and never spends more than a window's budget over a simulated day."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragmetrics.live.config import AlwaysRules, SamplingConfig
from ragmetrics.live.sampling import ALWAYS_RESERVE, Sampler, draw
from ragmetrics.live.sources import OtlpFileTail
from ragmetrics.traces.otlp import Span

from .helpers import append, trace

T0 = 1_790_000_000.0


def test_a_growing_file_is_read_line_by_line_and_rotation_is_followed(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    tail = OtlpFileTail(path)
    assert tail.poll(None).cursor is None  # no file yet
    append(path, [trace(1, T0), trace(2, T0)])
    with path.open("a") as handle:
        handle.write(json.dumps(trace(3, T0))[:50])  # a line still being written
    first = tail.poll(None)
    assert {s.trace_id for s in first.spans} == {f"{1:032x}", f"{2:032x}"} and first.cursor is not None
    with path.open("a") as handle:
        handle.write(json.dumps(trace(3, T0))[50:] + "\n" + "not json\n")
    second = tail.poll(first.cursor)
    assert {s.trace_id for s in second.spans} == {f"{3:032x}"}
    assert any("line 4: not JSON" in n for n in second.notes)
    # rotation: the exporter renames the file and starts a new one; the old file's unread end is read first
    append(path, [trace(4, T0)])
    path.rename(tmp_path / "traces-1.jsonl")
    append(path, [trace(5, T0)])
    third = tail.poll(second.cursor)
    assert [s.trace_id for s in third.spans if s.parent_id is None] == [f"{4:032x}", f"{5:032x}"]
    assert third.notes == []
    # truncated in place (copytruncate): read again from the start, and said
    path.write_text(json.dumps(trace(6, T0)) + "\n")
    fourth = tail.poll(third.cursor)
    assert {s.trace_id for s in fourth.spans} == {f"{6:032x}"} and "truncated" in fourth.notes[0]
    assert tail.poll(fourth.cursor).spans == []


def test_a_burst_is_read_over_several_polls(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    append(path, [trace(n, T0) for n in range(50)])
    tail = OtlpFileTail(path, max_bytes=20_000)
    cursor, seen, polls = None, set(), 0
    while True:
        polled = tail.poll(cursor)
        polls += 1
        seen |= {s.trace_id for s in polled.spans}
        cursor = polled.cursor
        if not polled.more:
            break
    assert len(seen) == 50 and polls > 2


def _spans(n: int, error: bool = False) -> list[Span]:
    return [Span(f"{n:032x}", "a", None, "rag", 0, int(1e9), {}, error=error)]


def test_the_budget_holds_over_a_simulated_day_and_the_rate_is_followed() -> None:
    config = SamplingConfig(rate=0.1, seed=3, max_calls_per_window=120)
    metrics = 2
    rng = random.Random(0)
    hourly = [int(400 + 1600 * abs((h - 14) / 10)) if h % 5 else 3000 for h in range(24)]  # quiet to bursty
    total_seen = total_drawn = 0
    n = 0
    for traffic in hourly:
        sampler = Sampler(config, metrics)
        used = drawn = 0
        for _ in range(traffic):
            n += 1
            error = rng.random() < 0.01
            choice = sampler.choose(f"{n:032x}", _spans(n, error), used)
            used += choice.calls
            drawn += int(draw(config.seed, f"{n:032x}") < config.rate)
        assert used <= 120  # never beyond the window's budget
        total_seen += traffic
        total_drawn += drawn
    assert total_drawn / total_seen == pytest.approx(0.1, abs=0.01)  # the rate picks its share


def test_a_restart_makes_the_same_choices_and_the_budget_keeps_room_for_errors() -> None:
    config = SamplingConfig(rate=0.5, seed=7, max_calls_per_window=10, always=AlwaysRules(errors=True))
    a, b = Sampler(config, 1), Sampler(config, 1)
    ids = [f"{n:032x}" for n in range(200)]
    assert [a.choose(t, _spans(i), 0).sampled for i, t in enumerate(ids)] == [
        b.choose(t, _spans(i), 0).sampled for i, t in enumerate(ids)
    ]
    ordinary_limit = int(10 * (1 - ALWAYS_RESERVE))
    drawn = next(i for i, t in enumerate(ids) if draw(7, t) < 0.5)
    assert a.choose(ids[drawn], _spans(drawn), 0).sampled
    assert not a.choose(ids[drawn], _spans(drawn), ordinary_limit).sampled  # the reserve is for the rules
    error = a.choose("e" * 32, _spans(999, error=True), ordinary_limit)
    assert error.sampled and error.reason == "always: an ERROR span"
    assert not a.choose("f" * 32, _spans(998, error=True), 10).sampled  # the whole budget is spent


def test_token_and_cost_budgets_are_never_exceeded() -> None:
    config = SamplingConfig(rate=1.0, max_tokens_per_window=50_000, max_cost_per_window=0.02)
    sampler = Sampler(config, 2, price_per_token=1e-6)  # the cost budget is 20,000 tokens: the tighter one
    assert sampler.token_budget() == 20_000
    used = judged = 0
    rng = random.Random(1)
    for n in range(500):
        tokens = rng.randint(500, 4000)
        choice = sampler.choose(f"{n:032x}", _spans(n), 0, tokens=tokens, tokens_used=used)
        used += choice.tokens
        judged += int(choice.sampled)
        if not choice.sampled:
            assert "budget of 0.02 USD is spent" in choice.reason
    assert used <= 20_000 * (1 - ALWAYS_RESERVE) and judged >= 5
    with pytest.raises(ValueError, match=r"needs judge\.price_per_million_tokens"):
        from ragmetrics.live.config import WatchConfig

        WatchConfig.model_validate(
            {"source": {"kind": "otlp_file", "path": "x"}, "sampling": {"max_cost_per_window": 1}}
        )
