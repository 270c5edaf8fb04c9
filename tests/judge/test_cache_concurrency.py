"""One verdict cache, several processes at once: nobody fails a sample because another one is writing.

Four processes (two LLM judges against the loopback server, two local judges) score overlapping and
disjoint samples into one SQLite cache, three rounds with a fresh cache each. Afterwards every verdict and
every embedding is in the cache: a rerun asks the server nothing and the model nothing. A fifth test kills
one writer with SIGKILL mid-run: the others finish cleanly and the cache stays sound.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.evaluate import evaluate_rag

from .conftest import KEY_ENV, JudgeFactory, sample
from .loopback import LoopbackServer

pytestmark = pytest.mark.slow

LLM_METRICS = ["context_recall", "context_relevancy", "context_precision"]
LOCAL_METRICS = ["context_relevancy", "context_recall", "answer_relevancy"]

WORKER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from tests.judge.conftest import sample
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.cache import VerdictCache

    backend, url, cache, first, last = sys.argv[2:7]
    samples = [sample(f"s{i}", question=f"Which fact does sample {i} of the stress test need?",
                      contexts=[f"Passage {i} says the value of item {i} is {i * 7} [useful] [rel].",
                                f"Passage {i + 1000} is about something else entirely."],
                      reference=f"Item {i} has the value {i * 7} [attr]. It was measured twice.")
               for i in range(int(first), int(last))]
    if backend == "llm":
        from ragmetrics.judge.backends.llm import LLMJudge
        from ragmetrics.judge.openai.transport import RetryPolicy
        from ragmetrics.judge.settings import JudgeSettings
        settings = JudgeSettings(backend="openai", model="test-model", embedding_model="test-embedding",
                                 base_url=url, api_key_env="RAGMETRICS_TEST_JUDGE_KEY", cache_path=Path(cache),
                                 max_concurrency=4, timeout_s=20)
        judge = LLMJudge(settings, retry=RetryPolicy(base_delay_s=0.005, max_delay_s=0.02))
        metrics = %(llm)r
    else:
        from ragmetrics.judge.backends.local import LocalJudge
        judge = LocalJudge(cache=VerdictCache(Path(cache)))
        metrics = %(local)r
    result = evaluate_rag(samples, metrics, judge, progress=False)
    print(json.dumps({
        "failures": [[f.query_id, f.metric, f.cause, f.message] for f in result.failures],
        "per_query": result.per_query,
        "write_failures": judge.info().cache.write_failures,
    }))
    """
) % {"llm": LLM_METRICS, "local": LOCAL_METRICS}

ROOT = Path(__file__).resolve().parents[2]
PLAN = [("llm", 0, 30), ("llm", 15, 45), ("local", 0, 16), ("local", 8, 24)]


def _start(
    tmp: Path, server: LoopbackServer, cache: Path, n: int, plan: tuple[str, int, int]
) -> subprocess.Popen[str]:
    # Each worker gets its own script: rewriting one shared file while an earlier worker's Python is reading
    # it made that worker run an empty script (exit 0, no output).
    script = tmp / f"worker{n}.py"
    script.write_text(WORKER, encoding="utf-8")
    backend, first, last = plan
    env = {**os.environ, KEY_ENV: "sk-stress-FAKE"}
    return subprocess.Popen(
        [
            sys.executable,
            str(script),
            str(ROOT),
            backend,
            server.url,
            str(cache),
            str(first),
            str(last),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _samples(first: int, last: int) -> list[dict[str, Any]]:
    return [
        sample(
            f"s{i}",
            question=f"Which fact does sample {i} of the stress test need?",
            contexts=[
                f"Passage {i} says the value of item {i} is {i * 7} [useful] [rel].",
                f"Passage {i + 1000} is about something else entirely.",
            ],
            reference=f"Item {i} has the value {i * 7} [attr]. It was measured twice.",
        )
        for i in range(first, last)
    ]


class CountingEmbedder:
    def __init__(self) -> None:
        from ragmetrics.embeddings.minilm import MiniLMEmbedder

        self.inner = MiniLMEmbedder()
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


@pytest.mark.parametrize("round_", [1, 2, 3])
def test_four_writers_share_one_cache(
    tmp_path: Path, server: LoopbackServer, make_judge: JudgeFactory, round_: int
) -> None:
    server.state.latency_s = 0.01
    cache = tmp_path / "shared" / "verdicts.sqlite"
    procs = [_start(tmp_path, server, cache, n, plan) for n, plan in enumerate(PLAN)]
    for proc in procs:
        stdout, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert stdout.strip(), f"worker {proc.args[3:]} printed nothing; stderr: {err[-3000:]}"
        out = json.loads(stdout.strip().splitlines()[-1])
        assert out["failures"] == [], out["failures"][:3]
        assert out["write_failures"] == 0

    # Every LLM verdict is stored: a rerun over both LLM processes' samples asks the server nothing.
    server.reset_records()
    judge = make_judge(cache_path=cache)
    rerun = evaluate_rag(_samples(0, 45), LLM_METRICS, judge, progress=False)
    assert rerun.failures == []
    assert server.count() == 0
    # Every embedding is stored: a rerun of the local judge runs the model on nothing.
    counting = CountingEmbedder()
    local = evaluate_rag(
        _samples(0, 24), LOCAL_METRICS, LocalJudge(counting, cache=VerdictCache(cache)), progress=False
    )
    assert local.failures == []
    assert counting.texts == []


def test_a_writer_killed_mid_run_leaves_the_others_and_the_cache_sound(
    tmp_path: Path, server: LoopbackServer, make_judge: JudgeFactory
) -> None:
    server.state.latency_s = 0.05
    cache = tmp_path / "shared" / "verdicts.sqlite"
    plan = [("llm", 0, 40), ("llm", 20, 60), ("llm", 40, 80), ("local", 0, 16)]
    procs = [_start(tmp_path, server, cache, n, p) for n, p in enumerate(plan)]
    deadline = time.monotonic() + 60
    while server.count(settle=False) < 30 and time.monotonic() < deadline:
        time.sleep(0.02)
    victim = procs[1]
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    for proc in procs:
        if proc is victim:
            continue
        stdout, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(stdout.strip().splitlines()[-1])["failures"] == []
    with sqlite3.connect(cache) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # The killed writer's samples: whatever it stored is reused; the rest is asked once, then all is stored.
    server.reset_records()
    first = evaluate_rag(_samples(20, 60), LLM_METRICS, make_judge(cache_path=cache), progress=False)
    assert first.failures == []
    server.reset_records()
    again = evaluate_rag(_samples(20, 60), LLM_METRICS, make_judge(cache_path=cache), progress=False)
    assert again.failures == [] and server.count() == 0
    assert again.per_query == first.per_query
