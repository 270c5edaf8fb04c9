"""What a reference retriever is, apart from what it is called: its kind, the settings that decide its
ranking, and the models it ranks with.

Pooled qrels favour the systems that were pooled and the systems that rank with the pool grader's model
(docs/testset.md). A test set records this identity for each pooled retriever, and a night computes it for
each of its retriever runs, so the two are matched by what they are: a run named `my_dense` is the pool's
`pool:dense` when both are MiniLM dense retrieval, and a run named `bm25` with k1 0.9 is not the pool's BM25.
`top_k` is left out: it cuts a ranking, it does not change the order of what it keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ranking_identity", "same_ranking"]

_BM25_DEFAULTS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "method": "lucene", "stem": False, "stopwords": "en"}
"""bm25_search's defaults (ragmetrics.retrievers.bm25), spelled out so explicit defaults match omitted ones."""


def _embedder_name() -> str:
    from ragmetrics.embeddings.minilm import MODEL_NAME

    return MODEL_NAME


def _number(value: Any) -> Any:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _reranker(spec: Any) -> tuple[str, list[str]]:
    """A reranker parameter as (what it is, the models it ranks with)."""
    if isinstance(spec, Mapping):
        model = spec.get("model")
        url = str(spec.get("url") or "")
        what = f"endpoint {url} {model or ''}".strip()
        return what, [str(model)] if model else [what]
    if isinstance(spec, str):
        return f"callable {spec}", [f"callable {spec}"]
    name = f"{getattr(spec, '__module__', '?')}.{getattr(spec, '__qualname__', type(spec).__name__)}"
    return f"callable {name}", [f"callable {name}"]


def ranking_identity(kind: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """{"retriever": kind (old names resolved), "settings": what decides the ranking, defaults filled in,
    "models": the embedding or reranking models it ranks with}; an unknown kind keeps its params as given."""
    from ragmetrics.retrievers import ALIASES

    name = ALIASES.get(kind, kind)
    given = dict(params or {})
    given.pop("top_k", None)
    if name == "bm25":
        settings = {**_BM25_DEFAULTS, **given}
        return {"retriever": name, "settings": {k: _number(v) for k, v in settings.items()}, "models": []}
    if name == "dense":  # exact search (the default) ranks alike whatever else; an approximate one does not
        dense = {k: _number(v) for k, v in given.items() if k in ("search", "ef_search")}
        if dense.get("search", "exact") == "exact":
            dense = {}
        return {"retriever": name, "settings": dense, "models": [_embedder_name()]}
    if name == "bm25_embedding_rerank":
        reranker = given.pop("reranker", None)
        settings = {**_BM25_DEFAULTS, "candidates": 50, **given}
        what, models = _reranker(reranker) if reranker is not None else ("embedding", [_embedder_name()])
        settings["reranker"] = what
        return {"retriever": name, "settings": {k: _number(v) for k, v in settings.items()}, "models": models}
    return {"retriever": name, "settings": {k: _number(v) for k, v in given.items()}, "models": []}


def same_ranking(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two identities (`ranking_identity`) rank alike: same kind, same settings, same models."""
    return (
        a.get("retriever") == b.get("retriever")
        and dict(a.get("settings") or {}) == dict(b.get("settings") or {})
        and sorted(a.get("models") or []) == sorted(b.get("models") or [])
    )
