"""Reference retrievers for the built-in collection and the reranker comparison (the `examples` extra).

They are deliberately small and deterministic: BM25 with `bm25s`, and BM25 candidates reranked by the local
MiniLM embedder. They turn (passages, queries) into a `Run`; `ragmetrics run` builds one per
`runs: [{source: retriever, retriever: KIND, params: {...}}]` entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import ConfigError
from ragmetrics.retrievers._inputs import Corpus, corpus_from, queries_from

if TYPE_CHECKING:
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrievers.rerank import SyncEmbedder

Ranking = list[tuple[str, float]]

__all__ = ["KINDS", "build_run", "search"]


def _bm25(
    corpus: Corpus, queries: Mapping[str, str], params: Mapping[str, Any], _: Any
) -> dict[str, Ranking]:
    from ragmetrics.retrievers.bm25 import bm25_search

    return bm25_search(corpus, queries, params)


def _bm25_rerank(
    corpus: Corpus, queries: Mapping[str, str], params: Mapping[str, Any], embedder: Any
) -> dict[str, Ranking]:
    from ragmetrics.retrievers.rerank import bm25_rerank_search

    return bm25_rerank_search(corpus, queries, params, embedder)


_KINDS: dict[str, Callable[[Corpus, Mapping[str, str], Mapping[str, Any], Any], dict[str, Ranking]]] = {
    "bm25": _bm25,
    "bm25_rerank": _bm25_rerank,
}
KINDS: tuple[str, ...] = tuple(_KINDS)


def search(
    kind: str,
    params: Mapping[str, Any] | None,
    passages: Sequence[Mapping[str, object]],
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    *,
    embedder: SyncEmbedder | None = None,
) -> dict[str, Ranking]:
    """Query id -> [(passage id, score)] in rank order (score descending, ties by passage id descending)."""
    retrieve = _KINDS.get(kind)
    if retrieve is None:
        raise ConfigError(f"unknown retriever kind {kind!r}; kinds: {', '.join(KINDS)}")
    if params is not None and not isinstance(params, Mapping):
        raise ConfigError(f"{kind}: params must be a mapping, got {type(params).__name__}")
    return retrieve(corpus_from(passages), queries_from(queries), dict(params or {}), embedder)


def build_run(
    kind: str,
    params: Mapping[str, Any] | None,
    passages: Sequence[Mapping[str, object]],
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    name: str | None = None,
    *,
    embedder: SyncEmbedder | None = None,
) -> Run:
    """Retrieve for every query and return the rankings as a `Run` named `name` (default: the kind).

    kinds: "bm25" (params k1, b, method, stem, stopwords, top_k=100) and "bm25_rerank" (the same BM25
    params plus candidates=50 and top_k=candidates; score = cosine of MiniLM embeddings). A query that
    matches nothing is kept with an empty ranking, so it scores 0 rather than disappearing.
    """
    from ragmetrics.retrieval.run import Run

    rankings = search(kind, params, passages, queries, embedder=embedder)
    return Run.from_dict(
        {qid: dict(ranking) for qid, ranking in rankings.items()},
        name=name or kind,
        source=f"retriever {kind}",
    )
