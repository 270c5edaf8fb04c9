"""A retriever run in a dry run: its time estimated from a sample of the corpus, never the corpus itself.

Building a dense index embeds every passage (a quarter of an hour on 27,000 paragraphs), which is what a dry run
is there to foretell, not to spend. So the retriever is built on an evenly spread sample of the passages and
searched for a few questions, each part timed (`retrievers.timed_search`):

- index building is taken as proportional to the corpus's characters (tokenising and embedding are linear in
  text), so the sample's seconds are scaled by all characters over the sample's;
- a question's search is its mean over the sampled questions; for a reranker, whose per-question work is
  embedding (or scoring) its candidates, scaled by the candidates it will have on the whole corpus over those it
  found in the sample (a small sample matches fewer than `candidates` passages).

The judge still needs each question's contexts to count its requests and tokens: the stand-in ranking gives the
sampled questions what the sample index found and the others sample passages in turn (real passages, so real
lengths). The estimate says so; `benchmarks/bench_dry_run.py` measures how far it is from what nights take.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrievers import RetrieverTiming

__all__ = ["SAMPLE_PASSAGES", "SAMPLE_QUESTIONS", "estimate_retriever"]

SAMPLE_PASSAGES = 400
"""Passages the sample index holds: enough for a stable rate per character, a second or two of embedding."""
SAMPLE_QUESTIONS = 12
"""Questions searched on it: a stable mean search time at a fraction of a second for BM25 and dense."""
_EMBEDDING_KINDS = ("dense", "bm25_embedding_rerank", "bm25_rerank")


def _spread(items: Sequence[Any], count: int) -> list[Any]:
    """`count` items evenly spread over `items` (all of them when there are fewer): deterministic, and not the
    first few, which in a corpus are often one document's neighbouring chunks."""
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def _warm_embedder(kind: str, params: Mapping[str, Any]) -> Any:
    """The default embedder, loaded and run once, so the sample's rate is the embedding's and not the model's
    loading (which a night pays once, not per passage); None where the kind embeds nothing by default."""
    if kind not in _EMBEDDING_KINDS or params.get("reranker") is not None:
        return None
    embedder = importlib.import_module("ragmetrics.retrievers.rerank").default_embedder()
    embedder.encode(["a warm-up sentence"])
    return embedder


def _candidate_scale(kind: str, params: Mapping[str, Any], rankings: Mapping[str, list[Any]]) -> float:
    """How much more a reranker's question costs on the whole corpus than on the sample: candidates it will
    rerank there over those it reranked here (a ranking shorter than top_k holds every candidate found)."""
    if kind not in ("bm25_embedding_rerank", "bm25_rerank") or not rankings:
        return 1.0
    candidates = params.get("candidates", 50)
    keep = params.get("top_k", candidates)
    found = [candidates if len(r) >= keep else len(r) for r in rankings.values()]
    return float(candidates) / max(1.0, fmean(found))


def estimate_retriever(
    kind: str,
    params: Mapping[str, Any],
    passages: Sequence[Mapping[str, str]],
    queries: Sequence[tuple[str, str]],
    name: str,
    depth: int,
    *,
    index_dir: Path | None = None,
) -> tuple[Run, RetrieverTiming, str]:
    """(stand-in run, estimated timing, how it was estimated) for one retriever run of a dry run."""
    from ragmetrics.retrieval.run import Run

    retrievers = importlib.import_module("ragmetrics.retrievers")
    sample = _spread(passages, SAMPLE_PASSAGES)
    asked = _spread(queries, SAMPLE_QUESTIONS)
    rankings, measured = retrievers.timed_search(kind, params, sample, asked, embedder=_warm_embedder(kind, params))
    all_chars = sum(len(p["text"]) for p in passages)
    sample_chars = max(1, sum(len(p["text"]) for p in sample))
    scale = _candidate_scale(kind, params, rankings)
    per_question = fmean(measured.search_s.values()) * scale
    to_embed: int | None = None
    index_chars = all_chars
    if index_dir is not None and kind == "dense":  # only what the persisted index lacks will be embedded
        from ragmetrics.index.store import IndexStore

        embedder = _warm_embedder(kind, params) or importlib.import_module("ragmetrics.retrievers.rerank").default_embedder()
        to_embed, index_chars = IndexStore(index_dir).missing([(p["id"], p["text"]) for p in passages], embedder)
    timing = retrievers.RetrieverTiming(
        index_s=measured.index_s * index_chars / sample_chars, search_s={qid: per_question for qid, _ in queries},
        embedded=to_embed,
    )
    ids = [p["id"] for p in sample]
    stand_in: dict[str, dict[str, float]] = {}
    for i, (qid, _) in enumerate(queries):
        found = rankings.get(qid)
        chosen = [pid for pid, _ in found[:depth]] if found else [ids[(i * depth + j) % len(ids)] for j in range(min(depth, len(ids)))]
        stand_in[qid] = {pid: float(depth - rank) for rank, pid in enumerate(chosen)}
    how = (
        f"retriever run {name!r}: built on {len(sample)} of {len(passages)} passages and searched for "
        f"{len(asked)} of {len(queries)} questions; index time scaled by characters ({all_chars:,} over "
        f"{sample_chars:,})" + (f", search time by candidates (x{scale:.1f})" if scale != 1.0 else "")
        + (f"; {to_embed:,} of {len(passages):,} passages lack a vector in the persisted index ({index_chars:,} "
           "characters to embed)" if to_embed is not None else "")
        + "; its contexts for the judge are sample passages"
    )
    return Run.from_dict(stand_in, name=name, source=f"retriever {kind} (dry run stand-in)"), timing, how
