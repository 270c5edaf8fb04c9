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
        return cache_key(
            {"backend": self._backend, "kind": "embedding", "model": self._inner.name, "input": text}
        )

    def _stored(self, key: str) -> NDArray[np.float32] | None:
        hit = self._cache.get(key)
        if hit is None:
            return None
        vector = decode_vector(hit.value)
        if vector is None:
            self._cache.discard_hit()  # not a usable vector: compute it again and overwrite
        return vector

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        found: dict[int, NDArray[np.float32]] = {}
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
                    self._cache.put(key, "embedding", encode_vector(vector), {})
                    self._written.add(key)
        if computed is not None:
            dim = int(computed.shape[1])
        else:
            dim = next(iter(found.values())).shape[0] if found else 0
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
