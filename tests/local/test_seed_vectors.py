"""Vectors shipped with the package are the model's own, verified on load, and spare the model its work."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from ragmetrics.embeddings.minilm import MODEL_NAME, MiniLMEmbedder
from ragmetrics.embeddings.seeds import SEED_PATH, seed_vectors, write_seeds
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.evaluate import evaluate_rag


def test_shipped_seeds_equal_what_the_model_computes() -> None:
    seeds = seed_vectors(MODEL_NAME)
    assert len(seeds) > 3000, "the built-in collection's sentences should ship embedded"
    texts = sorted(seeds)[::200]
    computed = asyncio.run(MiniLMEmbedder(cache_size=0).embed(texts))
    for text, vector in zip(texts, computed, strict=True):
        # Equal to float32 rounding: onnxruntime picks its kernels by CPU, and two x86 generations differ in
        # the last bits (seen: 3e-8 on another EPYC), which no score can show.
        np.testing.assert_allclose(seeds[text], vector, rtol=0, atol=1e-6)


def test_seeds_are_verified_on_load(tmp_path: Path) -> None:
    vectors = np.eye(3, dtype=np.float32)
    good = tmp_path / "good.npz"
    write_seeds(good, "m", ["a", "b", "c"], vectors)
    assert set(seed_vectors("m", good)) == {"a", "b", "c"}
    assert seed_vectors("other-model", good) == {}
    with np.load(good) as data:
        parts = dict(data)
    parts["vectors"] = parts["vectors"] + np.float32(1e-3)  # tampered numbers
    bad = tmp_path / "bad.npz"
    np.savez(bad, **parts)
    assert seed_vectors("m", bad) == {}
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert seed_vectors("m", tmp_path / "junk.npz") == {}
    assert SEED_PATH.is_file()


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = MiniLMEmbedder(cache_size=0)
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


def test_the_local_judge_embeds_only_what_the_seeds_lack(tmp_path: Path) -> None:
    from ragmetrics.collection import load_samples

    samples = load_samples()[:5]
    counting = CountingEmbedder()
    judge = LocalJudge(counting, cache=VerdictCache(tmp_path / "v.sqlite"))
    result = evaluate_rag(samples, ["context_relevancy", "context_recall"], judge, progress=False)
    assert not result.failures
    seeds = seed_vectors(MODEL_NAME)
    assert all(text not in seeds for text in counting.texts)
    assert len(counting.texts) < 5, counting.texts


@pytest.mark.parametrize("units", [1, 64])
def test_batching_across_units_changes_no_value(tmp_path: Path, units: int) -> None:
    from ragmetrics.collection import load_samples

    samples = load_samples()[:6]
    metrics = ["context_precision", "context_relevancy", "answer_relevancy"]
    judge = LocalJudge(MiniLMEmbedder(cache_size=0), cache=VerdictCache(tmp_path / f"{units}.sqlite"))
    batched = evaluate_rag(samples, metrics, judge, progress=False, max_units_in_flight=units)
    plain = evaluate_rag(samples, metrics, LocalJudge(MiniLMEmbedder(cache_size=0)), progress=False)
    # Batching changes no value beyond float32 rounding (the seeds were computed on another CPU, see above).
    assert batched.per_query.keys() == plain.per_query.keys()
    for qid, scores in plain.per_query.items():
        assert batched.per_query[qid] == pytest.approx(scores, rel=1e-5, abs=1e-9), qid


def test_a_cancelled_batch_leaves_no_caller_waiting() -> None:
    """An interrupt cancels the batch in flight: every unit waiting on it is cancelled too, none hangs."""
    from ragmetrics.judge.embedding_batch import BatchingEmbedder

    class Slow:
        name = "slow"

        async def embed(self, texts: list[str]) -> np.ndarray:
            await asyncio.sleep(30)
            return np.ones((len(texts), 2), dtype=np.float32)

    async def scenario() -> list[bool]:
        embedder = BatchingEmbedder(Slow())
        callers = [asyncio.ensure_future(embedder.embed([f"t{i}"])) for i in range(3)]
        await asyncio.sleep(0.05)
        assert embedder._worker is not None
        embedder._worker.cancel()
        done, pending = await asyncio.wait(callers, timeout=2)
        return [not pending, all(c.cancelled() for c in done)]

    assert asyncio.run(scenario()) == [True, True]
