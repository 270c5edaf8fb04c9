"""Nights judged through the OpenAI Batch API (`judge.batch`) against the loopback server's Files and Batches
endpoints: the same scores as a direct night at batch prices, no chat request sent directly, partial failures,
expired and cancelled batches recorded per sample with their cause and resubmitted by a rerun, a run killed while
its batch is in progress resumed without submitting anything twice, an adaptive night sending one API batch per
run and batch of questions, and a dry run pricing both ways."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main

N = 24
UNIQUE = 2 * N - N // 4  # requests: the runs retrieve the same passage for every fourth question (asked once)
KEY_ENV = "RAGMETRICS_BATCH_KEY"
PRICES = {"prompt": 2.0, "completion": 8.0}


def _data(tmp_path: Path) -> None:
    rows = [{"id": f"q{i:03d}", "question": f"What does passage {i} say?", "reference": f"Passage {i} says it."}
            for i in range(N)]  # fmt: skip
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    passages = [p for i in range(N) for p in ({"id": f"u{i}", "text": f"Passage {i} says it [useful]."},
                                              {"id": f"o{i}", "text": f"Another passage, number {i}."})]  # fmt: skip
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    (tmp_path / "good.trec").write_text("".join(f"q{i:03d} Q0 u{i} 1 1.0 good\n" for i in range(N)), encoding="utf-8")
    (tmp_path / "weak.trec").write_text(
        "".join(f"q{i:03d} Q0 {'u' if i % 4 == 0 else 'o'}{i} 1 1.0 weak\n" for i in range(N)), encoding="utf-8"
    )


def _config(tmp_path: Path, loopback: Any, out: str, cache: str, **judge: Any) -> Path:
    data = {
        "dataset": {"path": str(tmp_path / "qa.jsonl"), "passages": str(tmp_path / "passages.jsonl")},
        "retrieval": {"metrics": ["mrr"]},
        "runs": [{"source": "file", "path": str(tmp_path / "weak.trec"), "name": "weak"},
                 {"source": "file", "path": str(tmp_path / "good.trec"), "name": "good"}],
        "judge": {"metrics": ["context_precision"], "base_url": loopback.url, "model": "test-model",
                  "api_key_env": KEY_ENV, "contexts_top_k": 1, "cache_path": str(tmp_path / cache / "v.sqlite"),
                  "price_per_million_tokens": PRICES, **judge},
        "output": {"dir": str(tmp_path / out), "formats": ["json"], "history": False},
    }  # fmt: skip
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


FAST = {"poll_s": 0.05, "poll_max_s": 0.2, "gather_s": 0.2}


def _report(tmp_path: Path, out: str) -> dict[str, Any]:
    return dict(json.loads((tmp_path / out / "latest" / "report.json").read_text(encoding="utf-8")))


def _scores(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: {q: v["context_precision"] for q, v in r["per_query"].items()} for r in report["runs"]}


def _failures(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for r in report["runs"] for f in r["failures"]]


def _chat_requests(loopback: Any) -> int:
    return sum(1 for r in loopback.records if r.path == "/v1/chat/completions")


def _created(loopback: Any) -> int:
    return sum(1 for r in loopback.records if r.path == "/v1/batches")


def _judge_usage(report: dict[str, Any]) -> dict[str, Any]:
    return dict(report["metadata"]["nightly"]["judge"]["usage"])


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-batch-test")


def test_a_batch_night_scores_as_a_direct_one_at_batch_prices(tmp_path: Path, loopback: Any, key: None) -> None:
    _data(tmp_path)
    assert main(["run", str(_config(tmp_path, loopback, "direct", "c1")), "--no-progress"]) == 0
    direct = _report(tmp_path, "direct")
    assert _chat_requests(loopback) == UNIQUE
    loopback.reset_records()
    assert main(["run", str(_config(tmp_path, loopback, "batched", "c2", batch=FAST)), "--no-progress"]) == 0
    batched = _report(tmp_path, "batched")
    assert _chat_requests(loopback) == 0 and _created(loopback) == 2  # one per run
    assert len(loopback.state.batch_lines) == len(set(loopback.state.batch_lines)) == UNIQUE
    assert _scores(batched) == _scores(direct) and not _failures(batched)
    usage, direct_usage = _judge_usage(batched), _judge_usage(direct)
    assert usage["prompt_tokens"] == direct_usage["prompt_tokens"] == usage["batch_prompt_tokens"] > 0
    assert usage["cost_usd"] == pytest.approx(direct_usage["cost_usd"] / 2)
    # rerun: every verdict is cached, nothing is submitted
    loopback.reset_records()
    assert main(["run", str(_config(tmp_path, loopback, "again", "c2", batch=FAST)), "--no-progress"]) == 0
    assert _created(loopback) == 0 and _scores(_report(tmp_path, "again")) == _scores(direct)


@pytest.mark.parametrize("end", ["expired", "cancelled"])
def test_an_ended_batch_records_what_it_missed_and_a_rerun_resubmits_only_that(
    tmp_path: Path, loopback: Any, key: None, end: str
) -> None:
    _data(tmp_path)
    loopback.state.batch_end = end
    config = _config(tmp_path, loopback, "night", "c", batch=FAST)
    assert main(["run", str(config), "--no-progress"]) == 3  # incomplete: never passed off as a good night
    failures = _failures(_report(tmp_path, "night"))
    batches = list(loopback.state.batches.values())
    answered = {r["custom_id"] for b in batches for r in b["requests"][: len(b["requests"]) // 2]}
    missed = {r["custom_id"] for b in batches for r in b["requests"]} - answered
    assert failures and {f["cause"] for f in failures} == {f"batch_{end}"}
    assert all(end in f["message"] for f in failures)
    first = list(loopback.state.batch_lines)
    loopback.state.batch_end = "completed"
    assert main(["run", str(config), "--no-progress"]) == 0
    assert not _failures(_report(tmp_path, "night"))
    again = loopback.state.batch_lines[len(first) :]
    assert len(again) == len(set(again)) and set(again) == missed  # only the unanswered ones, once each


def test_partly_failed_lines_are_failures_with_their_cause(tmp_path: Path, loopback: Any, key: None) -> None:
    _data(tmp_path)
    loopback.state.batch_fail_lines = 3
    assert main(["run", str(_config(tmp_path, loopback, "night", "c", batch=FAST)), "--no-progress"]) == 3
    failures = _failures(_report(tmp_path, "night"))
    assert len(failures) == 6 and {f["cause"] for f in failures} == {"server_error"}  # 3 in each run's batch
    assert all("the model crashed" in f["message"] for f in failures)


def test_a_run_killed_while_its_batch_runs_resumes_it_without_resubmitting(
    tmp_path: Path, loopback: Any, key: None
) -> None:
    _data(tmp_path)
    loopback.state.batch_hold.set()  # the batch stays in progress until released
    config = _config(tmp_path, loopback, "night", "c", batch=FAST)
    env = {**os.environ, KEY_ENV: "sk-batch-test"}
    child = subprocess.Popen([sys.executable, "-m", "ragmetrics", "run", str(config), "--no-progress"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not loopback.state.batches and time.monotonic() < deadline:
            time.sleep(0.05)
        assert loopback.state.batches, "the run never created its batch"
        time.sleep(0.3)  # it polls the batch in progress
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    ledger = json.loads((tmp_path / "c" / "v.batches.json").read_text(encoding="utf-8"))
    assert [e["batch_id"] for e in ledger["batches"]] == ["batch_0001"]  # the first run's, held in progress
    loopback.state.batch_hold.clear()
    assert main(["run", str(config), "--no-progress"]) == 0
    assert len(loopback.state.batches) == 2  # the first found by its id and waited for; the second run's new
    assert len(loopback.state.batch_lines) == UNIQUE and _chat_requests(loopback) == 0
    report = _report(tmp_path, "night")
    assert not _failures(report) and all(v is not None for s in _scores(report).values() for v in s.values())


def test_an_adaptive_batch_night_sends_one_api_batch_per_run_and_batch_of_questions(
    tmp_path: Path, loopback: Any, key: None
) -> None:
    _data(tmp_path)
    config = _config(tmp_path, loopback, "night", "c", batch=FAST, adaptive={"batch_size": 8, "seed": 0})
    assert main(["run", str(config), "--no-progress"]) == 0
    summary = _report(tmp_path, "night")["metadata"]["nightly"]["adaptive"]
    assert summary["judged"] % 8 == 0 and summary["judged"] >= 8
    assert len(loopback.state.batches) == 2 * summary["judged"] // 8  # one per run and batch of questions
    assert all(len(b["requests"]) <= 8 for b in loopback.state.batches.values())


def test_the_dry_run_prices_both_ways(tmp_path: Path, loopback: Any, key: None, capsys: Any) -> None:
    _data(tmp_path)
    assert main(["run", str(_config(tmp_path, loopback, "night", "c")), "--dry-run"]) == 0
    out = capsys.readouterr().out
    direct, batch = (float(x) for x in __import__("re").findall(r"\$([0-9.]+)", out)[:2])
    assert "through the Batch API" in out and batch == pytest.approx(direct / 2, rel=0.01)
    assert not loopback.records


def test_batch_settings_are_validated(tmp_path: Path, loopback: Any, key: None, capsys: Any) -> None:
    _data(tmp_path)
    assert main(["run", str(_config(tmp_path, loopback, "n", "c", batch={"price_factor": 2})), "--no-progress"]) == 2
    assert "price_factor" in capsys.readouterr().err


def test_a_failed_batch_call_is_recorded_by_its_kind_and_scrubbed() -> None:
    import httpx
    import openai

    from ragmetrics.judge.openai.batch import _as_judge_error

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/files")
    hide = lambda text: text.replace("sk-batch-test", "***")  # noqa: E731
    refused = openai.APIConnectionError(request=request)
    assert _as_judge_error(refused, hide).cause == "connection"
    response = httpx.Response(401, request=request, json={"error": {"message": "bad key sk-batch-test"}})
    denied = _as_judge_error(openai.AuthenticationError("bad key sk-batch-test", response=response, body=None), hide)
    assert denied.cause == "auth" and "sk-batch-test" not in str(denied)
    assert _as_judge_error(ValueError("sk-batch-test broke"), hide).cause == "internal_error"
    assert "sk-batch-test" not in str(_as_judge_error(ValueError("sk-batch-test broke"), hide))
