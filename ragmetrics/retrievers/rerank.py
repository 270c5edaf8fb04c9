"""BM25 candidates reranked by the cosine between MiniLM embeddings of the question and each passage.

The reranker is deliberately the project's own offline embedder (all-MiniLM-L6-v2, int8 ONNX), so the
"does a reranker help?" comparison runs on any machine without a download. The final score is the cosine;
BM25 only chooses the candidates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import ConfigError
from ragmetrics.retrievers._inputs import Corpus
from ragmetrics.retrievers._ranking import id_order, top_k
from ragmetrics.retrievers.bm25 import BM25_PARAMS, Ranking, bm25_search

DEFAULT_CANDIDATES = 50


class SyncEmbedder(Protocol):
    """What the reranker needs: unit-length float32 vectors, one row per text, in order."""

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


class NamedEmbedder(SyncEmbedder, Protocol):
    @property
    def name(self) -> str: ...


class PrecomputedEmbedder:
    """An embedder that answers from vectors computed earlier by the same model, keyed by sha256 of the text.

    Texts without a stored vector go to the wrapped embedder. Stored vectors are float16, so they agree with
    a fresh computation to float16 precision (cosine >= 0.999, tested), and are used only when `model`
    equals the wrapped embedder's name: a different model never answers from them.
    """

    def __init__(self, base: NamedEmbedder, model: str, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        self._base = base
        self._vectors = dict(vectors) if model == base.name else {}
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self._base.name

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        missing = [i for i, key in enumerate(keys) if key not in self._vectors]
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        computed = self._base.encode([texts[i] for i in missing]) if missing else None
        rows: list[NDArray[np.float32]] = []
        fresh = iter(range(len(missing)))
        for key in keys:
            stored = self._vectors.get(key)
            if stored is not None:
                rows.append(stored)
            else:
                assert computed is not None
                rows.append(computed[next(fresh)])
        if not rows:
            return np.empty((0, 0), dtype=np.float32)
        out = np.stack(rows).astype(np.float32)
        # float16 storage loses ~1e-3 of length; renormalise so a cosine stays a cosine.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def default_embedder() -> SyncEmbedder:
    """The local MiniLM embedder, answering from the built-in collection's stored passage vectors."""
    from ragmetrics.collection import load_passage_embeddings
    from ragmetrics.embeddings.minilm import MiniLMEmbedder

    model, vectors = load_passage_embeddings()
    return PrecomputedEmbedder(MiniLMEmbedder(), model, vectors)


def rerank(
    corpus: Corpus,
    queries: Mapping[str, str],
    candidates: Mapping[str, Ranking],
    embedder: SyncEmbedder,
    top_k_docs: int,
) -> dict[str, Ranking]:
    """Order each query's candidates by cosine(question, passage); ties by passage id descending."""
    position = {pid: i for i, pid in enumerate(corpus.ids)}
    pool = sorted({position[pid] for ranking in candidates.values() for pid, _ in ranking})
    qids = [q for q in queries if candidates.get(q)]
    if not pool or not qids:
        return {q: [] for q in queries}
    passage_vecs = embedder.encode([corpus.texts[i] for i in pool])
    query_vecs = embedder.encode([queries[q] for q in qids])
    row_of = {doc: row for row, doc in enumerate(pool)}
    id_ranks = id_order(corpus.ids)
    out: dict[str, Ranking] = {q: [] for q in queries}
    for qvec, qid in zip(query_vecs, qids, strict=True):
        docs = np.array([position[pid] for pid, _ in candidates[qid]], dtype=np.int64)
        rows = np.array([row_of[int(d)] for d in docs], dtype=np.int64)
        cosines = (passage_vecs[rows] @ qvec).astype(np.float64)
        best = top_k(cosines, id_ranks[docs], top_k_docs, positive_only=False)
        out[qid] = [(corpus.ids[int(docs[i])], float(cosines[i])) for i in best]
    return out


def bm25_rerank_search(
    corpus: Corpus,
    queries: Mapping[str, str],
    params: Mapping[str, Any],
    embedder: SyncEmbedder | None = None,
) -> dict[str, Ranking]:
    """BM25 top-`candidates` (default 50) per query, reranked; `top_k` (default: all candidates) are kept."""
    known = {*BM25_PARAMS, "candidates"}
    unknown = sorted(set(params) - known)
    if unknown:  # checked here, so the message names this retriever and lists `candidates` too
        raise ConfigError(f"bm25_rerank: unknown parameter(s) {unknown}; known: {sorted(known)}")
    candidates_n = params.get("candidates", DEFAULT_CANDIDATES)
    keep = params.get("top_k", candidates_n)
    for key, value in (("candidates", candidates_n), ("top_k", keep)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"bm25_rerank: {key} must be an integer >= 1, got {value!r}")
    if keep > candidates_n:
        raise ConfigError(
            f"bm25_rerank: top_k ({keep}) exceeds candidates ({candidates_n}); a reranker only reorders its "
            "candidates, so raise candidates or lower top_k"
        )
    first_stage = {k: v for k, v in params.items() if k not in ("candidates", "top_k")}
    first_stage["top_k"] = candidates_n
    candidates = bm25_search(corpus, queries, first_stage)
    return rerank(corpus, queries, candidates, embedder or default_embedder(), keep)
