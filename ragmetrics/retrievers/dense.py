"""Dense retrieval: every passage ranked by the cosine of its embedding with the question's (a bi-encoder).

The embedder is the local MiniLM model (the built-in collection's passage vectors ship precomputed), so the
hybrid BM25 + dense comparison runs offline. Exhaustive search, exact: in memory for a corpus given alone, or
over the persisted, memory-mapped vectors of `ragmetrics.index` when a night gives an index folder (measured to
a million chunks in docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics.errors import ConfigError
from ragmetrics.retrievers._inputs import Corpus
from ragmetrics.retrievers._ranking import id_order, top_k
from ragmetrics.retrievers.bm25 import Ranking
from ragmetrics.retrievers.rerank import SyncEmbedder, default_embedder

if TYPE_CHECKING:
    from ragmetrics.index.corpus import BuildCounts
    from ragmetrics.index.store import IndexStore

DEFAULT_TOP_K = 100
DENSE_PARAMS = frozenset({"top_k", "search", "ef_search"})
"""top_k; search: exact (default) or hnsw (approximate, the `ann` extra: ragmetrics.index.hnsw); ef_search:
the HNSW search breadth (default 128; higher: better recall, slower)."""


def dense_prepare(
    corpus: Corpus,
    params: Mapping[str, Any],
    embedder: SyncEmbedder | None = None,
    *,
    store: IndexStore | None = None,
    counts: BuildCounts | None = None,
) -> Callable[[str], Ranking]:
    """Embed every passage (the index); return one question's search: the `top_k` (default 100) passages by
    cosine with it, ties by passage id descending.

    With `store`, the passage vectors come from the persisted index (`ragmetrics.index.dense`): only chunks
    never embedded by this model before are embedded, and `counts` says how many."""
    unknown = sorted(set(params) - DENSE_PARAMS)
    if unknown:
        raise ConfigError(f"dense: unknown parameter(s) {unknown}; known: {sorted(DENSE_PARAMS)}")
    keep = params.get("top_k", DEFAULT_TOP_K)
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ConfigError(f"dense: top_k must be an integer >= 1, got {keep!r}")
    how = params.get("search", "exact")
    if how not in ("exact", "hnsw"):
        raise ConfigError(f"dense: search must be 'exact' or 'hnsw', got {how!r}")
    ef_search = params.get("ef_search", 128)
    if isinstance(ef_search, bool) or not isinstance(ef_search, int) or ef_search < 1:
        raise ConfigError(f"dense: ef_search must be an integer >= 1, got {ef_search!r}")
    model = embedder or default_embedder()
    if store is not None or how == "hnsw":
        from ragmetrics.index.dense import build_dense

        chunks = lambda: zip(corpus.ids, corpus.texts, strict=True)  # noqa: E731
        if store is not None:
            index, built = store.dense(chunks, model)
            if counts is not None:
                counts.add(built)
        else:  # an approximate index wanted without a folder to keep it: built in a temporary one
            import tempfile

            index, _ = build_dense(Path(tempfile.mkdtemp(prefix="ragmetrics-dense-")), chunks, model)
        ids = corpus.ids
        if how == "hnsw":
            from ragmetrics.index.hnsw import HnswIndex

            graph, _ = HnswIndex.build(index, store.root if store is not None else None)
            return lambda q: [
                (ids[p], s) for p, s in graph.search(model.encode([q])[0], keep, ef_search=ef_search)
            ]
        return lambda question: [(ids[p], s) for p, s in index.search(model.encode([question])[0], keep)]
    passage_vecs = model.encode(list(corpus.texts))
    id_ranks = id_order(corpus.ids)

    def search(question: str) -> Ranking:
        qvec = model.encode([question])[0]
        cosines = (passage_vecs @ qvec).astype(np.float64)
        best = top_k(cosines, id_ranks, keep, positive_only=False)
        return [(corpus.ids[i], float(cosines[i])) for i in best]

    return search


def dense_search(
    corpus: Corpus,
    queries: Mapping[str, str],
    params: Mapping[str, Any],
    embedder: SyncEmbedder | None = None,
) -> dict[str, Ranking]:
    """The `top_k` (default 100) passages by cosine with each question; ties by passage id descending."""
    search = dense_prepare(corpus, params, embedder)
    return {qid: search(text) for qid, text in queries.items()}
