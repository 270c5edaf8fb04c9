"""Reference retrievers for the built-in collection and the reranker comparison (the `examples` extra).

They are deliberately small and deterministic: BM25 with `bm25s`; dense retrieval by the local MiniLM
embedder (a bi-encoder); and BM25 candidates reranked, by default by the same embedder's cosine: an
*embedding* reranker, not a cross-encoder, hence the kind's name `bm25_embedding_rerank` (`bm25_rerank`, its
name before 0.3, is still accepted). Any other reranker plugs in through the `reranker` parameter: a Python
callable or an HTTP rerank endpoint (`ragmetrics.retrievers.rerank`). They turn (passages, queries) into a
`Run`; `ragmetrics run` builds one per `runs: [{source: retriever, retriever: KIND, params: {...}}]` entry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import ConfigError
from ragmetrics.retrievers._inputs import Corpus, corpus_from, queries_from

if TYPE_CHECKING:
    from ragmetrics.index.corpus import BuildCounts
    from ragmetrics.index.store import IndexStore
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrievers.rerank import SyncEmbedder

Ranking = list[tuple[str, float]]

__all__ = [
    "ALIASES",
    "KINDS",
    "RetrieverTiming",
    "build_run",
    "build_timed_run",
    "check_available",
    "search",
    "timed_search",
]


Searcher = Callable[[str], "Ranking"]
"""One question's search over a built index (it may have a `finish()`, called after the last question)."""


def _bm25(
    corpus: Corpus, params: Mapping[str, Any], _: Any, store: IndexStore | None, counts: BuildCounts
) -> Searcher:
    from ragmetrics.retrievers.bm25 import bm25_prepare

    return bm25_prepare(corpus, params, store=store, counts=counts)


def _bm25_rerank(
    corpus: Corpus, params: Mapping[str, Any], embedder: Any, store: IndexStore | None, counts: BuildCounts
) -> Searcher:
    from ragmetrics.retrievers.rerank import bm25_rerank_prepare

    return bm25_rerank_prepare(corpus, params, embedder, store=store, counts=counts)


def _dense(
    corpus: Corpus, params: Mapping[str, Any], embedder: Any, store: IndexStore | None, counts: BuildCounts
) -> Searcher:
    from ragmetrics.retrievers.dense import dense_prepare

    return dense_prepare(corpus, params, embedder, store=store, counts=counts)


_KINDS: dict[str, Callable[[Corpus, Mapping[str, Any], Any, IndexStore | None, BuildCounts], Searcher]] = {
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


@dataclass(frozen=True)
class RetrieverTiming:
    """Where a retriever's time went: building its index once, and each question's retrieval (and rerank).

    Kept apart because they answer different questions: index building is a cost of the night (the dense
    retriever embeds the whole corpus), a question's search is what a user of the system waits for, so it is
    the part that belongs in that question's latency.
    """

    index_s: float
    search_s: dict[str, float] = field(default_factory=dict)
    """Query id -> seconds its search took (first stage, rerank), measured around that question alone."""
    embedded: int | None = None
    """Chunks sent to the embedding model for this run (its index, and a reranker's candidates), when the index
    is persisted (`index_dir`); 0 on a night whose chunks were all embedded before. None: not counted."""
    reused: int | None = None
    """Chunk vectors (or a whole index) read from the persisted index instead of computed, when persisted."""
    built: bool | None = None
    """True when an index file was written now, False when a stored one was read; None: not persisted."""


def timed_search(
    kind: str,
    params: Mapping[str, Any] | None,
    passages: Sequence[Mapping[str, object]],
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    *,
    embedder: SyncEmbedder | None = None,
    index_dir: Path | str | None = None,
) -> tuple[dict[str, Ranking], RetrieverTiming]:
    """`search`, with the seconds it took: the index built once, then every question searched on its own.

    With `index_dir`, indexes and chunk vectors are read from and kept in that folder (`ragmetrics.index`):
    a second call on the same chunks embeds and tokenises nothing, and `RetrieverTiming.embedded` says so."""
    prepare = _KINDS.get(ALIASES.get(kind, kind))
    if prepare is None:
        raise ConfigError(f"unknown retriever kind {kind!r}; kinds: {', '.join(KINDS)}")
    if params is not None and not isinstance(params, Mapping):
        raise ConfigError(f"{kind}: params must be a mapping, got {type(params).__name__}")
    corpus, questions = corpus_from(passages), queries_from(queries)
    from ragmetrics.index.corpus import BuildCounts

    store = None
    if index_dir is not None:
        from ragmetrics.index.store import IndexStore

        store = IndexStore(index_dir)
    counts = BuildCounts()
    started = time.perf_counter()
    searcher = prepare(corpus, dict(params or {}), embedder, store, counts)
    index_s = time.perf_counter() - started
    search_s: dict[str, float] = {}
    rankings: dict[str, Ranking] = {}
    for qid, question in questions.items():
        started = time.perf_counter()
        rankings[qid] = searcher(question)
        search_s[qid] = time.perf_counter() - started
    finish = getattr(searcher, "finish", None)
    if finish is not None:
        finish()
    persisted = store is not None
    timing = RetrieverTiming(index_s=index_s, search_s=search_s, embedded=counts.embedded if persisted else None,
                             reused=counts.reused if persisted else None,
                             built=counts.built if persisted else None)  # fmt: skip
    return rankings, timing


def search(
    kind: str,
    params: Mapping[str, Any] | None,
    passages: Sequence[Mapping[str, object]],
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    *,
    embedder: SyncEmbedder | None = None,
    index_dir: Path | str | None = None,
) -> dict[str, Ranking]:
    """Query id -> [(passage id, score)] in rank order (score descending, ties by passage id descending)."""
    return timed_search(kind, params, passages, queries, embedder=embedder, index_dir=index_dir)[0]


def build_run(
    kind: str,
    params: Mapping[str, Any] | None,
    passages: Sequence[Mapping[str, object]],
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    name: str | None = None,
    *,
    embedder: SyncEmbedder | None = None,
    index_dir: Path | str | None = None,
) -> Run:
    """Retrieve for every query and return the rankings as a `Run` named `name` (default: the kind).

    kinds: "bm25" (params k1, b, method, stem, stopwords, top_k=100); "dense" (top_k=100; cosine of MiniLM
    embeddings over every passage); "bm25_embedding_rerank" (the BM25 params plus candidates=50,
    top_k=candidates and reranker: the MiniLM cosine unless a callable or endpoint is given). A query that
    matches nothing is kept with an empty ranking, so it scores 0 rather than disappearing.
    """
    return build_timed_run(kind, params, passages, queries, name, embedder=embedder, index_dir=index_dir)[0]


def build_timed_run(
    kind: str,
    params: Mapping[str, Any] | None,
    passages: Sequence[Mapping[str, object]],
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    name: str | None = None,
    *,
    embedder: SyncEmbedder | None = None,
    index_dir: Path | str | None = None,
) -> tuple[Run, RetrieverTiming]:
    """`build_run`, with where its time went (`RetrieverTiming`): what a night reports and adds to latency."""
    from ragmetrics.retrieval.run import Run

    rankings, timing = timed_search(kind, params, passages, queries, embedder=embedder, index_dir=index_dir)
    run = Run.from_dict(
        {qid: dict(ranking) for qid, ranking in rankings.items()},
        name=name or kind,
        source=f"retriever {kind}",
    )
    return run, timing
