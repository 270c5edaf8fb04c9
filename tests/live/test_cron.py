"""Cron beside a receiver: `watch --receive-only` holds the port and spools, `watch --once` judges what it
spooled; nothing is lost or read twice across rotations; an alert fired by any process exits the next --once
with 1, once; a restart after a kill keeps the window's budget and says the notes decided before it."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.live import Watcher, load_watch_config
from ragmetrics.live.receive_only import ROTATED, ReceiveOnly
from ragmetrics.live.store import Decision

from .helpers import append, trace

HOUR = 3600.0
T0 = 1_790_006_400.0


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, request: dict[str, object]) -> int:
    body = json.dumps(request).encode()
    req = urllib.request.Request(f"{url}/v1/traces", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as response:
        return int(response.status)


def test_receive_only_and_once_lose_and_repeat_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = _port()
    path = tmp_path / "watch.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"kind": "receiver", "listen": f"127.0.0.1:{port}", "settle_s": 0},
        "sampling": {"rate": 1.0},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "window": "1d", "output": str(tmp_path / "live"),
    }))  # fmt: skip
    config = load_watch_config(path)
    # without a receiver beside it, --once says that exporters between runs lose their spans
    assert main(["watch", str(path), "--once"]) == 0
    assert "nothing listens" in capsys.readouterr().err
    receiver = ReceiveOnly(config, say=lambda _m: None)
    stopping = [False]
    thread = threading.Thread(target=receiver.run, args=(lambda: stopping[0], 0.05), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    now = time.time() - 30  # live traffic: its day's window is open
    sent = 0
    for batch in range(4):  # traffic between cron runs, a cron run, the receiver tidying its spool
        for i in range(5):
            assert _post(url, trace(100 * batch + i, now + 0.5 * sent)) == 200
            sent += 1
        assert main(["watch", str(path), "--once"]) == 0
        receiver.tidy()
    assert main(["watch", str(path), "--once"]) == 0  # whatever the last tidy rotated
    stopping[0] = True
    thread.join(timeout=10)
    watcher = Watcher(config, listen=False, say=lambda _m: None)
    decided = watcher.store.db.execute("SELECT COUNT(*), COUNT(DISTINCT trace_id) FROM traces").fetchone()
    scored = watcher.store.db.execute("SELECT COUNT(*) FROM scores WHERE metric = 'faithfulness'").fetchone()[0]
    watcher.close()
    assert decided == (sent, sent) and scored == sent
    spool = tmp_path / "live" / "spool"
    assert len(list(spool.glob(f"*{ROTATED}*"))) <= 1  # rotated spools are deleted once read past


def test_an_alert_of_a_long_running_watch_fails_the_next_once(tmp_path: Path) -> None:
    path = tmp_path / "watch.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"kind": "otlp_file", "path": "traces.jsonl", "settle_s": 0},
        "sampling": {"rate": 1.0}, "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "window": "1h", "alerts": {"max_drop": 0.1, "min_samples": 6}, "output": "live",
    }))  # fmt: skip
    traces = tmp_path / "traces.jsonl"
    append(traces, [trace(i, T0 + 60 * i, good=True) for i in range(8)])
    append(traces, [trace(100 + i, T0 + HOUR + 60 * i, good=False) for i in range(8)])
    config = load_watch_config(path)
    config.output = tmp_path / "live"
    config.source.path = traces
    long_running = Watcher(config, say=lambda _m: None, clock=lambda: T0 + 2 * HOUR + 10)
    fired = long_running.poll()
    long_running.close()
    assert len(fired.alerts) == 1  # fired by the long-running watch, not by cron
    cron = tmp_path / "cron.yaml"
    cron.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "output": str(config.output),
                                    "source": {"kind": "otlp_file", "path": str(traces), "settle_s": 0}}))  # fmt: skip
    assert main(["watch", str(cron), "--once"]) == 1  # the next --once sees it
    assert main(["watch", str(cron), "--once"]) == 0  # reported once: not again


def test_a_restart_after_a_kill_keeps_the_budget_and_says_its_notes(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    append(traces, [trace(i, T0 + 60 * i, good=True) for i in range(10)])
    config = load_watch_config(_file_config(tmp_path, max_calls_per_window=6))
    first = Watcher(config, say=lambda _m: None, clock=lambda: T0 + 1000)
    from ragmetrics.live.watch import PollResult

    out = PollResult()
    first._read(out)
    first._decide(first.store.settled(float("inf"), 100), out)
    sampled = list(first.store.unscored())
    assert len(sampled) == 4  # 80 % of 6 calls for ordinary traces
    first.store.begin_attempt(sampled)  # their judge requests went out ...
    window = first.store.decision(sampled[0]).window  # type: ignore[union-attr]
    first.store.decide(Decision("late-one", window, T0, False, "late", None, 0), note="a late trace: not counted")
    first.close()  # ... and the process was killed before their scores and the note were stored and said
    said: list[str] = []
    second = Watcher(config, say=said.append, clock=lambda: T0 + 1000)
    second.poll()
    used = second.store.calls_used(window)
    spent = second.store.db.execute("SELECT COUNT(DISTINCT trace_id) FROM scores WHERE failure LIKE 'budget_spent%'").fetchone()[0]
    judged = second.store.db.execute("SELECT COUNT(*) FROM scores WHERE metric = 'faithfulness' AND value IS NOT NULL").fetchone()[0]
    second.close()
    assert used <= 6  # re-asked requests counted; the budget holds
    assert judged == 2 and spent == 2  # two re-asks fit, two are recorded as failures with why
    assert any("a late trace: not counted" in line for line in said)


def _file_config(tmp_path: Path, **sampling: object) -> Path:
    path = tmp_path / "watch.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"kind": "otlp_file", "path": str(tmp_path / "traces.jsonl"), "settle_s": 0},
        "sampling": {"rate": 1.0, **sampling},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "window": "1d", "output": str(tmp_path / "live"),
    }))  # fmt: skip
    return path
