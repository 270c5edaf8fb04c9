"""Dense retrieval: every passage ranked by the cosine of its embedding with the question's (a bi-encoder).

The embedder is the local MiniLM model (the built-in collection's passage vectors ship precomputed), so the
hybrid BM25 + dense comparison runs offline. Exhaustive search, exact: in memory for a corpus given alone, or
over the persisted, memory-mapped vectors of `ragmetrics.index` when a night gives an index folder (measured to
a million chunks in docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    unknown = sorted(set(params) - {"top_k"})
    if unknown:
        raise ConfigError(f"dense: unknown parameter(s) {unknown}; known: ['top_k']")
    keep = params.get("top_k", DEFAULT_TOP_K)
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ConfigError(f"dense: top_k must be an integer >= 1, got {keep!r}")
    model = embedder or default_embedder()
    if store is not None:
        index, built = store.dense(lambda: zip(corpus.ids, corpus.texts, strict=True), model)
        if counts is not None:
            counts.add(built)
        ids = corpus.ids
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
