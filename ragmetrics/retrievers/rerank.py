"""BM25 candidates reranked: by default by the cosine between MiniLM embeddings of the question and each
passage (an embedding reranker, i.e. a bi-encoder, not a cross-encoder), or by any reranker you plug in.

The default is deliberately the project's own offline embedder (all-MiniLM-L6-v2, int8 ONNX), so the
"does a reranker help?" comparison runs on any machine without a download. The final score is the
reranker's; BM25 only chooses the candidates.

A team's own reranker plugs in through the `reranker` parameter:

- a Python callable `(question, passages) -> scores` (one float per passage, higher is better), given as
  an object from Python or as "package.module:function" in a config: a cross-encoder, an LLM, anything;
- an HTTP rerank endpoint, `{url: ..., model: ..., api_key_env: ..., format: cohere|tei}`: the Cohere /
  Jina / vLLM shape (POST {model, query, documents} -> {results: [{index, relevance_score}]}) or
  text-embeddings-inference's (POST {query, texts} -> [{index, score}]).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import ConfigError
from ragmetrics.retrievers._inputs import Corpus
from ragmetrics.retrievers._ranking import id_order, top_k
from ragmetrics.retrievers.bm25 import BM25_PARAMS, Ranking, bm25_prepare

if TYPE_CHECKING:
    from ragmetrics.index.corpus import BuildCounts
    from ragmetrics.index.store import IndexStore

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

    @property
    def identity(self) -> str:
        """What decides the vectors (the wrapped model's identity), for persisted indexes' keys."""
        return str(getattr(self._base, "identity", None) or self._base.name)

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


Scorer = Callable[[str, list[str]], Sequence[float]]
Lookup = tuple[dict[str, int], NDArray[np.int64]]
"""Each passage id's position in the corpus, and the tie-break rank of each position."""


def _lookup(corpus: Corpus) -> Lookup:
    """Built once per index, not per question: sorting every id is not part of a question's reranking."""
    return {pid: i for i, pid in enumerate(corpus.ids)}, id_order(corpus.ids)


def rerank(
    corpus: Corpus,
    queries: Mapping[str, str],
    candidates: Mapping[str, Ranking],
    embedder: SyncEmbedder,
    top_k_docs: int,
    lookup: Lookup | None = None,
) -> dict[str, Ranking]:
    """Order each query's candidates by cosine(question, passage); ties by passage id descending."""
    position, id_ranks = lookup or _lookup(corpus)
    pool = sorted({position[pid] for ranking in candidates.values() for pid, _ in ranking})
    qids = [q for q in queries if candidates.get(q)]
    if not pool or not qids:
        return {q: [] for q in queries}
    passage_vecs = embedder.encode([corpus.texts[i] for i in pool])
    query_vecs = embedder.encode([queries[q] for q in qids])
    row_of = {doc: row for row, doc in enumerate(pool)}
    out: dict[str, Ranking] = {q: [] for q in queries}
    for qvec, qid in zip(query_vecs, qids, strict=True):
        docs = np.array([position[pid] for pid, _ in candidates[qid]], dtype=np.int64)
        rows = np.array([row_of[int(d)] for d in docs], dtype=np.int64)
        cosines = (passage_vecs[rows] @ qvec).astype(np.float64)
        best = top_k(cosines, id_ranks[docs], top_k_docs, positive_only=False)
        out[qid] = [(corpus.ids[int(docs[i])], float(cosines[i])) for i in best]
    return out


def rerank_with(
    corpus: Corpus,
    queries: Mapping[str, str],
    candidates: Mapping[str, Ranking],
    scorer: Scorer,
    top_k_docs: int,
    lookup: Lookup | None = None,
) -> dict[str, Ranking]:
    """Order each query's candidates by `scorer(question, passages)`; ties by passage id descending."""
    position, id_ranks = lookup or _lookup(corpus)
    out: dict[str, Ranking] = {q: [] for q in queries}
    for qid, question in queries.items():
        ranking = candidates.get(qid) or []
        if not ranking:
            continue
        docs = np.array([position[pid] for pid, _ in ranking], dtype=np.int64)
        scores = list(scorer(question, [corpus.texts[int(d)] for d in docs]))
        if len(scores) != len(docs) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in scores
        ):
            raise ConfigError(
                f"reranker returned {len(scores)} scores for {len(docs)} passages of query {qid!r}, or a "
                "score that is not a finite number: it must return one finite float per passage"
            )
        values = np.asarray(scores, dtype=np.float64)
        best = top_k(values, id_ranks[docs], top_k_docs, positive_only=False)
        out[qid] = [(corpus.ids[int(docs[i])], float(values[i])) for i in best]
    return out


def load_scorer(spec: Any) -> Scorer:
    """A reranker from the `reranker` parameter (module doc): a callable, "module:function" or an endpoint."""
    if callable(spec):
        return spec  # type: ignore[no-any-return]
    if isinstance(spec, str):
        module_name, _, attribute = spec.partition(":")
        if not module_name or not attribute:
            raise ConfigError(f"reranker {spec!r}: expected 'package.module:function'")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"reranker {spec!r}: cannot import it ({exc})") from None
        if not callable(found):
            raise ConfigError(f"reranker {spec!r} is not callable")
        return found  # type: ignore[no-any-return]
    if isinstance(spec, Mapping):
        return HttpReranker(**dict(spec))
    raise ConfigError(
        f"reranker must be a callable, 'module:function' or {{url: ...}}, got {type(spec).__name__}"
    )


class HttpReranker:
    """A rerank endpoint (module doc); the API key is read from `api_key_env` at call time, never stored."""

    def __init__(
        self,
        url: str,
        model: str | None = None,
        api_key_env: str | None = None,
        format: str = "cohere",
        timeout_s: float = 60.0,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"reranker url must be an http(s) URL, got {url!r}")
        if format not in ("cohere", "tei"):
            raise ConfigError(f"reranker format must be 'cohere' or 'tei', got {format!r}")
        self.url, self.model, self.api_key_env, self.format, self.timeout_s = (
            url,
            model,
            api_key_env,
            format,
            timeout_s,
        )

    def __call__(self, question: str, passages: list[str]) -> list[float]:
        body: dict[str, Any] = {"query": question}
        if self.format == "tei":
            body["texts"] = passages
        else:
            body["documents"] = passages
            body["top_n"] = len(passages)
            if self.model:
                body["model"] = self.model
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, json.dumps(body).encode("utf-8"), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                reply = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:200]
            raise ConfigError(f"reranker {self.url}: HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise ConfigError(f"reranker {self.url}: {exc}") from None
        items = reply.get("results") if isinstance(reply, dict) else reply
        if not isinstance(items, list):
            raise ConfigError(f"reranker {self.url}: expected a list of results, got {str(reply)[:120]!r}")
        scores: list[float | None] = [None] * len(passages)
        for item in items:
            index = item.get("index") if isinstance(item, dict) else None
            value = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            if (
                not isinstance(index, int)
                or not 0 <= index < len(passages)
                or not isinstance(value, int | float)
            ):
                raise ConfigError(f"reranker {self.url}: bad result {str(item)[:120]!r}")
            scores[index] = float(value)
        if any(v is None for v in scores):
            raise ConfigError(
                f"reranker {self.url}: scored {sum(v is not None for v in scores)} of {len(passages)} passages"
            )
        return [float(v) for v in scores if v is not None]


class _StoredRerank:
    """The embedding reranker over persisted vectors: a candidate embedded by any earlier night (or by the dense
    retriever over the same chunks) is read, not embedded again; `finish` keeps what was embedded now."""

    def __init__(self, corpus: Corpus, candidates: Callable[[str], Ranking], model: SyncEmbedder,
                 vectors: SyncEmbedder, keep: int, lookup: Lookup) -> None:  # fmt: skip
        self._corpus, self._candidates, self._model, self._vectors = corpus, candidates, model, vectors
        self._keep, self._lookup = keep, lookup

    def __call__(self, question: str) -> Ranking:
        ranking = self._candidates(question)
        if not ranking:
            return []
        position, id_ranks = self._lookup
        docs = np.array([position[pid] for pid, _ in ranking], dtype=np.int64)
        passage_vecs = self._vectors.encode([self._corpus.texts[int(d)] for d in docs])
        qvec = self._model.encode([question])[0]
        cosines = (passage_vecs @ qvec).astype(np.float64)
        best = top_k(cosines, id_ranks[docs], self._keep, positive_only=False)
        return [(self._corpus.ids[int(docs[i])], float(cosines[i])) for i in best]

    def finish(self) -> None:
        getattr(self._vectors, "finish", lambda: None)()


def bm25_rerank_prepare(
    corpus: Corpus,
    params: Mapping[str, Any],
    embedder: SyncEmbedder | None = None,
    *,
    store: IndexStore | None = None,
    counts: BuildCounts | None = None,
) -> Callable[[str], Ranking]:
    """Build the first stage's BM25 index; return one question's search: its BM25 top-`candidates` (default
    50) reranked, `top_k` (default: all candidates) kept. The reranker's work (embedding the candidates, or
    the team's scorer) happens per question, as a deployed reranker spends it."""
    known = {*BM25_PARAMS, "candidates", "reranker"}
    unknown = sorted(set(params) - known)
    if unknown:  # checked here, so the message names this retriever and lists `candidates` too
        raise ConfigError(f"bm25_embedding_rerank: unknown parameter(s) {unknown}; known: {sorted(known)}")
    candidates_n = params.get("candidates", DEFAULT_CANDIDATES)
    keep = params.get("top_k", candidates_n)
    for key, value in (("candidates", candidates_n), ("top_k", keep)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"bm25_embedding_rerank: {key} must be an integer >= 1, got {value!r}")
    if keep > candidates_n:
        raise ConfigError(
            f"bm25_embedding_rerank: top_k ({keep}) exceeds candidates ({candidates_n}); a reranker only "
            "reorders its candidates, so raise candidates or lower top_k"
        )
    first_stage = {k: v for k, v in params.items() if k not in ("candidates", "top_k", "reranker")}
    first_stage["top_k"] = candidates_n
    candidates = bm25_prepare(corpus, first_stage, store=store, counts=counts)
    lookup = _lookup(corpus)
    if params.get("reranker") is not None:
        scorer = load_scorer(params["reranker"])
        return lambda q: rerank_with(corpus, {"q": q}, {"q": candidates(q)}, scorer, keep, lookup)["q"]
    model = embedder or default_embedder()
    if store is not None:
        stored = store.vectors(model)
        if counts is not None:
            stored.counts = counts  # the candidates embedded (or read) are this run's count
        return _StoredRerank(corpus, candidates, model, stored, keep, lookup)
    return lambda q: rerank(corpus, {"q": q}, {"q": candidates(q)}, model, keep, lookup)["q"]


def bm25_rerank_search(
    corpus: Corpus,
    queries: Mapping[str, str],
    params: Mapping[str, Any],
    embedder: SyncEmbedder | None = None,
) -> dict[str, Ranking]:
    """BM25 top-`candidates` (default 50) per query, reranked; `top_k` (default: all candidates) are kept."""
    search = bm25_rerank_prepare(corpus, params, embedder)
    return {qid: search(text) for qid, text in queries.items()}
