"""kill -9 at any point: the watcher run as `ragmetrics watch --once` in a subprocess, killed at random moments
again and again, then run to the end; every trace is decided once, every sampled trace judged once, every
window in the history once, whatever the kills interrupted."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ragmetrics.history.store import load_history

from .helpers import append, trace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HOUR = 3600.0
T0 = 1_790_006_400.0


def _count(store: Path, table: str) -> int:
    """Rows of `table` in the watcher's store as another process sees them (0 before the store exists)."""
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    except sqlite3.Error:  # the schema not written yet
        return 0


def test_kill_9_at_random_moments_loses_and_repeats_nothing(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    append(traces, [trace(n, T0 + (n // 20) * HOUR + 60 * (n % 20), good=n % 3 != 0) for n in range(60)])
    config = tmp_path / "watch.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"kind": "otlp_file", "path": "traces.jsonl", "settle_s": 0},
        "sampling": {"rate": 0.7, "always": {"errors": True}},
        "judge": {"backend": "local", "metrics": ["faithfulness", "answer_relevancy"], "cache_path": "cache/v.sqlite"},
        "alerts": {"min_samples": 5},
        "output": "live",
    }))  # fmt: skip
    command = [sys.executable, "-m", "ragmetrics", "watch", str(config), "--once"]
    rng = random.Random(7)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    store = tmp_path / "live" / "live.sqlite"
    kills = 0
    for _ in range(6):
        # Killed at a random point of its progress (after the k-th decision or the k-th stored score), not after
        # a random time: a machine faster or slower than the one the test was written on still gets killed
        # mid-work.
        table = rng.choice(["traces", "scores"])
        target = _count(store, table) + rng.randint(1, 12)
        process = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        while process.poll() is None and _count(store, table) < target and time.monotonic() < deadline:
            time.sleep(0.01)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
    final = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert final.returncode in (0, 1), final.stderr
    assert kills >= 3, kills
    db = sqlite3.connect(tmp_path / "live" / "live.sqlite")
    decided = db.execute("SELECT COUNT(*), COUNT(DISTINCT trace_id) FROM traces").fetchone()
    assert decided == (60, 60)
    sampled = db.execute("SELECT COUNT(*) FROM traces WHERE sampled = 1").fetchone()[0]
    unscored = db.execute("SELECT COUNT(*) FROM traces WHERE sampled = 1 AND scored = 0").fetchone()[0]
    judged = db.execute("SELECT COUNT(*) FROM scores WHERE metric = 'faithfulness'").fetchone()[0]
    assert unscored == 0 and judged == sampled and sampled >= 30
    assert db.execute("SELECT COUNT(*) FROM pending").fetchone()[0] == 0
    windows = db.execute("SELECT COUNT(*) FROM windows WHERE closed = 1").fetchone()[0]
    db.close()
    history = (tmp_path / "live" / "history.jsonl").read_text().splitlines()
    folders = [json.loads(line)["folder"] for line in history]
    assert len(folders) == len(set(folders)) == windows == 3
    assert len(load_history(tmp_path / "live").records) == 3
