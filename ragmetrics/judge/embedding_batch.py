"""Coalescing concurrent embedding requests into one model call.

`evaluate_rag` keeps many (sample, metric) units in flight; each asks the embedder for a handful of texts.
A model call has a fixed cost (a thread hand-off, ONNX session overhead, an HTTP request for a server), so
two texts per call is slow. `BatchingEmbedder` collects the requests made while a call is running (or
within the same event-loop turn) and sends them together, up to `max_batch` texts, de-duplicated; each
caller gets back exactly its rows. Results do not depend on the grouping, because the embedders'
vectors do not depend on which other texts share a batch (tested).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ragmetrics.judge.base import Embedder

__all__ = ["BatchingEmbedder"]


@dataclass
class _Request:
    texts: list[str]
    future: asyncio.Future[NDArray[np.float32]] = field(repr=False)


class BatchingEmbedder:
    """Embedder protocol over another embedder, batching concurrent calls (one model call at a time)."""

    def __init__(self, inner: Embedder, *, max_batch: int = 512) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, not {max_batch}")
        self._inner = inner
        self._max_batch = max_batch
        self._pending: list[_Request] = []
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def inner(self) -> Embedder:
        return self._inner

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return await self._inner.embed(texts)
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (a new evaluate_rag call): forget the old one's state
            self._pending, self._worker, self._loop = [], None, loop
        request = _Request(list(texts), loop.create_future())
        self._pending.append(request)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await request.future

    async def _drain(self) -> None:
        try:
            await self._drain_batches()
        except asyncio.CancelledError:
            # The loop is shutting down (an interrupt): nobody may wait forever on a batch that will not run.
            for request in self._pending:
                request.future.cancel()
            self._pending = []
            raise

    async def _drain_batches(self) -> None:
        await asyncio.sleep(0)  # let the other units of this event-loop turn add their requests
        while self._pending:
            batch: list[_Request] = []
            size = 0
            while self._pending and (not batch or size + len(self._pending[0].texts) <= self._max_batch):
                request = self._pending.pop(0)
                batch.append(request)
                size += len(request.texts)
            unique = list(dict.fromkeys(t for r in batch for t in r.texts))
            try:
                vectors = await self._inner.embed(unique)
                if vectors.ndim != 2 or vectors.shape[0] != len(unique):
                    raise ValueError(f"returned shape {vectors.shape} for {len(unique)} texts")
            except asyncio.CancelledError:
                for request in batch:
                    request.future.cancel()
                raise
            except Exception as exc:  # every waiting caller gets the embedder's own error
                for request in batch:
                    if not request.future.done():
                        request.future.set_exception(exc)
                continue
            row = {text: i for i, text in enumerate(unique)}
            for request in batch:
                if not request.future.done():
                    request.future.set_result(vectors[[row[t] for t in request.texts]])
