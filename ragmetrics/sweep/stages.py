"""The grid's rankings, each shared stage computed once.

- one index per (chunking, retriever), searched once per question to the grid's deepest need (the largest k,
  a reranker's candidates, the fusion depth): a smaller k is that ranking truncated, never a second search;
- one fused ranking per (chunking, fusion weight), from the retrievers' top `fusion.depth` already computed;
- one reranked ranking per (chunking, arm, reranker), of the arm's top `candidates`: every k over it is a
  truncation.

Every consumer takes its own explicit slice of a deeper ranking (k, candidates, fusion depth), so a
configuration's ranking never depends on the other values of the grid: adding a reranker with more candidates
deepens the search, and changes no hybrid.

What each stage cost is kept per question (seconds), so a configuration's latency is the sum of the stages it
reads: its retrievers' searches, the fusion, its reranker. Index building is counted and timed apart: it is paid
once per chunking, not by a user's question.

With an index folder (the config's `index_dir`, the one nights and `ragmetrics testset` use), every index and
chunk vector comes from the persisted store (`ragmetrics.index`), keyed by content, the chunking's texts and the
model: a sweep after a night over the same chunks, or a second sweep, embeds nothing, and a changed document
re-embeds only its own chunks. What each (chunking, retriever) embedded and reused is counted, and so is what
the embedding reranker read or embedded. Without one (`index_dir: null`) everything is built in memory.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.sweep.config import SweepConfig, SweepReranker, SweepRetriever
from ragmetrics.sweep.grid import Configuration

__all__ = ["FirstStage", "IndexUse", "StageJob", "Stages", "build_stages", "first_stage", "search_depth"]

Ranking = list[tuple[str, float]]
Mapper = Callable[[Callable[["StageJob"], "FirstStage"], Sequence["StageJob"]], list["FirstStage"]]
"""Runs `first_stage` over jobs: in this process (`map`), or on the Ray engine (`engines.ray.sweep`)."""


@dataclass(frozen=True)
class StageJob:
    """One index to build and search: everything a worker needs, so the job can run in another process."""

    chunking: str
    retriever: SweepRetriever
    passages: tuple[dict[str, str], ...]
    queries: tuple[tuple[str, str], ...]
    depth: int
    index_dir: Path | None = None
    """The persisted store the job opens (in whichever process runs it); None: an index in memory."""


@dataclass(frozen=True)
class IndexUse:
    """What finding or building one index (or one reranker's passage vectors) cost, from the persisted store."""

    embedded: int
    """Chunk texts sent to the embedding model now (0 when every vector was stored)."""
    reused: int
    """Chunk vectors read from the store instead."""
    built: bool
    """True when an index file was written now; False when a stored one was read (or none is needed)."""


@dataclass(frozen=True)
class FirstStage:
    chunking: str
    retriever: str
    rankings: dict[str, Ranking]
    search_s: dict[str, float]
    index_s: float
    use: IndexUse | None = None
    """None: built in memory (no index folder)."""


@dataclass
class Stages:
    """The rankings of every (chunking, arm, reranker), with per-question seconds, and what was built."""

    rankings: dict[tuple[str, str, str], dict[str, Ranking]] = field(default_factory=dict)
    seconds: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    index_builds: Counter[tuple[str, str]] = field(default_factory=Counter)
    index_seconds: dict[tuple[str, str], float] = field(default_factory=dict)
    fusions: Counter[tuple[str, str]] = field(default_factory=Counter)
    reranks: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    index_use: dict[tuple[str, str], IndexUse] = field(default_factory=dict)
    """(chunking, retriever) -> what its index cost from the store; absent without an index folder."""
    rerank_use: dict[tuple[str, str, str], IndexUse] = field(default_factory=dict)
    """(chunking, arm, reranker) -> the embedding reranker's passage vectors read or embedded."""
    index_dir: Path | None = None

    def top(self, config: Configuration, qid: str) -> Ranking:
        return self.rankings[config.rerank_key].get(qid, [])[: config.k]

    def latency(self, config: Configuration, qid: str) -> float:
        return self.seconds[config.rerank_key].get(qid, 0.0)


def search_depth(config: SweepConfig) -> int:
    """How deep each first stage searches: the largest k, the most candidates a reranker reorders, the fusion depth."""
    needs = [max(config.k), *(r.candidates for r in config.rerankers if r.kind != "none")]
    if config.fusion is not None:
        needs.append(config.fusion.depth)
    return max(needs)


def check_depths(config: SweepConfig) -> None:
    """A reranker only reorders its candidates, so every k must fit within each reranker's candidates."""
    for i, reranker in enumerate(config.rerankers):
        if reranker.kind != "none" and max(config.k) > reranker.candidates:
            raise ConfigError(
                f"sweep.rerankers[{i}]: candidates ({reranker.candidates}) is below the largest k ({max(config.k)}); "
                "a reranker only reorders its candidates: raise candidates or lower k"
            )


class PassageVectors:
    """The local MiniLM embedder for a sweep's stages, keeping the vectors of passages and nothing else.

    A passage's vector does not depend on the question (the dense retriever and the embedding reranker are both
    bi-encoders), so a deployed system computes it once when indexing; the sweep does too, and the reranker reads
    the vectors the dense index made (in memory, or from the persisted store when there is one: then this keeps
    nothing, the store does). A question's vector is computed afresh by every stage that needs it, as two
    deployed stages would, so each stage's per-question latency holds its own embedding. The built-in collection's
    stored passage vectors answer first; the model is loaded and run once before any timing.
    """

    def __init__(self) -> None:
        from ragmetrics.collection import load_passage_embeddings
        from ragmetrics.embeddings.minilm import MiniLMEmbedder
        from ragmetrics.retrievers.rerank import PrecomputedEmbedder

        model, vectors = load_passage_embeddings()
        self._base = PrecomputedEmbedder(MiniLMEmbedder(cache_size=0), model, vectors)
        self._base.encode(["warm-up"])
        self.passages: set[str] = set()
        self._vectors: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return self._base.name

    @property
    def identity(self) -> str:
        """The model's identity, as a night's dense retriever gives it: the persisted store's key, so a sweep
        and a night over the same chunks share their vectors."""
        return self._base.identity

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        fresh = dict(zip(todo, self._base.encode(todo), strict=True)) if todo else {}
        for text, vector in fresh.items():
            if text in self.passages:
                self._vectors[text] = vector
        rows = [self._vectors[t] if t in self._vectors else fresh[t] for t in texts]
        return np.stack(rows).astype(np.float32) if rows else np.empty((0, 0), dtype=np.float32)


_EMBEDDER: list[PassageVectors] = []


def _embedder(passages: Sequence[Mapping[str, str]] = ()) -> PassageVectors:
    """One embedder per process, shared by every dense index and the embedding reranker (class docstring)."""
    if not _EMBEDDER:
        _EMBEDDER.append(PassageVectors())
    _EMBEDDER[0].passages.update(p["text"] for p in passages)
    return _EMBEDDER[0]


def first_stage(job: StageJob) -> FirstStage:
    """Build (or open) one retriever's index over one chunking and search every question once, to `job.depth`."""
    from ragmetrics.retrievers import timed_search

    params = {**job.retriever.params, "top_k": job.depth}
    # with a store, the store keeps the passages' vectors, not this process
    kept = job.passages if job.index_dir is None else ()
    embedder = _embedder(kept) if job.retriever.retriever == "dense" else None
    rankings, timing = timed_search(
        job.retriever.retriever, params, job.passages, job.queries, embedder=embedder, index_dir=job.index_dir
    )
    use = None
    if job.index_dir is not None:
        use = IndexUse(timing.embedded or 0, timing.reused or 0, bool(timing.built))
    return FirstStage(job.chunking, job.retriever.name, rankings, dict(timing.search_s), timing.index_s, use)


def _local_map(fn: Callable[[StageJob], FirstStage], jobs: Sequence[StageJob]) -> list[FirstStage]:
    return [fn(job) for job in jobs]


def _fuse(
    config: SweepConfig, first: Mapping[str, dict[str, Ranking]], arm: Configuration
) -> tuple[dict[str, Ranking], float]:
    from ragmetrics.retrieval.fusion import fuse
    from ragmetrics.retrieval.run import Run

    assert config.fusion is not None and arm.weight is not None
    depth = config.fusion.depth  # each retriever's top `depth`, whatever else the grid searched deeper for
    runs = [
        Run.from_dict({q: dict(r[:depth]) for q, r in first[name].items()}, name=name)
        for name in arm.retrievers
    ]
    started = time.perf_counter()
    fused = fuse(runs, config.fusion.method, norm=config.fusion.norm, weights=[arm.weight, 1.0 - arm.weight])
    elapsed = time.perf_counter() - started
    rankings: dict[str, Ranking] = {}
    for qid, scores in fused.to_dict().items():
        by_id = sorted(scores.items(), key=lambda item: item[0], reverse=True)  # ties: passage id descending
        rankings[qid] = sorted(by_id, key=lambda item: -item[1])[:depth]
    return rankings, elapsed


class _StoredPassages:
    """The embedding reranker's model with the passages' vectors read from the persisted store (the ones the
    dense index stored, or any earlier night's), embedded and kept there when missing; other texts (the
    question) go to the model. `counts` says what was read and what embedded."""

    def __init__(self, model: PassageVectors, index_dir: Path, texts: Sequence[str]) -> None:
        from ragmetrics.index.store import IndexStore

        self._model = model
        self._stored = IndexStore(index_dir).vectors(model)
        self._passages = set(texts)

    @property
    def counts(self) -> Any:
        return self._stored.counts

    def encode(self, texts: Sequence[str]) -> Any:
        if texts and all(t in self._passages for t in texts):
            return self._stored.encode(texts)
        return self._model.encode(texts)

    def finish(self) -> None:
        self._stored.finish()


def _rerank(
    reranker: SweepReranker,
    corpus: Any,
    queries: Mapping[str, str],
    rankings: Mapping[str, Ranking],
    index_dir: Path | None = None,
) -> tuple[dict[str, Ranking], dict[str, float], IndexUse | None]:
    from ragmetrics.retrievers.rerank import _lookup, load_scorer, rerank, rerank_with

    lookup = _lookup(corpus)
    embedder: PassageVectors | _StoredPassages | None = None
    if reranker.kind == "embedding":
        if index_dir is None:
            embedder = _embedder([{"text": t} for t in corpus.texts])
        else:
            embedder = _StoredPassages(_embedder(), index_dir, corpus.texts)
    out: dict[str, Ranking] = {}
    seconds: dict[str, float] = {}
    scorer = load_scorer(reranker.scorer) if reranker.kind == "callable" else None
    for qid, question in queries.items():
        candidates = {qid: rankings.get(qid, [])[: reranker.candidates]}
        started = time.perf_counter()
        if scorer is not None:
            out[qid] = rerank_with(corpus, {qid: question}, candidates, scorer, reranker.candidates, lookup)[
                qid
            ]
        else:
            assert embedder is not None
            out[qid] = rerank(corpus, {qid: question}, candidates, embedder, reranker.candidates, lookup)[qid]
        seconds[qid] = time.perf_counter() - started
    if isinstance(embedder, _StoredPassages):
        embedder.finish()
        return out, seconds, IndexUse(embedder.counts.embedded, embedder.counts.reused, False)
    return out, seconds, None


def build_stages(
    config: SweepConfig,
    grid: Sequence[Configuration],
    corpora: Mapping[str, Sequence[dict[str, str]]],
    queries: Mapping[str, str],
    *,
    mapper: Mapper | None = None,
    index_dir: Path | None = None,
) -> Stages:
    """Every ranking the grid reads, each stage once (module docstring). `corpora`: chunking label -> passages;
    `index_dir`: the persisted store every index and passage vector comes from (None: all in memory)."""
    from ragmetrics.retrievers._inputs import corpus_from

    check_depths(config)
    depth = search_depth(config)
    stages = Stages(index_dir=index_dir)
    chunkings = list(dict.fromkeys(c.chunking for c in grid))
    needed = {(c.chunking, name) for c in grid for name in c.retrievers}
    jobs = [
        StageJob(
            chunking,
            retriever,
            tuple(dict(p) for p in corpora[chunking]),
            tuple(queries.items()),
            depth,
            index_dir,
        )
        for chunking in chunkings
        for retriever in config.retrievers
        if (chunking, retriever.name) in needed
    ]
    first: dict[str, dict[str, dict[str, Ranking]]] = {c: {} for c in chunkings}
    first_s: dict[str, dict[str, dict[str, float]]] = {c: {} for c in chunkings}
    for result in (mapper or _local_map)(first_stage, jobs):
        key = (result.chunking, result.retriever)
        stages.index_builds[key] += 1
        stages.index_seconds[key] = result.index_s
        if result.use is not None:
            stages.index_use[key] = result.use
        first[result.chunking][result.retriever] = result.rankings
        first_s[result.chunking][result.retriever] = result.search_s
    rerankers = {r.name: r for r in config.rerankers}
    arms = {c.arm_key: c for c in grid}
    for (chunking, arm_name), arm in arms.items():
        if arm.weight is None:
            rankings, seconds = first[chunking][arm_name], dict(first_s[chunking][arm_name])
        else:
            rankings, fuse_s = _fuse(config, first[chunking], arm)
            stages.fusions[(chunking, arm_name)] += 1
            seconds = {
                q: sum(first_s[chunking][name].get(q, 0.0) for name in arm.retrievers)
                + fuse_s / max(len(queries), 1)
                for q in queries
            }
        corpus = corpus_from(list(corpora[chunking]))
        for reranker_name in dict.fromkeys(c.reranker for c in grid if c.arm_key == (chunking, arm_name)):
            stage_key = (chunking, arm_name, reranker_name)
            reranker = rerankers[reranker_name]
            if reranker.kind == "none":
                stages.rankings[stage_key] = rankings
                stages.seconds[stage_key] = seconds
                continue
            reranked, rerank_s, use = _rerank(reranker, corpus, queries, rankings, index_dir)
            stages.reranks[stage_key] += 1
            if use is not None:
                stages.rerank_use[stage_key] = use
            stages.rankings[stage_key] = reranked
            stages.seconds[stage_key] = {q: seconds.get(q, 0.0) + rerank_s.get(q, 0.0) for q in queries}
    return stages
