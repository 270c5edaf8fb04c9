"""A run killed with SIGKILL half way resumes from the cache: no verdict already stored is asked for again."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.settings import JudgeSettings

from .conftest import FAST_RETRY, sample
from .loopback import LoopbackServer

N_SAMPLES = 40
METRICS = ["context_precision", "context_recall"]
KILL_AFTER = 20

_RUN = """
import sys
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.settings import JudgeSettings
url, cache, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
settings = JudgeSettings(backend="openai", model="test-model", base_url=url, cache_path=cache, max_concurrency=2)
samples = [
    {"id": f"s{i}", "question": f"Question {i}?", "contexts": [f"Chunk of {i} [useful].", "Other chunk."],
     "reference": f"Claim of {i} [attr]. Another claim."}
    for i in range(n)
]
evaluate_rag(samples, ["context_precision", "context_recall"], LLMJudge(settings), progress=False)
print("finished")
"""


def _rows(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])
    except sqlite3.OperationalError:  # the writer has not created the table yet
        return 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_half_way_then_resume(tmp_path: Path) -> None:
    server = LoopbackServer(latency_s=0.03).start()
    cache_path = tmp_path / "verdicts.sqlite"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _RUN, server.url, str(cache_path), str(N_SAMPLES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while _rows(cache_path) < KILL_AFTER and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.communicate()}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert proc.returncode == -signal.SIGKILL

        server.wait_idle()
        # the cache opens cleanly after the kill and holds only complete verdicts
        with sqlite3.connect(cache_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        cached = len(VerdictCache(cache_path))
        total = N_SAMPLES * len(METRICS)
        assert KILL_AFTER <= cached < total
        first_run_calls = server.count()
        assert first_run_calls >= cached

        server.reset_records()
        settings = JudgeSettings(
            backend="openai",
            model="test-model",
            base_url=server.url,
            cache_path=cache_path,
            max_concurrency=4,
        )
        samples = [
            sample(
                f"s{i}",
                question=f"Question {i}?",
                contexts=[f"Chunk of {i} [useful].", "Other chunk."],
                reference=f"Claim of {i} [attr]. Another claim.",
                answer=None,
            )
            for i in range(N_SAMPLES)
        ]
        res = evaluate_rag(samples, METRICS, LLMJudge(settings, retry=FAST_RETRY), progress=False)
        assert not res.failures
        assert all(s == {"context_precision": 1.0, "context_recall": 0.5} for s in res.per_query.values())
        # exactly the verdicts missing from the cache were asked for: none that had been stored
        assert server.count() == total - cached
        info = res.metadata.judge
        assert info is not None and info.cache.hits == cached and info.cache.writes == total - cached
    finally:
        server.stop()


def _as_from_a_terminal() -> None:
    """The child starts with SIGINT handled, as a command typed in a terminal does: a test suite started as a
    background job (``pytest ... &`` from a script) passes an ignored SIGINT on to every child otherwise."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child is POSIX")
def test_sigint_lets_calls_in_flight_finish_into_the_cache(tmp_path: Path) -> None:
    # Every call the server answered before and during the interruption must be in the cache: Ctrl-C stops
    # new work but does not throw away verdicts already paid for.
    server = LoopbackServer(latency_s=0.2).start()
    cache_path = tmp_path / "verdicts.sqlite"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _RUN, server.url, str(cache_path), str(N_SAMPLES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_as_from_a_terminal,
        )
        deadline = time.monotonic() + 60
        while _rows(cache_path) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, f"the run ended before it could be interrupted: {proc.communicate()}"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode != 0 and "KeyboardInterrupt" in err
        server.wait_idle()
        answered = server.count(status=200)
        cached = len(VerdictCache(cache_path))
        assert cached < N_SAMPLES * len(METRICS), "the run finished before it could be interrupted"
        assert cached == answered
    finally:
        server.stop()
