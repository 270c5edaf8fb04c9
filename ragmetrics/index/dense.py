"""A dense index persisted: the corpus's chunk vectors in corpus order, one memory-mapped file per (texts, model).

Built from the embedding store (`index.embeddings`): a chunk whose text any earlier build embedded with the same
model costs a lookup, not a model call; only the rest are embedded, in batches, saved as they go. The matrix
for this corpus is then gathered once into `<root>/dense/<key>.rmx`, the key being the SHA-256 of the model's
identity and every text's hash in order, so the next night on the same corpus opens that file and does
nothing else (`BuildCounts.embedded == 0`).

Search is exact: the question's vector against every row, a block of rows at a time (so a million rows cost
page cache, not memory), keeping only each block's best. Where exact search stops scaling, `index.hnsw` puts
an approximate index over the same file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.index.arrays import IndexFileError, IndexFileWriter, open_arrays
from ragmetrics.index.corpus import BuildCounts, Chunks, CorpusScan, iterate, scan
from ragmetrics.index.embeddings import (
    SEGMENT_ROWS,
    EmbeddingStore,
    SyncEmbedder,
    embedder_identity,
    text_digest,
)
from ragmetrics.index.ranking import best_k, kth_or_better

__all__ = ["DenseIndex", "build_dense"]

EMBED_BATCH = 256
"""Texts per call to the model (it groups them by length itself)."""
SEARCH_BLOCK = 65_536
"""Rows scored at a time: 96 MB of float32 at 384 dimensions."""


class DenseIndex:
    """Chunk ids and their vectors (memory-mapped, corpus order); `search` is exact cosine (dot of unit vectors)."""

    def __init__(self, ids: Sequence[str], vectors: NDArray[np.float32], key: str, path: Path | None) -> None:
        from ragmetrics.retrievers._ranking import id_order

        self.ids = ids
        self.vectors = np.asarray(
            vectors
        )  # a plain view of the mapped file: numpy's memmap subclass is slower
        self.key = key
        self.path = path
        self.id_ranks = id_order(tuple(ids))

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, query: NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The best `k` (position, cosine), ties by id descending, exactly as scoring every row and sorting."""
        query = np.asarray(query, dtype=np.float32)
        kept_pos: list[NDArray[np.int64]] = []
        kept_scores: list[NDArray[np.float64]] = []
        for start in range(0, len(self.ids), SEARCH_BLOCK):
            scores = (self.vectors[start : start + SEARCH_BLOCK] @ query).astype(np.float64)
            near = kth_or_better(scores, k)
            kept_pos.append(near + start)
            kept_scores.append(scores[near])
        positions, scores = np.concatenate(kept_pos), np.concatenate(kept_scores)
        best = best_k(scores, positions, self.id_ranks, k, positive_only=False)
        lookup = {int(p): float(s) for p, s in zip(positions, scores, strict=True)}
        return [(p, lookup[p]) for p in best]

    def rows(self, positions: Sequence[int]) -> NDArray[np.float32]:
        """The stored vectors of these chunks (a reranker's candidates), as a fresh array."""
        return np.asarray(self.vectors[np.asarray(positions, dtype=np.int64)], dtype=np.float32)


def _embed_missing(chunks: Chunks, missing: set[bytes], store: EmbeddingStore, embedder: SyncEmbedder) -> int:
    """Embed every text whose hash is in `missing` (once each), saving a segment every SEGMENT_ROWS vectors;
    returns how many texts the model embedded."""
    embedded = 0
    batch_texts: list[str] = []
    pending_keys: list[bytes] = []
    pending_vecs: list[NDArray[np.float32]] = []

    def flush_batch() -> None:
        nonlocal embedded
        vectors = np.asarray(embedder.encode(batch_texts), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(batch_texts):
            raise ValueError(f"embedder returned shape {vectors.shape} for {len(batch_texts)} texts")
        pending_vecs.append(vectors)
        embedded += len(batch_texts)
        batch_texts.clear()

    def flush_segment() -> None:
        if pending_keys:
            store.add(list(pending_keys), np.concatenate(pending_vecs))
            pending_keys.clear()
            pending_vecs.clear()

    for _, text in iterate(chunks):
        digest = text_digest(text)
        if digest not in missing:
            continue
        missing.discard(digest)
        batch_texts.append(text)
        pending_keys.append(digest)
        if len(batch_texts) >= EMBED_BATCH:
            flush_batch()
            if len(pending_keys) >= SEGMENT_ROWS:
                flush_segment()
    if batch_texts:
        flush_batch()
    flush_segment()
    if missing:
        raise ValueError(f"{len(missing)} chunk texts changed between two passes over the corpus")
    return embedded


def _open(path: Path, key: str, scanned: CorpusScan) -> NDArray[np.float32] | None:
    try:
        meta, arrays = open_arrays(path, key)
    except IndexFileError:
        return None
    vectors = arrays.get("vectors")
    if (
        vectors is None
        or vectors.ndim != 2
        or vectors.shape[0] != len(scanned.ids)
        or meta.get("rows") != len(scanned.ids)
    ):
        return None
    result: NDArray[np.float32] = vectors
    return result


def build_dense(root: Path, chunks: Chunks, embedder: SyncEmbedder, *, identity: str | None = None,
                scanned: CorpusScan | None = None) -> tuple[DenseIndex, BuildCounts]:  # fmt: skip
    """The dense index of `chunks` under `root` (module docstring), and what it cost.

    A stored file that is truncated, corrupted or of another shape is rebuilt (it is never trusted); its
    vectors come from the embedding store, so a rebuild embeds nothing that was embedded before."""
    identity = identity or embedder_identity(embedder)
    scanned = scanned or scan(chunks)
    key = scanned.key("dense-v1", identity)
    path = Path(root) / "dense" / f"{key}.rmx"
    vectors = _open(path, key, scanned) if path.exists() else None
    if vectors is not None:
        return DenseIndex(scanned.ids, vectors, key, path), BuildCounts(reused=len(scanned.ids))
    store = EmbeddingStore(Path(root), identity)
    where, _, _ = store.locate(scanned.digests)
    missing = {bytes(d).ljust(32, b"\x00") for d in scanned.digests[where < 0]}
    embedded = _embed_missing(chunks, missing, store, embedder) if missing else 0
    where, rows, segments = store.locate(scanned.digests)
    dim = segments[0].vectors.shape[1]
    writer = IndexFileWriter(path, key, {"identity": identity, "rows": len(scanned.ids)},
                             {"vectors": ("<f4", (len(scanned.ids), dim))})  # fmt: skip
    try:
        store.gather(where, rows, segments, writer.array("vectors"))
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    _, arrays = open_arrays(path, key, verify=False)
    counts = BuildCounts(embedded=embedded, reused=len(scanned.ids) - embedded, built=True)
    stored: Any = arrays["vectors"]
    return DenseIndex(scanned.ids, stored, key, path), counts
