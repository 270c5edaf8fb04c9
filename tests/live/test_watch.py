"""The watcher end to end on an OTLP file with the local judge: windows closed into report.json and
history.jsonl, one alert per episode of a significant drop (stderr and a webhook on 127.0.0.1), and a
restart in the middle that judges no trace twice."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ragmetrics.cli.main import main
from ragmetrics.history.store import load_history
from ragmetrics.live import Watcher, load_watch_config

from .helpers import append, trace

HOUR = 3600.0
T0 = 1_790_006_400.0  # on the hour


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: ClassVar[list[dict[str, Any]]] = []
    handler = type("Hook", (_Hook,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


def _config(tmp_path: Path, hook: str, **sampling: Any) -> Path:
    import yaml

    data = {
        "name": "live test",
        "source": {"kind": "otlp_file", "path": "traces.jsonl", "settle_s": 0},
        "sampling": {"rate": 1.0, **sampling},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": "cache/verdicts.sqlite"},
        "window": "1h",
        "alerts": {"max_drop": 0.1, "min_samples": 6, "webhook": hook},
        "output": "live",
    }
    path = tmp_path / "watch.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _traffic(path: Path, hour: int, good: bool, count: int = 8, offset: int = 0) -> None:
    append(path, [trace(1000 * hour + offset + i, T0 + hour * HOUR + 60 * i, good=good, session=f"h{hour}-s{i // 2}")
                  for i in range(count)])  # fmt: skip


def test_windows_alerts_and_a_restart(tmp_path: Path, webhook: tuple[str, list[dict[str, Any]]]) -> None:
    hook, received = webhook
    config = load_watch_config(_config(tmp_path, hook))
    traces = tmp_path / "traces.jsonl"
    said: list[str] = []
    _traffic(traces, 0, good=True)
    _traffic(traces, 1, good=True, count=4)
    clock = [T0 + 2 * HOUR + 10]
    first = Watcher(config, say=said.append, clock=lambda: clock[0])
    result = first.poll()
    assert result.decided == 12 and result.sampled == 12 and result.scored == 12
    assert len(result.closed) == 2  # hours 0 and 1 ended before the clock
    first.close()  # a restart, with hour 1 still getting traces in the file and more hours to come
    _traffic(traces, 1, good=True, count=4, offset=4)  # late for hour 1 (closed): counted as late, not judged
    _traffic(traces, 2, good=False)
    _traffic(traces, 3, good=False)
    clock[0] = T0 + 4 * HOUR + 10
    second = Watcher(config, say=said.append, clock=lambda: clock[0])
    again = second.poll()
    assert again.scored == 16  # hours 2 and 3; no trace of hours 0-1 judged twice
    assert len(again.closed) == 2
    assert (
        len(again.alerts) == 1 and "faithfulness" in again.alerts[0]
    )  # hour 2 starts the episode, hour 3 continues it
    assert len(received) == 1
    alert = received[0]
    assert alert["metric"] == "faithfulness" and alert["difference"] < -0.1 and alert["interval"][1] < 0
    assert len(alert["worst_traces"]) == 3 and all(w["score"] < 0.5 for w in alert["worst_traces"])
    assert any("late" in line or "closed" in line for line in said)
    store = second.store
    scored = store.db.execute("SELECT COUNT(*) FROM traces WHERE scored = 1").fetchone()[0]
    judged = store.db.execute("SELECT COUNT(*) FROM scores WHERE metric = 'faithfulness'").fetchone()[0]
    assert scored == judged == 28
    second.close()
    history = load_history(config.output)
    assert len(history.records) == 4
    means = [next(p.mean for p in r.points if p.metric == "faithfulness") for r in history.records]
    assert means[0] > 0.9 and means[2] < 0.6 and means[3] < 0.6
    page = (config.output / "live.html").read_text()
    assert "ALERT window" in page and 'http-equiv="refresh"' in page and "<script" not in page
    # a chart per metric (faithfulness, latency, tokens, cost), a point per window
    assert page.count("<circle") == 16 and "faithfulness: window means with 95 % intervals" in page
    report = json.loads((config.output / history.records[2].folder / "report.json").read_text())
    assert report["runs"][0]["name"] == "live" and "latency_s" in report["runs"][0]["metadata"]["metrics"]


def test_the_budget_caps_a_window_and_once_exits(
    tmp_path: Path, webhook: tuple[str, list[dict[str, Any]]]
) -> None:
    hook, _ = webhook
    path = _config(tmp_path, hook, max_calls_per_window=5)
    _traffic(tmp_path / "traces.jsonl", 0, good=True, count=12)
    assert main(["watch", str(path), "--once"]) == 0
    config = load_watch_config(path)
    watcher = Watcher(config, say=lambda _m: None)
    ((window, closed),) = watcher.store.windows()
    used = watcher.store.calls_used(window)
    sampled = watcher.store.db.execute("SELECT COUNT(*) FROM traces WHERE sampled = 1").fetchone()[0]
    reasons = [r[0] for r in watcher.store.db.execute("SELECT reason FROM traces WHERE sampled = 0")]
    watcher.close()
    # 5 calls, of which a fifth kept for errors, slow traces and segments: 4 ordinary traces judged
    assert sampled == 4 and used == 4 and closed
    assert len(reasons) == 8 and all("budget of 5 judge calls is spent" in r for r in reasons)


def test_a_bad_watch_config_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "watch.yaml"
    bad.write_text("source: {kind: otlp_file}\nwindow: 7m\n")
    assert main(["watch", str(bad), "--once"]) == 2
    err = capsys.readouterr().err
    assert "watch.yaml" in err and "path" in err and "window" in err


def test_the_shipped_watch_config_loads_and_writes_where_git_ignores() -> None:
    root = Path(__file__).resolve().parents[2]
    config = load_watch_config(root / "configs" / "watch.yaml")
    ignored = (root / ".gitignore").read_text(encoding="utf-8").split()
    for path in (config.output, config.judge.cache_path):
        assert path is not None
        top = path.resolve().relative_to(root).parts[0]
        assert f"{top}/" in ignored


def test_golden_questions_are_always_judged_against_their_references(tmp_path: Path) -> None:
    from .helpers import FACTS, QUESTIONS

    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps({"id": f"g{k}", "question": QUESTIONS[k], "reference": FACTS[k]}) + "\n"
            for k in (0, 1)
        )
    )
    import yaml

    path = tmp_path / "watch.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"kind": "otlp_file", "path": "traces.jsonl", "settle_s": 0},
        "sampling": {"rate": 0.0},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "golden": {"path": "golden.jsonl", "metrics": ["context_recall"]},
        "output": "live",
    }))  # fmt: skip
    append(tmp_path / "traces.jsonl", [trace(n, T0 + 60 * n) for n in range(6)])  # questions 0..5
    watcher = Watcher(load_watch_config(path), say=lambda _m: None)
    result = watcher.poll(final=True)
    rows = watcher.store.db.execute("SELECT trace_id, reason FROM traces WHERE sampled = 1").fetchall()
    recall = watcher.store.db.execute(
        "SELECT trace_id, value FROM scores WHERE metric = 'context_recall'"
    ).fetchall()
    watcher.close()
    assert result.sampled == 2 and {r for _, r in rows} == {"always: a golden-set question"}
    assert {t for t, _ in recall} == {t for t, _ in rows} and all(
        v is not None and v > 0.5 for _, v in recall
    )


def test_a_window_is_shown_beside_the_last_night(tmp_path: Path) -> None:
    import yaml

    from ragmetrics.history.update import update_history
    from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult

    nights = tmp_path / "nights"
    night = nights / "2026-09-20T02-00-00Z"
    night.mkdir(parents=True)
    run = RunResult(name="pipeline", per_query={"q1": {"faithfulness": 0.5}, "q2": {"faithfulness": 1.0}},
                    metadata=RunMetadata(kind="judge", metrics=["faithfulness"]))  # fmt: skip
    run.recompute_aggregate()
    report = Report(
        runs=[run], metrics=["faithfulness"], settings=ComparisonSettings(test="fisher", correction="none")
    )
    update_history(nights, report, night, nights=10, alpha=0.05, correction="none")
    path = tmp_path / "watch.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"kind": "otlp_file", "path": "traces.jsonl", "settle_s": 0},
        "sampling": {"rate": 1.0},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "nights": "nights",
        "output": "live",
    }))  # fmt: skip
    append(tmp_path / "traces.jsonl", [trace(n, T0 + 60 * n) for n in range(3)])
    watcher = Watcher(load_watch_config(path), say=lambda _m: None, clock=lambda: T0 + 2 * HOUR)
    closed = watcher.poll().closed
    summary = watcher.store.summary(closed[0])
    watcher.close()
    assert summary is not None
    assert summary["nights"]["faithfulness"] == {"night": night.name, "run": "pipeline", "mean": 0.75}
    assert "night 0.750 (run pipeline, 2026-09-20T02-00-00Z)" in (tmp_path / "live" / "live.html").read_text()


def test_traces_with_weak_retrieval_are_always_judged(tmp_path: Path) -> None:
    from ragmetrics.live.config import WatchConfig

    append(
        tmp_path / "t.jsonl", [trace(n, T0 + 60 * n) for n in range(4)]
    )  # the helper's retriever scores 1.0
    config = WatchConfig.model_validate({
        "source": {"kind": "otlp_file", "path": str(tmp_path / "t.jsonl"), "settle_s": 0},
        "sampling": {"rate": 0.0, "always": {"retrieval_score_below": 1.5}},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "output": str(tmp_path / "live"),
    })  # fmt: skip
    watcher = Watcher(config, say=lambda _m: None)
    result = watcher.poll(final=True)
    reasons = {r[0] for r in watcher.store.db.execute("SELECT reason FROM traces")}
    watcher.close()
    assert result.sampled == 4 and reasons == {"always: best retrieval score 1 < 1.5"}


def test_a_slow_drift_alerts_once(tmp_path: Path, webhook: tuple[str, list[dict[str, Any]]]) -> None:
    hook, received = webhook
    import yaml

    path = tmp_path / "watch.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"kind": "otlp_file", "path": "traces.jsonl", "settle_s": 0},
        "sampling": {"rate": 1.0},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "alerts": {"max_drop": 0.9, "min_samples": 5, "webhook": hook, "drift_windows": 6},
        "output": "live",
    }))  # fmt: skip
    traces = tmp_path / "traces.jsonl"
    for hour in range(7):  # one more bad answer in ten each hour: never a big drop, always a bit worse
        append(traces, [trace(100 * hour + i, T0 + hour * HOUR + 60 * i, good=i >= hour) for i in range(10)])
    watcher = Watcher(load_watch_config(path), say=lambda _m: None, clock=lambda: T0 + 8 * HOUR)
    result = watcher.poll()
    watcher.close()
    drifts = [a for a in result.alerts if a.startswith("DRIFT")]
    assert len(result.closed) == 7 and len(drifts) == 1 and "faithfulness trends worse" in drifts[0]
    assert [r["kind"] for r in received if r.get("kind") == "drift"] == ["drift"]
