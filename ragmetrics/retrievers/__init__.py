"""Reference retrievers for the built-in collection and the reranker comparison (the `examples` extra).

They are deliberately small and deterministic: BM25 with `bm25s`; dense retrieval by the local MiniLM
embedder (a bi-encoder); and BM25 candidates reranked, by default by the same embedder's cosine: an
*embedding* reranker, not a cross-encoder, hence the kind's name `bm25_embedding_rerank` (`bm25_rerank`, its
name before 0.3, is still accepted). Any other reranker plugs in through the `reranker` parameter: a Python
callable or an HTTP rerank endpoint (`ragmetrics.retrievers.rerank`). They turn (passages, queries) into a
`Run`; `ragmetrics run` builds one per `runs: [{source: retriever, retriever: KIND, params: {...}}]` entry.
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

__all__ = ["ALIASES", "KINDS", "build_run", "check_available", "search"]


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


def _dense(
    corpus: Corpus, queries: Mapping[str, str], params: Mapping[str, Any], embedder: Any
) -> dict[str, Ranking]:
    from ragmetrics.retrievers.dense import dense_search

    return dense_search(corpus, queries, params, embedder)


_KINDS: dict[str, Callable[[Corpus, Mapping[str, str], Mapping[str, Any], Any], dict[str, Ranking]]] = {
    "bm25": _bm25,
    "dense": _dense,
    "bm25_embedding_rerank": _bm25_rerank,
}
KINDS: tuple[str, ...] = tuple(_KINDS)
ALIASES: dict[str, str] = {"bm25_rerank": "bm25_embedding_rerank"}
"""Old kind names, still accepted."""


def check_available(kind: str) -> None:
    """Raise the ConfigError a retriever of `kind` would raise for a missing package, before any work is done
    (BM25 kinds need bm25s, the `examples` extra); unknown kinds are left to `search` to name."""
    name = ALIASES.get(kind, kind)
    if name in ("bm25", "bm25_embedding_rerank"):
        from ragmetrics.retrievers.bm25 import _bm25s

        _bm25s()


def search(
    kind: str,
    params: Mapping[str, Any] | None,
    passages: Sequence[Mapping[str, object]],
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    *,
    embedder: SyncEmbedder | None = None,
) -> dict[str, Ranking]:
    """Query id -> [(passage id, score)] in rank order (score descending, ties by passage id descending)."""
    retrieve = _KINDS.get(ALIASES.get(kind, kind))
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

    kinds: "bm25" (params k1, b, method, stem, stopwords, top_k=100); "dense" (top_k=100; cosine of MiniLM
    embeddings over every passage); "bm25_embedding_rerank" (the BM25 params plus candidates=50,
    top_k=candidates and reranker: the MiniLM cosine unless a callable or endpoint is given). A query that
    matches nothing is kept with an empty ranking, so it scores 0 rather than disappearing.
    """
    from ragmetrics.retrieval.run import Run

    rankings = search(kind, params, passages, queries, embedder=embedder)
    return Run.from_dict(
        {qid: dict(ranking) for qid, ranking in rankings.items()},
        name=name or kind,
        source=f"retriever {kind}",
    )
