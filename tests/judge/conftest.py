"""Fixtures for the LLM judge: a loopback OpenAI-compatible server and judges wired to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.openai.client import RetryPolicy
from ragmetrics.judge.settings import JudgeSettings

from .loopback import LoopbackServer

FAKE_KEY = "sk-ragmetrics-FAKE-KEY-7f3a9c2e41d8"
KEY_ENV = "RAGMETRICS_TEST_JUDGE_KEY"
FAST_RETRY = RetryPolicy(base_delay_s=0.005, max_delay_s=0.02, max_retry_after_s=0.05)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer(stall_s=2.0).start()
    yield srv
    srv.stop()


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return FAKE_KEY


JudgeFactory = Callable[..., LLMJudge]


@pytest.fixture
def make_judge(server: LoopbackServer, tmp_path: Path, fake_key: str) -> Iterator[JudgeFactory]:
    """Build LLM judges against `server` with a cache in tmp_path; keyword arguments override settings."""
    made: list[LLMJudge] = []

    def factory(**overrides: Any) -> LLMJudge:
        values: dict[str, Any] = {
            "backend": "openai",
            "model": "test-model",
            "embedding_model": "test-embedding",
            "base_url": server.url,
            "api_key_env": KEY_ENV,
            "cache_path": tmp_path / "cache" / "verdicts.sqlite",
            "timeout_s": 10.0,  # generous: only the stall tests set a short one
            "max_retries": 3,
            "max_repairs": 2,
            "max_concurrency": 8,
        }
        values.update(overrides)
        judge = LLMJudge(JudgeSettings(**values), retry=FAST_RETRY)
        made.append(judge)
        return judge

    yield factory
    for judge in made:
        judge.cache.close()


def sample(id: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": id,
        "question": f"What does sample {id} ask?",
        "contexts": [f"Context one of {id} [useful]. It has a [rel] sentence.", f"Context two of {id}."],
        "answer": f"The answer of {id}.",
        "reference": f"The reference of {id} [attr]. A second claim.",
    }
    base.update(fields)
    return base
