"""Early dropping saves judge calls, counted by a real OpenAI client against the scripted loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from judge.loopback import LoopbackServer

from ragmetrics.nightly.config import load_config
from ragmetrics.sweep.run import run_sweep

from .data import sweep_section, write_config

KEY_ENV = "RAGMETRICS_TEST_SWEEP_KEY"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer(stall_s=2.0).start()
    yield srv
    srv.stop()


def _judged_sweep(tmp_path: Path, server: LoopbackServer, early: bool) -> tuple[int, int, int, int]:
    judge = {
        "backend": "openai", "model": "test-model", "base_url": server.url, "api_key_env": KEY_ENV,
        "cache_path": str(tmp_path / "verdicts.sqlite"), "metrics": ["context_precision"], "max_retries": 1, "max_concurrency": 16,
    }  # fmt: skip
    section = sweep_section(
        metric="context_precision",
        baseline="bm25/flip/k4",
        fusion=None,
        early_drop={"enabled": early, "batch_size": 4},
    )
    config = load_config(write_config(tmp_path, section, judge=judge))
    before = server.count(path="/v1/chat/completions")
    result = run_sweep(config)
    made = server.count(path="/v1/chat/completions") - before
    return made, result.judge_calls, result.units_avoided, len(result.drops)


def test_dropped_configurations_are_not_judged(
    tmp_path: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-sweep")
    with_drops = _judged_sweep(tmp_path / "early", server, early=True)
    without = _judged_sweep(tmp_path / "full", server, early=False)
    requests, judgments, avoided, dropped = with_drops
    full_requests, full_judgments, full_avoided, full_dropped = without
    assert dropped > 0 and full_dropped == 0 and full_avoided == 0
    # every judgment is one request to the server (no cache shared between the two sweeps)
    assert requests == judgments and full_requests == full_judgments
    assert avoided > 0 and requests < full_requests
