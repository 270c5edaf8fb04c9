"""The local judge keeps its embeddings in the verdict cache: a rerun (or a restart) never runs the model again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.evaluate import evaluate_rag
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
    evaluate_rag(SAMPLES, METRICS, LocalJudge(again, cache=VerdictCache(path, enabled=False)), progress=False)
    assert again.texts


def test_make_judge_wires_the_cache_from_settings(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    on = make_judge(JudgeSettings(backend="local", cache_path=path)).info().cache
    assert on.enabled and on.path == str(path)
    off = make_judge(JudgeSettings(backend="local", cache_path=path, use_cache=False)).info().cache
    assert not off.enabled
    none = make_judge(JudgeSettings(backend="local", cache_path=None)).info().cache
    assert not none.enabled


def _embedding_rows(path: Path) -> list[str]:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT value FROM verdicts WHERE kind = 'embedding'")]


def _set_embedding_rows(path: Path, value: object) -> None:
    import json
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE verdicts SET value = ? WHERE kind = 'embedding'", (json.dumps(value),))


def test_vectors_are_stored_as_exact_float32_bytes(tmp_path: Path) -> None:
    import asyncio
    import json

    from ragmetrics.judge.embedding_store import VECTOR_FIELD, StoredEmbedder, decode_vector

    path = tmp_path / "verdicts.sqlite"
    inner = CountingEmbedder()
    store = StoredEmbedder(inner, VerdictCache(path))
    texts = ["alpha", "beta beta", "alpha"]
    first = asyncio.run(store.embed(texts))
    rows = _embedding_rows(path)
    assert len(rows) == 2  # "alpha" once
    for row in rows:
        value = json.loads(row)
        assert set(value) == {VECTOR_FIELD} and len(value[VECTOR_FIELD]) == 16  # 3 float32 = 12 bytes
        vector = decode_vector(value)
        assert vector is not None and vector.dtype == np.float32
    again = asyncio.run(StoredEmbedder(CountingEmbedder(), VerdictCache(path)).embed(texts))
    assert again.tobytes() == first.tobytes()


def test_vectors_stored_as_json_lists_by_0_1_0_are_still_read(tmp_path: Path) -> None:
    import asyncio

    from ragmetrics.judge.embedding_store import StoredEmbedder

    path = tmp_path / "verdicts.sqlite"
    first = asyncio.run(StoredEmbedder(CountingEmbedder(), VerdictCache(path)).embed(["alpha"]))
    _set_embedding_rows(path, [float(x) for x in first[0]])
    inner = CountingEmbedder()
    again = asyncio.run(StoredEmbedder(inner, VerdictCache(path)).embed(["alpha"]))
    assert inner.texts == [] and again.tobytes() == first.tobytes()


@pytest.mark.parametrize(
    "value",
    [
        {"float32_le_base64": "not base64!"},
        {"float32_le_base64": "AAAA"[:3]},
        {"float32_le_base64": "AADAfw=="},  # one NaN
        {"float32_le_base64": "AAAAAA=="},  # one zero: no direction
        {"float32_le_base64": ""},
        {"float32_le_base64": "AACAPw==", "extra": 1},
        [1e300],
        [10**400],
        [],
    ],
)
def test_a_malformed_stored_vector_is_embedded_again(tmp_path: Path, value: object) -> None:
    import asyncio

    from ragmetrics.judge.embedding_store import StoredEmbedder

    path = tmp_path / "verdicts.sqlite"
    first = asyncio.run(StoredEmbedder(CountingEmbedder(), VerdictCache(path)).embed(["alpha"]))
    _set_embedding_rows(path, value)
    inner = CountingEmbedder()
    again = asyncio.run(StoredEmbedder(inner, VerdictCache(path)).embed(["alpha"]))
    assert inner.texts == ["alpha"] and again.tobytes() == first.tobytes()
