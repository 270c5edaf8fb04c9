"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint, through the judge's client.

Going through `JudgeClient` gives embeddings the same retries, concurrency bound and token accounting as the
chat verdicts. Texts are sent in batches; with a cache, vectors already stored are not requested again
(`StoredEmbedder`, the same store the local judge uses), so a second run makes no embedding calls either.
"""

from __future__ import annotations

import asyncio

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import Embedder
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.embedding_store import StoredEmbedder
from ragmetrics.judge.openai.client import JudgeClient
from ragmetrics.judge.settings import TokenPooling

DEFAULT_BATCH_SIZE = 128


class _Endpoint:
    """The endpoint itself: distinct texts in batches, unit-length float32 vectors back."""

    def __init__(self, client: JudgeClient, model: str, batch_size: int, pooling: TokenPooling) -> None:
        self._client = client
        self._model = model
        self._batch_size = batch_size
        self._pooling = pooling

    @property
    def name(self) -> str:
        return self._model

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        batches = [unique[i : i + self._batch_size] for i in range(0, len(unique), self._batch_size)]
        results = await asyncio.gather(
            *(self._client.embed(batch, self._model, pooling=self._pooling) for batch in batches)
        )
        by_text = {
            text: vector
            for batch, (vectors, _usage) in zip(batches, results, strict=True)
            for text, vector in zip(batch, vectors, strict=True)
        }
        dims = {len(v) for v in by_text.values()}
        if len(dims) != 1:
            raise JudgeError(
                f"embeddings ({self._model}): vectors of different sizes {sorted(dims)}",
                cause="invalid_output",
            )
        matrix = np.asarray([by_text[t] for t in texts], dtype=np.float64)
        if not np.isfinite(matrix).all() or not matrix.any(axis=1).all():
            raise JudgeError(
                f"embeddings ({self._model}): the server returned a zero or non-finite vector",
                cause="invalid_output",
            )
        unit: NDArray[np.float32] = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(
            np.float32
        )
        return unit


class OpenAIEmbedder:
    """Embedder protocol over `JudgeClient.embed`: unit-length float32 vectors, batched and cached per text."""

    def __init__(
        self,
        client: JudgeClient,
        model: str | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache: VerdictCache | None = None,
        pooling: TokenPooling = "refuse",
        owns_client: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self._client = client if owns_client else None
        endpoint = _Endpoint(client, model or client.settings.embedding_model, batch_size, pooling)
        self._impl: Embedder = (
            StoredEmbedder(endpoint, cache, backend="openai") if cache is not None else endpoint
        )

    @property
    def name(self) -> str:
        return self._impl.name

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        return await self._impl.embed(texts)

    async def aclose(self) -> None:
        """Close the client when it is this embedder's own (a second endpoint), not the judge's."""
        if self._client is not None:
            await self._client.aclose()
