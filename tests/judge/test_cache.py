"""The SQLite verdict cache: keys, round trips, statistics, several processes, invalid rows."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.cache import VerdictCache, cache_key
from ragmetrics.judge.evaluate import evaluate_rag

from .conftest import FAST_RETRY, JudgeFactory, sample
from .loopback import LoopbackServer

BASE = {
    "backend": "openai",
    "model": "m",
    "prompt": "context_recall",
    "prompt_version": "abc",
    "sampling": {"temperature": 0.0, "seed": 42},
    "inputs": {"question": "q", "chunks": ["a", "b"]},
}


def test_key_is_canonical() -> None:
    reordered = dict(reversed(list(BASE.items())))
    assert cache_key(BASE) == cache_key(reordered)
    assert len(cache_key(BASE)) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other"},
        {"backend": "local"},
        {"prompt": "context_precision"},
        {"prompt_version": "abd"},
        {"sampling": {"temperature": 0.7, "seed": 42}},
        {"sampling": {"temperature": 0.0, "seed": 1}},
        {"inputs": {"question": "q", "chunks": ["b", "a"]}},
    ],
)
def test_key_depends_on_everything_that_determines_a_verdict(change: dict[str, object]) -> None:
    assert cache_key({**BASE, **change}) != cache_key(BASE)


def test_round_trip_statistics_and_clear(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", "context_recall", {"statements": []}, {"calls": 1, "prompt_tokens": 10})
    hit = cache.get("k")
    assert (
        hit is not None and hit.value == {"statements": []} and hit.usage == {"calls": 1, "prompt_tokens": 10}
    )
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.writes, stats.enabled) == (1, 1, 1, True)
    assert len(cache) == 1 and cache.clear() == 1 and len(cache) == 0
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_bypass_touches_nothing(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path / "c.sqlite", enabled=False)
    cache.put("k", "x", 1, {})
    assert cache.get("k") is None and not (tmp_path / "c.sqlite").exists()
    assert VerdictCache(None).stats().enabled is False


_WRITER = """
import sys
from ragmetrics.judge.cache import VerdictCache
path, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cache = VerdictCache(path)
for i in range(n):
    cache.put(f"{worker}-{i}", "test", {"worker": worker, "i": i}, {"calls": 1})
    cache.get(f"{1 - worker}-{i}")
cache.close()
"""


def test_several_processes_share_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, path, str(w), "200"]) for w in (0, 1)]
    assert [p.wait(60) for p in procs] == [0, 0]
    cache = VerdictCache(path)
    assert len(cache) == 400
    hit = cache.get("1-199")
    assert hit is not None and hit.value == {"worker": 1, "i": 199}


def test_a_row_that_no_longer_validates_is_a_miss(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path
) -> None:
    evaluate_rag([sample("a")], ["context_recall"], make_judge(), progress=False)
    with sqlite3.connect(tmp_path / "cache" / "verdicts.sqlite") as conn:
        conn.execute("UPDATE verdicts SET value = ?", (json.dumps({"statements": "not a list"}),))
    res = evaluate_rag([sample("a")], ["context_recall"], make_judge(), progress=False)
    assert res.per_query["a"]["context_recall"] == 0.5 and server.count() == 2
    info = res.metadata.judge
    assert info is not None and (info.cache.hits, info.cache.misses, info.cache.writes) == (0, 1, 1)


@pytest.mark.parametrize("stored", [[], ["x", 1.0], [0.0, 0.0], "not a vector", {"a": 1}])
def test_an_embedding_row_that_is_not_a_vector_is_a_miss(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path, stored: object
) -> None:
    evaluate_rag([sample("a")], ["answer_relevancy"], make_judge(), progress=False)
    with sqlite3.connect(tmp_path / "cache" / "verdicts.sqlite") as conn:
        conn.execute("UPDATE verdicts SET value = ? WHERE kind = 'embedding'", (json.dumps(stored),))
    server.reset_records()
    res = evaluate_rag([sample("a")], ["answer_relevancy"], make_judge(), progress=False)
    assert not res.failures and res.per_query["a"]["answer_relevancy"] is not None
    # the verdict is reused; the four vectors are asked for again in one request and stored anew
    assert [r.path for r in server.records] == ["/v1/embeddings"]
    info = res.metadata.judge
    assert info is not None and (info.cache.hits, info.cache.misses, info.cache.writes) == (1, 4, 4)


def test_the_judge_keys_verdicts_by_model_sampling_and_prompt_version(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path
) -> None:
    """RAGAS's cache omitted the model: here every setting that changes a verdict changes its key."""
    import shutil

    from ragmetrics.judge.prompts import PromptLibrary

    def calls_for(**overrides: object) -> int:
        server.reset_records()
        evaluate_rag([sample("a")], ["context_recall"], make_judge(**overrides), progress=False)
        return server.count(path="/v1/chat/completions")

    assert calls_for() == 1
    assert calls_for() == 0  # same settings: a hit
    assert calls_for(model="other-model") == 1
    assert calls_for(temperature=0.5) == 1
    assert calls_for(seed=7) == 1
    assert calls_for(seed=None) == 1
    assert calls_for(max_repairs=0, max_retries=0, max_concurrency=1, timeout_s=3.0) == 0  # transport only

    edited = tmp_path / "prompts"
    shutil.copytree(Path(__file__).resolve().parents[2] / "prompts", edited)
    path = edited / "context_recall.yaml"
    path.write_text(path.read_text() + "# edited\n")
    server.reset_records()
    judge = LLMJudge(make_judge().settings, prompts=PromptLibrary.load(edited), retry=FAST_RETRY)
    evaluate_rag([sample("a")], ["context_recall"], judge, progress=False)
    assert server.count(path="/v1/chat/completions") == 1
