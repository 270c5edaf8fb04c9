"""Persisted retrieval indexes: chunk vectors and BM25 postings built once, kept on disk, keyed by content.

The reference retrievers (`ragmetrics.retrievers`) re-embedded and re-tokenised the whole corpus every night;
on a busy 2-core machine 98 % of their time was the embedding model (benchmarks/profile_night_retrievers.py).
With an index folder they read what an earlier night, test-set build or sweep already computed:

- `IndexStore(root).dense(chunks, embedder)` -> (`DenseIndex`, `BuildCounts`): vectors keyed by (text hash,
  model identity); a second build on unchanged chunks embeds 0, a changed document re-embeds its own chunks;
- `IndexStore(root).bm25(chunks, k1=, b=, method=, stopwords=, stem=)` -> (`BM25Index`, `BuildCounts`): keyed by
  the texts, the tokenizer and the scoring settings; bm25s's scores to the bit, built in bounded memory;
- `IndexStore(root).vectors(embedder)` -> `StoredVectors`: per-text lookups through the same store (a
  reranker's candidates);
- `hnsw.HnswIndex` (the `ann` extra, faiss-cpu): an approximate index over a `DenseIndex` where exact search
  stops scaling, with its recall against exact search measured in docs/benchmarks.md.

`chunks` is a sequence of (id, text) or a function returning a fresh iterator over them, so a corpus can be
streamed from disk; only ids and 32-byte hashes stay in memory. Files are written atomically, checksummed and
memory-mapped (`index.arrays`); a truncated or corrupted file is rebuilt, never trusted. One chunking's index
serves every retriever over it: a sweep asks the store for the same chunks and gets the same files (and, in one
process, the same open index).
"""

from __future__ import annotations

from ragmetrics.index.bm25 import BM25Index, build_bm25
from ragmetrics.index.corpus import BuildCounts, Chunks
from ragmetrics.index.dense import DenseIndex, build_dense
from ragmetrics.index.store import DEFAULT_INDEX_DIR, IndexStore, StoredVectors, close_all

__all__ = ["DEFAULT_INDEX_DIR", "BM25Index", "BuildCounts", "Chunks", "DenseIndex", "IndexStore", "StoredVectors",
           "build_bm25", "build_dense", "close_all"]  # fmt: skip
