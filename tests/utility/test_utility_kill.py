"""A utility build killed mid-way (SIGKILL, a process of its own) loses no answer it had stored and asks none of
them again: the rerun sends exactly the pairs the cache lacks."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DISTINCT_PAIRS, PASSAGES, QUESTIONS, _load_loopback, write_inputs

from ragmetrics.cli.main import main
from ragmetrics.utility import OpenAIGenerator
from ragmetrics.utility.build import answer_key

ROOT = Path(__file__).resolve().parents[2]


def _stored(cache: Path) -> set[str]:
    if not cache.exists():
        return set()
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5) as conn:
            return {row[0] for row in conn.execute("SELECT key FROM verdicts WHERE kind = 'utility_answer'")}
    except sqlite3.OperationalError:  # the table is not there yet
        return set()


def test_a_killed_build_loses_nothing_and_repeats_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _load_loopback().LoopbackServer(latency_s=0.05).start()
    try:
        paths = write_inputs(tmp_path / "in")
        out, cache = tmp_path / "out", tmp_path / "out" / "answers.sqlite"
        args = [
            sys.executable, "-m", "ragmetrics", "utility", str(paths["first"]), str(paths["second"]),
            "--questions", str(paths["questions"]), "--passages", str(paths["passages"]), "-o", str(out),
            "--k", "3", "--generator", "openai", "--model", "test-model", "--base-url", server.url,
            "--concurrency", "1",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(_stored(cache)) < 5 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL, "the build finished before it could be killed"
        server.wait_idle()
        before = _stored(cache)
        assert 5 <= len(before) < DISTINCT_PAIRS
        first_asked = server.count(prompt="rag_answer")
        assert first_asked - len(before) <= 1  # at most the one call in flight was answered and not stored
        server.reset_records()
        assert main(args[3:]) == 0  # the rerun in this process (one process start is enough)
        identity = OpenAIGenerator(model="test-model", base_url=server.url).identity
        key_of = {
            f"{PASSAGES[d]}|{QUESTIONS[q].question}": answer_key(identity, QUESTIONS[q].question, PASSAGES[d])
            for q in QUESTIONS
            for d in PASSAGES
        }
        asked_again = [
            key for r in server.records if r.prompt == "rag_answer"
            for text, key in key_of.items()
            if text.split("|")[0] in r.user and text.split("|")[1] in r.user
        ]  # fmt: skip
        missing = _stored(cache) - before  # the pairs the rerun had to ask (all stored now)
        assert json.loads(capsys.readouterr().out)["requests"] == DISTINCT_PAIRS - len(before) == len(missing)
        # The rerun asked each missing pair and nothing stored before the kill. The killed process may have
        # sent one request the server read only after the kill (never stored, so a missing pair): at most one
        # record more than the rerun's own requests, and only ever a second ask of a missing pair.
        assert set(asked_again) == missing
        assert len(asked_again) == server.count(prompt="rag_answer")
        assert len(asked_again) - len(missing) <= 1
        assert before <= _stored(cache) and len(_stored(cache)) == DISTINCT_PAIRS
    finally:
        server.stop()
