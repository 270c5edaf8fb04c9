"""The judge going away: sampled traces whose verdicts failed transiently (5xx, timeouts, connection) are kept
and judged after a backoff, never lost or scored as failures; their window waits for them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from loopback import LoopbackServer

from ragmetrics.live import Watcher
from ragmetrics.live.config import WatchConfig

from .helpers import append, trace

HOUR = 3600.0
T0 = 1_790_006_400.0


def test_a_judge_outage_keeps_the_traces_and_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_LIVE_KEY", "sk-live")
    server = LoopbackServer().start()
    try:
        config = WatchConfig.model_validate({
            "source": {"kind": "otlp_file", "path": str(tmp_path / "t.jsonl"), "settle_s": 0, "poll_s": 1},
            "sampling": {"rate": 1.0},
            "judge": {"backend": "openai", "base_url": server.url, "api_key_env": "RAGMETRICS_LIVE_KEY",
                      "model": "m", "metrics": ["faithfulness"], "max_retries": 0, "cache_path": None,
                      "breaker_failures": 1000},
            "output": str(tmp_path / "live"),
        })  # fmt: skip
        append(tmp_path / "t.jsonl", [trace(n, T0 + 60 * n) for n in range(5)])
        clock = [T0 + HOUR + 10]
        said: list[str] = []
        watcher = Watcher(config, say=said.append, clock=lambda: clock[0])
        server.inject("server_error", times=None)
        first = watcher.poll()
        assert first.sampled == 5 and first.scored == 0 and first.closed == [] and first.waiting == 5
        assert any("the judge failed for 5 sampled traces (server_error): kept" in line for line in said)
        assert len(watcher.store.unscored()) == 5
        server.clear_faults()
        clock[0] += 1.0  # inside the backoff: no request
        before = server.count(path="/v1/chat/completions")
        watcher.poll()
        assert server.count(path="/v1/chat/completions") == before
        clock[0] += 60.0
        second = watcher.poll()
        assert second.scored == 5 and len(second.closed) == 1
        failures = watcher.store.db.execute(
            "SELECT COUNT(*) FROM scores WHERE failure IS NOT NULL"
        ).fetchone()[0]
        assert failures == 0
        watcher.close()
    finally:
        server.stop()


def test_a_teams_rubric_judges_live_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from ragmetrics.live import load_watch_config

    monkeypatch.setenv("RAGMETRICS_LIVE_KEY", "sk-live")
    server = LoopbackServer().start()
    try:
        path = tmp_path / "watch.yaml"
        path.write_text(yaml.safe_dump({
            "source": {"kind": "otlp_file", "path": "t.jsonl", "settle_s": 0},
            "sampling": {"rate": 1.0},
            "judge": {"backend": "openai", "base_url": server.url, "api_key_env": "RAGMETRICS_LIVE_KEY", "model": "m",
                      "cache_path": None, "metrics": ["polite"],
                      "custom_metrics": [{"name": "polite", "type": "rubric", "question": "Is the answer polite?",
                                          "scale": {"type": "binary"}}]},
            "output": "live",
        }))  # fmt: skip
        append(tmp_path / "t.jsonl", [trace(n, T0 + 60 * n) for n in range(3)])
        watcher = Watcher(load_watch_config(path), say=lambda _m: None)
        result = watcher.poll(final=True)
        rows = watcher.store.db.execute(
            "SELECT metric, value, failure FROM scores WHERE metric = 'polite'"
        ).fetchall()
        watcher.close()
        assert result.scored == 3 and len(rows) == 3 and all(v is not None and f is None for _, v, f in rows)
        assert server.count(prompt="rubric:polite") == 3
    finally:
        server.stop()
