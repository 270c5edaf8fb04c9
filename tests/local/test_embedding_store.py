"""The local judge keeps its embeddings in the verdict cache: a rerun (or a restart) never runs the model again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.local import LocalJudge
from ragmetrics.judge.select import make_judge
from ragmetrics.judge.settings import JudgeSettings

METRICS = ["context_precision", "context_recall", "context_relevancy", "answer_relevancy"]


class CountingEmbedder:
    """Deterministic 3-d vectors from the text's bytes; counts every text it is asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return "counting"

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        self.texts += texts
        rows = [[1.0 + len(t) % 7, 1.0 + sum(t.encode()) % 11, 1.0 + t.count("e")] for t in texts]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), 3)
        unit: NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return unit


SAMPLES = [
    {
        "id": f"s{i}",
        "question": f"What does function number {i} do?",
        "contexts": [f"Function {i} sorts a list. It is stable.", "Unrelated text here. Nothing else."],
        "answer": f"It sorts a list ({i}).",
        "reference": f"Function {i} sorts a list in place. The sort is stable.",
    }
    for i in range(6)
]


def test_rerun_embeds_nothing_and_scores_the_same(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.sqlite"
    first_embedder = CountingEmbedder()
    first = evaluate_rag(
        SAMPLES, METRICS, LocalJudge(first_embedder, cache=VerdictCache(path)), progress=False
    )
    assert first_embedder.texts and not first.failures
    info = first.metadata.judge
    assert info is not None and info.cache.enabled and info.cache.writes == len(set(first_embedder.texts))

    # A new process would build a new judge over the same file: nothing is embedded again.
    second_embedder = CountingEmbedder()
    second = evaluate_rag(
        SAMPLES, METRICS, LocalJudge(second_embedder, cache=VerdictCache(path)), progress=False
    )
    assert second_embedder.texts == []
    assert second.per_query == first.per_query
    info = second.metadata.judge
    assert info is not None and info.cache.hits > 0 and info.cache.writes == 0


def test_bypassed_cache_embeds_again(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.sqlite"
    evaluate_rag(SAMPLES, METRICS, LocalJudge(CountingEmbedder(), cache=VerdictCache(path)), progress=False)
    again = CountingEmbedder()
    evaluate_rag(
        SAMPLES, METRICS, LocalJudge(again, cache=VerdictCache(path, enabled=False)), progress=False
    )
    assert again.texts


def test_make_judge_wires_the_cache_from_settings(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    on = make_judge(JudgeSettings(backend="local", cache_path=path)).info().cache
    assert on.enabled and on.path == str(path)
    off = make_judge(JudgeSettings(backend="local", cache_path=path, use_cache=False)).info().cache
    assert not off.enabled
    none = make_judge(JudgeSettings(backend="local", cache_path=None)).info().cache
    assert not none.enabled
