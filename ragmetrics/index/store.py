"""One folder of persisted indexes, shared by every night, test-set build and sweep that points at it.

    store = IndexStore(".ragmetrics-cache/index")
    dense, counts = store.dense(chunks, embedder)         # DenseIndex; counts.embedded == 0 the second time
    bm25, counts = store.bm25(chunks, k1=1.2, b=0.75)     # BM25Index; counts.built is False the second time
    vectors = store.vectors(embedder)                     # per-text lookups (a reranker's candidates)

Everything is keyed by content, never by name or path: a dense index by the model's identity and every chunk
text's hash in order, a BM25 index by the texts, the tokenizer and the scoring settings, a vector by its text's
hash and the model. So a test-set build and a night over the same chunks find the same files, and one
chunking's index serves every retriever over it (BM25, dense, BM25 + rerank, fusions of them, each `k`) within
a process too: indexes opened once are kept (a few, most recent) and handed out again.

The default folder, `.ragmetrics-cache/index`, sits beside the judge's default verdict cache, so `ragmetrics
run` and `ragmetrics testset` run from one project share it; both take `index_dir` to put it elsewhere.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.index.bm25 import BM25Index, build_bm25
from ragmetrics.index.corpus import BuildCounts, Chunks, iterate, scan
from ragmetrics.index.dense import DenseIndex, build_dense
from ragmetrics.index.embeddings import EmbeddingStore, SyncEmbedder, embedder_identity, text_digest

__all__ = ["DEFAULT_INDEX_DIR", "IndexStore", "StoredVectors", "close_all"]

DEFAULT_INDEX_DIR = Path(".ragmetrics-cache/index")
_KEEP_OPEN = 6
_open: OrderedDict[tuple[str, str], Any] = OrderedDict()
_open_lock = threading.Lock()


def _remember(key: tuple[str, str], index: Any) -> None:
    with _open_lock:
        _open[key] = index
        _open.move_to_end(key)
        while len(_open) > _KEEP_OPEN:
            _open.popitem(last=False)


def _recall(key: tuple[str, str]) -> Any:
    with _open_lock:
        found = _open.get(key)
        if found is not None:
            _open.move_to_end(key)
        return found


def close_all() -> None:
    """Forget the indexes this process has open (the next use reads them from disk again)."""
    with _open_lock:
        _open.clear()


class IndexStore:
    """Persisted indexes under `root` (module docstring)."""

    def __init__(self, root: Path | str = DEFAULT_INDEX_DIR) -> None:
        self.root = Path(root).resolve()

    def dense(
        self, chunks: Chunks, embedder: SyncEmbedder, *, identity: str | None = None
    ) -> tuple[DenseIndex, BuildCounts]:
        """The dense index of `chunks` under `embedder` (`index.dense`), opened once per process."""
        identity = identity or embedder_identity(embedder)
        scanned = scan(chunks)
        memo = (str(self.root), "dense:" + scanned.key("dense-v1", identity))
        found = _recall(memo)
        if isinstance(found, DenseIndex) and list(found.ids) == scanned.ids:
            return found, BuildCounts(reused=len(found))
        index, counts = build_dense(self.root, chunks, embedder, identity=identity, scanned=scanned)
        _remember(memo, index)
        return index, counts

    def bm25(self, chunks: Chunks, *, k1: float = 1.5, b: float = 0.75, method: str = "lucene",
             stopwords: str | Sequence[str] | None = "en", stem: bool = False) -> tuple[BM25Index, BuildCounts]:  # fmt: skip
        """The BM25 index of `chunks` under these settings (`index.bm25`), opened once per process."""
        scanned = scan(chunks)
        settings = repr((k1, b, method, stopwords, stem))
        memo = (str(self.root), "bm25:" + scanned.key("bm25-settings", settings))
        found = _recall(memo)
        if isinstance(found, BM25Index) and list(found.ids) == scanned.ids:
            return found, BuildCounts()
        index, counts = build_bm25(self.root, chunks, k1=k1, b=b, method=method, stopwords=stopwords, stem=stem,
                                   scanned=scanned)  # fmt: skip
        _remember(memo, index)
        return index, counts

    def missing(
        self, chunks: Chunks, embedder: SyncEmbedder, *, identity: str | None = None
    ) -> tuple[int, int]:
        """(chunks, characters) that building the dense index of `chunks` would embed now: what a dry run
        foretells. Reads the store only; writes nothing."""
        identity = identity or embedder_identity(embedder)
        scanned = scan(chunks)
        if (self.root / "dense" / f"{scanned.key('dense-v1', identity)}.rmx").exists():
            return 0, 0
        folder = EmbeddingStore.folder_of(self.root, identity)
        if not folder.is_dir():
            return len(scanned.ids), sum(len(text) for _, text in iterate(chunks))
        where, _, _ = EmbeddingStore(self.root, identity).locate(scanned.digests)
        lacking = {bytes(d).ljust(32, b"\x00") for d in scanned.digests[where < 0]}
        count = chars = 0
        for _, text in iterate(chunks):
            digest = text_digest(text)
            if digest in lacking:
                lacking.discard(digest)
                count += 1
                chars += len(text)
        return count, chars

    def vectors(self, embedder: SyncEmbedder, *, identity: str | None = None) -> StoredVectors:
        """Vectors for any texts, from the store or embedded now and kept (`StoredVectors`)."""
        return StoredVectors(EmbeddingStore(self.root, identity or embedder_identity(embedder)), embedder)


class StoredVectors:
    """Text -> vector through the store, for work that needs a few chunks' vectors at a time (a reranker's
    candidates): stored ones are read, the rest embedded and written in batches (`finish` writes the last)."""

    FLUSH_ROWS = 2048

    def __init__(self, store: EmbeddingStore, embedder: SyncEmbedder) -> None:
        self._store, self._embedder = store, embedder
        self._fresh: dict[bytes, NDArray[np.float32]] = {}
        self._unsaved: list[bytes] = []
        self.counts = BuildCounts()

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        digests = [text_digest(t) for t in texts]
        out: list[NDArray[np.float32] | None] = [self._fresh.get(d) for d in digests]
        todo = [i for i, v in enumerate(out) if v is None]
        if todo:
            keys = np.array([digests[i] for i in todo], dtype="S32")
            where, rows, segments = self._store.locate(keys)
            for j, i in enumerate(todo):
                if where[j] >= 0:
                    out[i] = np.asarray(segments[where[j]].vectors[rows[j]], dtype=np.float32)
        missing = list(dict.fromkeys(digests[i] for i, v in enumerate(out) if v is None))
        self.counts.reused += len(texts) - sum(1 for v in out if v is None)
        if missing:
            text_of = {d: t for d, t in zip(digests, texts, strict=True)}
            vectors = np.asarray(self._embedder.encode([text_of[d] for d in missing]), dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(missing) or not np.isfinite(vectors).all():
                raise ValueError(
                    f"embedder returned {vectors.shape} (or values not finite) for {len(missing)} texts"
                )
            self.counts.embedded += len(missing)
            for digest, vector in zip(missing, vectors, strict=True):
                self._fresh[digest] = vector
                self._unsaved.append(digest)
            out = [self._fresh[d] if v is None else v for d, v in zip(digests, out, strict=True)]
            if len(self._unsaved) >= self.FLUSH_ROWS:
                self.finish()
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([v for v in out if v is not None])

    def finish(self) -> None:
        """Write the vectors embedded since the last write (one segment)."""
        if self._unsaved:
            self._store.add(list(self._unsaved), np.stack([self._fresh[d] for d in self._unsaved]))
            self._unsaved.clear()
