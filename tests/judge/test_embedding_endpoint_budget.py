"""A judge whose embeddings go to a second endpoint (`judge.embeddings.base_url`): its requests are the judge's.

`judge.max_requests` caps every request the judge sends, chat and embeddings, to either endpoint, and a night's
shared budget (`RequestBudget`: a cascade's, a panel's, an adaptive night's `max_calls`) counts them all. Before,
the second endpoint's client had a cap of its own (the judge's cap again, so the judge could send twice it) and
never saw the shared budget (a night under `max_calls` sent every embedding request it wanted), and the judge's
usage left its requests out. The adaptive planner counts them too (`question_costs`), so plan and spend agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics.judge.base import RagSample
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.openai.budget import RequestBudget
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.estimate import question_costs

from .conftest import JudgeFactory, sample
from .loopback import LoopbackServer

N = 10


@pytest.fixture
def embedder() -> Iterator[LoopbackServer]:
    srv = LoopbackServer().start()
    yield srv
    srv.stop()


def _samples() -> list[dict[str, object]]:
    return [sample(f"s{i}", answer=f"Answer {i} [tp].", reference=f"Reference {i} [cov].") for i in range(N)]


def _received(server: LoopbackServer, path: str) -> int:
    return server.count(path=path)


def test_the_judges_cap_counts_both_endpoints_requests(
    make_judge: JudgeFactory, server: LoopbackServer, embedder: LoopbackServer
) -> None:
    """answer_correctness asks the chat endpoint for a verdict, then the second endpoint for the answer's and the
    reference's vectors: under a cap of 6, six requests in all, whichever endpoint they went to (before: six
    verdicts, then the six samples' embedding requests under the second client's own cap of 6: twelve)."""
    judge = make_judge(max_requests=6, embeddings={"base_url": embedder.url, "model": "emb"})
    res = evaluate_rag(_samples(), ["answer_correctness"], judge, progress=False)
    chat, embeddings = _received(server, "/v1/chat/completions"), _received(embedder, "/v1/embeddings")
    assert chat + embeddings == 6
    assert {f.cause for f in res.failures} == {"budget_reached"}
    assert judge.info().usage.calls == 6  # the judge's usage holds the second endpoint's requests too


def test_a_shared_budget_counts_the_second_endpoints_requests(
    make_judge: JudgeFactory, server: LoopbackServer, embedder: LoopbackServer, tmp_path: Path
) -> None:
    """answer_similarity sends only embedding requests, all to the second endpoint: a night's shared budget of 3
    lets three through (before: all ten, the budget never asked)."""
    from ragmetrics.judge.backends.llm import LLMJudge

    budget = RequestBudget(3)
    settings = make_judge(embeddings={"base_url": embedder.url, "model": "emb"}).settings
    judge = LLMJudge(settings, budget=budget)
    try:
        res = evaluate_rag(_samples(), ["answer_similarity"], judge, progress=False)
    finally:
        judge.cache.close()
    assert _received(embedder, "/v1/embeddings") == 3 and budget.spent == 3
    assert _received(server, "/v1/chat/completions") == 0
    assert len(res.failures) == N - 3 and {f.cause for f in res.failures} == {"budget_reached"}


def test_the_planner_counts_the_second_endpoints_requests(tmp_path: Path) -> None:
    """An adaptive night trims each batch to its budget by the planned requests: a metric sending only embedding
    requests to a second endpoint must not plan as free (before: 0 requests planned, 1 sent per question)."""
    config = NightlyConfig.model_validate({
        "dataset": {"path": str(tmp_path / "qa.jsonl")},
        "judge": {
            "metrics": ["answer_similarity"], "backend": "openai", "base_url": "http://127.0.0.1:9/v1",
            "embeddings": {"base_url": "http://127.0.0.1:9/v2", "model": "emb"},
            "cache_path": str(tmp_path / "cache" / "v.sqlite"), "adaptive": {"batch_size": 4, "max_calls": 100},
        },
        "output": {"dir": str(tmp_path / "out"), "history": False},
    })  # fmt: skip
    samples = [
        RagSample(id=f"q{i}", question=f"q {i}?", answer=f"a {i}", reference=f"r {i}") for i in range(3)
    ]
    costs = question_costs(config, {"run": (samples, ["answer_similarity"])}, ["q0", "q1", "q2"])
    assert [calls for calls, _ in costs] == [1, 1, 1]
