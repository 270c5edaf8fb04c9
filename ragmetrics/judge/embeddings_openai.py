"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint, through the judge's client.

Going through `JudgeClient` gives embeddings the same retries, concurrency bound and token accounting as the
chat verdicts. Texts are sent in batches; vectors already in the verdict cache are not requested again, so a
second run over the same samples makes no embedding calls either.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge.cache import VerdictCache, cache_key
from ragmetrics.judge.client import JudgeClient

DEFAULT_BATCH_SIZE = 128


class OpenAIEmbedder:
    """Embedder protocol over `JudgeClient.embed`: unit-length float32 vectors, batched and cached per text."""

    def __init__(
        self,
        client: JudgeClient,
        model: str | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache: VerdictCache | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self._client = client
        self._model = model or client.settings.embedding_model
        self._batch_size = batch_size
        self._cache = cache

    @property
    def name(self) -> str:
        return self._model

    def _key(self, text: str) -> str:
        return cache_key({"backend": "openai", "kind": "embedding", "model": self._model, "input": text})

    def _cached(self, text: str) -> list[float] | None:
        """The stored vector of `text`; a row that is not a non-zero finite vector is a miss and is re-asked."""
        hit = self._cache.get(self._key(text)) if self._cache is not None else None
        if hit is None:
            return None
        value = hit.value
        if (
            isinstance(value, list)
            and value
            and all(type(x) in (int, float) and math.isfinite(x) for x in value)
            and any(value)
        ):
            return [float(x) for x in value]
        assert self._cache is not None
        self._cache.discard_hit()
        return None

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        vectors: list[list[float] | None] = [None] * len(texts)
        todo: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            cached = self._cached(text)
            if cached is not None:
                vectors[i] = cached
            else:
                todo.setdefault(text, []).append(i)
        unique = list(todo)
        batches = [unique[i : i + self._batch_size] for i in range(len(unique))[:: self._batch_size]]
        results = await asyncio.gather(*(self._client.embed(batch, self._model) for batch in batches))
        for batch, (batch_vectors, usage) in zip(batches, results, strict=True):
            per_batch = {**usage.as_dict(), "batch_size": len(batch)}
            for text, vector in zip(batch, batch_vectors, strict=True):
                if not all(np.isfinite(vector)) or not any(vector):
                    raise JudgeError(
                        f"embeddings ({self._model}): the server returned a zero or non-finite vector",
                        cause="invalid_output",
                    )
                for i in todo[text]:
                    vectors[i] = vector
                if self._cache is not None:
                    self._cache.put(self._key(text), "embedding", vector, per_batch)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        dims = {len(v) for v in vectors if v is not None}
        if len(dims) != 1:
            raise JudgeError(
                f"embeddings ({self._model}): vectors of different sizes {sorted(dims)}",
                cause="invalid_output",
            )
        matrix = np.asarray(vectors, dtype=np.float32)
        unit: NDArray[np.float32] = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(
            np.float32
        )
        return unit
