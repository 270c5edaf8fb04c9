"""Embeddings kept in the verdict cache, so a nightly rerun of the local judge embeds nothing twice.

The local judge's cost is its embeddings; its verdicts are cheap once the vectors exist. Keeping the vectors
(keyed by embedder name and text, in the same SQLite cache as LLM verdicts) makes a rerun over the same
samples, or a restart after an interruption, skip the model entirely, exactly as the LLM judge skips its calls.
A vector is stored as its little-endian float32 bytes in base64 (2 KB for 384 dimensions, a quarter of the
same vector as a JSON list of decimals, and exact); rows written as JSON lists by 0.1.0 are still read.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import Embedder
from ragmetrics.judge.cache import VerdictCache, cache_key

_MEMORY_LIMIT = 200_000  # vectors kept in memory per process (~300 MB at 384 dimensions)


class StoredEmbedder:
    """Embedder protocol over another embedder, reading and writing vectors through a `VerdictCache`.

    Lookups and writes are batched (one SQLite statement per few hundred texts, one transaction per
    batch), and vectors seen by this process are kept in memory, so a sentence shared by many samples is
    read once. `seeds` are read-only vectors shipped with the package (the built-in collection's sentences),
    consulted before the cache.
    """

    def __init__(
        self,
        inner: Embedder,
        cache: VerdictCache,
        *,
        backend: str = "local",
        seeds: Mapping[str, NDArray[np.float32]] | None = None,
    ) -> None:
        self._inner = inner
        self._cache = cache
        self._backend = backend
        self._seeds: Mapping[str, NDArray[np.float32]] = seeds or {}
        self._memory: dict[str, NDArray[np.float32]] = {}  # text -> vector, for this process

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def cache(self) -> VerdictCache:
        return self._cache

    def _key(self, text: str) -> str:
        return cache_key(
            {"backend": self._backend, "kind": "embedding", "model": self._inner.name, "input": text}
        )

    def _lookup(self, texts: list[str]) -> None:
        """Move every text's stored vector (seeds, then cache) into memory; unusable rows count as misses."""
        wanted = [t for t in dict.fromkeys(texts) if t not in self._memory]
        from_cache = []
        for text in wanted:
            seed = self._seeds.get(text)
            if seed is not None:
                self._memory[text] = seed
            else:
                from_cache.append(text)
        if not from_cache:
            return
        keys = {text: self._key(text) for text in from_cache}
        hits = self._cache.get_many(list(keys.values()))
        for text, key in keys.items():
            hit = hits[key]
            if hit is None:
                continue
            vector = decode_vector(hit.value)
            if vector is None:
                self._cache.discard_hit()  # not a usable vector: compute it again and overwrite
            else:
                self._memory[text] = vector

    def missing(self, texts: list[str]) -> list[str]:
        """The distinct texts with no stored vector: what `embed` would send to the model."""
        self._lookup(texts)
        return [t for t in dict.fromkeys(texts) if t not in self._memory]

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        if len(self._memory) > _MEMORY_LIMIT:
            self._memory.clear()  # bounded: past this, re-reading from SQLite is cheaper than the RAM
        self._lookup(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self._memory]
        if todo:
            computed = await self._inner.embed(todo)
            if computed.ndim != 2 or computed.shape[0] != len(todo):
                raise JudgeError(
                    f"embedder {self._inner.name!r} returned shape {computed.shape} for {len(todo)} texts",
                    cause="embedder_error",
                )
            rows: list[tuple[str, str, Any, dict[str, int]]] = []
            for text, vector in zip(todo, computed, strict=True):
                stored = np.ascontiguousarray(vector, dtype=np.float32)
                self._memory[text] = stored
                rows.append((self._key(text), "embedding", encode_vector(stored), {}))
            self._cache.put_many(rows)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        dims = {self._memory[t].shape[0] for t in texts}
        if len(dims) > 1:
            raise JudgeError(
                f"stored embeddings of {self._inner.name} have {sorted(dims)} dimensions; "
                "clear the cache if the model behind this name changed",
                cause="invalid_output",
            )
        return np.stack([self._memory[t] for t in texts]).astype(np.float32, copy=False)


VECTOR_FIELD = "float32_le_base64"


def encode_vector(vector: NDArray[np.floating]) -> dict[str, str]:
    """The cache value of one vector: its little-endian float32 bytes, base64."""
    raw = np.ascontiguousarray(vector, dtype="<f4").tobytes()
    return {VECTOR_FIELD: base64.b64encode(raw).decode("ascii")}


def decode_vector(value: object) -> NDArray[np.float32] | None:
    """A stored vector, or None when the value is not one: empty, all zeros, not finite, or malformed.

    Also reads the JSON list of numbers that 0.1.0 stored.
    """
    if isinstance(value, dict) and set(value) == {VECTOR_FIELD} and isinstance(value[VECTOR_FIELD], str):
        try:
            raw = base64.b64decode(value[VECTOR_FIELD], validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) % 4:
            return None
        vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    elif isinstance(value, list) and all(type(x) in (int, float) for x in value):
        try:
            with np.errstate(over="ignore"):  # beyond float32 becomes inf, refused below
                vector = np.asarray(value, dtype=np.float64).astype(np.float32)
        except OverflowError:  # an int beyond float64
            return None
    else:
        return None
    if vector.shape[0] == 0 or not np.isfinite(vector).all() or not vector.any():
        return None
    return vector
