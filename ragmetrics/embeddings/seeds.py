"""Embedding vectors shipped with the package: the built-in collection's sentences, already embedded.

The quickstart and the nightly config judge the built-in collection with the local judge; embedding its
481 passages' sentences is most of a first run's time, and every new user would pay it. The vectors are
computed once by `tools/build_seed_vectors.py` with the same model and shipped in
`embeddings/assets/seed_vectors.npz`, keyed by embedder name and exact text. They are verified on load (the
embedder's name, and a SHA-256 over texts and vectors recorded when they were built); a file that fails is
ignored with a warning and the texts are embedded as usual. A test recomputes a sample of them with the
model and requires bit-identical vectors, so a seed is never a different number than the model would give.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["SEED_PATH", "seed_digest", "seed_vectors", "write_seeds"]

SEED_PATH = Path(__file__).with_name("assets") / "seed_vectors.npz"
logger = logging.getLogger("ragmetrics.judge")


def seed_digest(embedder: str, texts: list[str], vectors: NDArray[np.float32]) -> str:
    """SHA-256 over the embedder name, every text (UTF-8, NUL-separated) and the vectors' float32 bytes."""
    digest = hashlib.sha256(embedder.encode("utf-8") + b"\x00")
    digest.update("\x00".join(texts).encode("utf-8", "surrogatepass"))
    digest.update(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
    return digest.hexdigest()


def write_seeds(path: Path, embedder: str, texts: list[str], vectors: NDArray[np.float32]) -> None:
    if len(texts) != vectors.shape[0]:
        raise ValueError(f"{len(texts)} texts but {vectors.shape[0]} vectors")
    np.savez_compressed(
        path,
        embedder=np.array(embedder),
        texts=np.array(texts, dtype=str),
        vectors=np.ascontiguousarray(vectors, dtype="<f4"),
        sha256=np.array(seed_digest(embedder, texts, vectors)),
    )


@functools.lru_cache(maxsize=4)
def seed_vectors(embedder: str, path: Path = SEED_PATH) -> Mapping[str, NDArray[np.float32]]:
    """text -> vector for `embedder`, or an empty mapping when no verified seeds exist for it."""
    if not path.is_file():
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            name = str(data["embedder"])
            texts = [str(t) for t in data["texts"].tolist()]
            vectors = np.asarray(data["vectors"], dtype=np.float32)
            recorded = str(data["sha256"])
    except (OSError, KeyError, ValueError) as exc:
        logger.warning("ignoring shipped embeddings %s: unreadable (%s)", path, exc)
        return {}
    if name != embedder:
        return {}
    if vectors.ndim != 2 or vectors.shape[0] != len(texts) or seed_digest(name, texts, vectors) != recorded:
        logger.warning("ignoring shipped embeddings %s: their checksum does not match", path)
        return {}
    return {text: vectors[i] for i, text in enumerate(texts)}
