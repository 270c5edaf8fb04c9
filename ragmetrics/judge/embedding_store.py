"""Embeddings kept in the verdict cache, so a nightly rerun of the local judge embeds nothing twice.

The local judge's cost is its embeddings; its verdicts are cheap once the vectors exist. Keeping the vectors
(keyed by embedder name and text, in the same SQLite cache as LLM verdicts) makes a rerun over the same
samples, or a restart after an interruption, skip the model entirely, exactly as the LLM judge skips its calls.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import Embedder
from ragmetrics.judge.cache import VerdictCache, cache_key


class StoredEmbedder:
    """Embedder protocol over another embedder, reading and writing vectors through a `VerdictCache`."""

    def __init__(self, inner: Embedder, cache: VerdictCache, *, backend: str = "local") -> None:
        self._inner = inner
        self._cache = cache
        self._backend = backend
        self._written: set[str] = set()  # keys stored by this process: concurrent callers share sentences

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def cache(self) -> VerdictCache:
        return self._cache

    def _key(self, text: str) -> str:
        return cache_key({"backend": self._backend, "kind": "embedding", "model": self._inner.name, "input": text})

    def _stored(self, key: str) -> list[float] | None:
        hit = self._cache.get(key)
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
        self._cache.discard_hit()  # not a usable vector: compute it again and overwrite
        return None

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        found: dict[int, list[float]] = {}
        todo: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            vector = self._stored(self._key(text))
            if vector is None:
                todo.setdefault(text, []).append(i)
            else:
                found[i] = vector
        computed: NDArray[np.float32] | None = None
        if todo:
            unique = list(todo)
            computed = await self._inner.embed(unique)
            for text, vector in zip(unique, computed, strict=True):
                key = self._key(text)
                if key not in self._written:
                    self._cache.put(key, "embedding", [float(x) for x in vector], {})
                    self._written.add(key)
        dim = computed.shape[1] if computed is not None else len(next(iter(found.values()), []))
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, vector in found.items():
            if len(vector) != dim:
                raise JudgeError(
                    f"stored embedding of {self._inner.name} has {len(vector)} dimensions, not {dim}; "
                    "clear the cache if the model behind this name changed",
                    cause="invalid_output",
                )
            out[i] = vector
        if computed is not None:
            for row, positions in enumerate(todo.values()):
                out[positions] = computed[row]
        return out
