"""An interrupted run (SIGINT, SIGTERM, SIGKILL) restarted finishes with the same report and asks the judge nothing twice.

The judge is the real LLM judge over the real openai client, talking to the loopback OpenAI-compatible server
on 127.0.0.1; `ragmetrics run` runs in a subprocess so it can be interrupted like a cron job would be.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.judge.cache import VerdictCache
from ragmetrics.nightly.pipeline import run_pipeline
from ragmetrics.schema import Report

from .conftest import ConfigWriter

KEY_ENV = "RAGMETRICS_RESUME_TEST_KEY"
CHAT = "/v1/chat/completions"
CONCURRENCY = 2


def _config(write_config: ConfigWriter, server: Any, cache: str, name: str) -> Path:
    return write_config(
        name,
        runs=[
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        judge={
            "metrics": ["context_precision", "context_recall", "context_relevancy"],
            "base_url": server.url,
            "api_key_env": KEY_ENV,
            "model": "test-model",
            "cache_path": cache,
            "max_concurrency": CONCURRENCY,
            "timeout_s": 10,
        },
        retrieval={"metrics": []},
        compare={"test": "t"},
    )


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _scores(report: Report) -> dict[str, Any]:
    return {r.name: (r.per_query, r.aggregate, [f.model_dump() for f in r.failures]) for r in report.runs}


def _as_from_a_terminal() -> None:
    """The child starts with SIGINT handled, as a command typed in a terminal does: a test suite started as a
    background job (``pytest ... &`` from a script) passes an ignored SIGINT on to every child otherwise."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(
    command: list[str], cwd: Path, env: dict[str, str], server: Any, sig: int, after: int = 20
) -> tuple[int, str]:
    """Start `ragmetrics run`, send `sig` once it has made `after` more judge calls; its exit code and stderr."""
    start = server.count(path=CHAT, settle=False)
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_terminal,
    )
    try:
        _wait_for(
            lambda: server.count(path=CHAT, settle=False) >= start + after or proc.poll() is not None,
            120,
            "judge calls",
        )
        if proc.poll() is not None:  # it ended before it could be interrupted: show why
            out, err = proc.communicate()
            raise AssertionError(f"exited {proc.returncode} before the signal:\n{err}\n{out}")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _cached(path: Path) -> int:
    cache = VerdictCache(path)
    try:
        return len(cache)
    finally:
        cache.close()


def test_interrupted_run_resumes_without_repeating_judge_calls(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-resume-test-fake")
    loopback.state.latency_s = (
        0.1  # slow enough that the interruptions land mid-judging, even on a busy machine
    )

    reference_config = _config(write_config, loopback, "reference-cache/v.sqlite", "reference.yaml")
    reference = run_pipeline(reference_config, progress=False, write=False).report
    total = loopback.count(path=CHAT, status=200)
    # Two runs x 16 queries x 3 metrics, less the verdicts both runs share (same question and contexts).
    assert 48 <= total < 96
    loopback.reset_records()

    config = _config(write_config, loopback, "cache/v.sqlite", "nightly.yaml")
    cache = qa_dir / "cache" / "v.sqlite"
    command = [sys.executable, "-m", "ragmetrics", "run", str(config), "--no-progress"]
    env = {**os.environ, KEY_ENV: "sk-resume-test-fake"}
    out = qa_dir / "out"

    # 1. SIGINT (Ctrl-C): a clean exit 130, nothing half-written, every verdict received so far kept.
    code, err = _interrupt(command, qa_dir, env, loopback, signal.SIGINT)
    assert code == 130, err
    assert "ragmetrics: interrupted" in err and "Traceback" not in err, err
    assert "run the same command again to resume" in err
    asked = loopback.count(path=CHAT, status=200)
    kept = _cached(cache)
    assert asked < total, "the run finished before it could be interrupted"
    assert kept == asked  # calls in flight at the signal finish into the cache before the run stops
    assert not out.exists() or [p.name for p in out.iterdir()] == []

    # 2. Restarted, then SIGTERM (a CI timeout): the same clean stop, and nothing stored was asked again.
    loopback.reset_records()
    code, err = _interrupt(command, qa_dir, env, loopback, signal.SIGTERM, after=6)
    assert code == 130, err
    assert "ragmetrics: interrupted" in err and "Traceback" not in err, err
    assert "run the same command again to resume" in err
    asked = loopback.count(path=CHAT, status=200)
    kept_before, kept = kept, _cached(cache)
    assert kept_before + asked < total, "the run finished before it could be stopped"
    assert kept - kept_before == asked

    # 3. Restarted, then SIGKILL (no chance to clean up): it asked nothing that was already stored.
    loopback.reset_records()
    code, err = _interrupt(command, qa_dir, env, loopback, signal.SIGKILL, after=3)
    assert code == -signal.SIGKILL, err
    asked = loopback.count(path=CHAT, status=200)
    kept_before, kept = kept, _cached(cache)
    assert kept_before + asked < total, "the run finished before it could be killed"
    assert kept - kept_before >= asked - CONCURRENCY
    assert not out.exists() or [p for p in out.iterdir() if not p.name.startswith(".")] == []

    # 4. Restarted again: it finishes, asks only what is not stored, and reports what a clean run reports.
    loopback.reset_records()
    done = subprocess.run(command, cwd=qa_dir, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert loopback.count(path=CHAT, status=200) == total - kept
    folders = [p for p in out.iterdir() if p.is_dir() and p.name != "latest" and not p.name.startswith(".")]
    assert len(folders) == 1
    resumed = Report.model_validate_json((folders[0] / "report.json").read_text())
    assert _scores(resumed) == _scores(reference)
    assert [c.model_dump() for c in resumed.comparisons] == [c.model_dump() for c in reference.comparisons]


def _as_a_background_job() -> None:
    """The child starts as `ragmetrics run ... &` from a script does: SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("start_as", [_as_from_a_terminal, _as_a_background_job], ids=["terminal", "background"])
def test_sigterm_sends_no_new_judge_request(
    qa_dir: Path, write_config: ConfigWriter, loopback: Any, start_as: Any
) -> None:
    """After SIGTERM the requests already sent finish, and none is sent after them: not the next unit, not
    the next step of a unit under way, not a retry, not one that was waiting for a concurrency slot. The same
    when the night was started with SIGINT ignored (a background job of a script): before, SIGTERM then
    raised KeyboardInterrupt into whichever task ran, lost 2 of 8 verdicts in flight and printed a traceback."""
    loopback.state.latency_s = 0.3
    config = _config(write_config, loopback, "cache/v.sqlite", "nightly.yaml")
    command = [sys.executable, "-m", "ragmetrics", "run", str(config), "--no-progress"]
    env = {**os.environ, KEY_ENV: "sk-sigterm-test-fake"}
    proc = subprocess.Popen(
        command,
        cwd=qa_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=start_as,
    )
    try:
        _wait_for(lambda: loopback.state.received >= 8 or proc.poll() is not None, 120, "judge calls")
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        sent_before = loopback.state.received
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "never retrieved" not in err, err
    loopback.wait_idle()
    assert loopback.state.received - sent_before == 0, "requests sent after SIGTERM"
    # What was sent before the signal was answered and stored: a rerun does not ask for it again.
    assert _cached(qa_dir / "cache" / "v.sqlite") == loopback.count(path=CHAT, status=200)

