"""Quality gates in pytest, on the built-in collection (offline, no API key):

    pytest examples/pytest_quality -v --junitxml=quality.xml
    pytest examples/pytest_quality -n 2          # with pytest-xdist: the verdict cache is shared

A team's version would load tonight's system and last release's report.json; here the "release" is BM25 and
"tonight" is BM25 with an embedding reranker. The tests marked `ragmetrics` share the run's alpha (Bonferroni
over them, Holm across the metrics of each), so adding gates does not add false alarms. A failing gate names
the queries that drove the drop; the figures are in the JUnit XML as properties.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics import JudgeSettings, RunResult, evaluate, evaluate_rag, make_judge
from ragmetrics.collection import load_passages, load_qrels, load_questions, load_samples
from ragmetrics.retrievers import build_run
from ragmetrics.testing import assert_at_least, assert_no_regression

METRICS = ["ndcg@10", "recall@10", "mrr"]


def _retrieval(kind: str, params: dict[str, int], name: str) -> RunResult:
    run = build_run(kind, params, load_passages(), load_questions(), name)
    return evaluate(load_qrels(), run, METRICS)


@pytest.fixture(scope="module")
def release() -> RunResult:
    return _retrieval("bm25", {"top_k": 100}, "system")


@pytest.fixture(scope="module")
def tonight() -> RunResult:
    return _retrieval("bm25_embedding_rerank", {"candidates": 50}, "system")


@pytest.mark.ragmetrics
def test_tonight_does_not_regress(tonight: RunResult, release: RunResult) -> None:
    assert_no_regression(tonight, release, METRICS, max_drop=0.01)


@pytest.mark.ragmetrics
def test_recall_floor(tonight: RunResult) -> None:
    assert_at_least(tonight, "recall@10", 0.65)


@pytest.mark.ragmetrics
def test_answers_are_faithful(ragmetrics_cache: Path) -> None:
    """The local judge on the collection's own answers; verdicts cached in the run's shared cache. A fifth of
    those answers are wrong or weak on purpose (`answer_quality` in qa.jsonl), so the floor is low: the
    local judge's faithfulness is 0.61 on the good ones and 0.15 on the wrong ones (docs/local_judge.md)."""
    judge = make_judge(JudgeSettings(backend="local", max_concurrency=1, cache_path=ragmetrics_cache))
    judged = evaluate_rag(load_samples(), ["faithfulness"], judge, name="pipeline", progress=False)
    assert_at_least(judged, "faithfulness", 0.3)
