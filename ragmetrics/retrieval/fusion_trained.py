"""Fusion methods trained on qrels: each run's probability of relevance by rank (or its MAP) is learned on
training queries, then summed over runs for each document of a new query.

With hits_q(i) = 1 when the document at rank i (from 0) of the run's ranking for training query q is relevant
(grade >= the relevance level) and Q the training queries the run has:

- ``probfuse`` (Lillis et al., SIGIR 2006): each ranking cut into S segments of ceil(n_q / S) ranks; P_k = mean
  over Q of the share of relevant documents in segment k. A document in segment k of a new ranking (cut the
  same way) scores P_k / (k + 1).
- ``segfuse`` (Shokouhi, ECIR 2007): segments of growing size, boundaries 0, 5, 15, 35, 75, ... 5115 (10 x
  2^(k-1) - 5); P_k = mean over Q of relevant documents in segment k / its size. Score P_k x (v + 1), v the
  document's normalised score; beyond rank 5115 the score is 0.
- ``slidefuse`` (Lillis et al., 2010): P(i) = relevant at rank i / training rankings reaching rank i; a
  document at rank p of an N-document ranking scores the mean of P over ranks max(p - w, 0) .. min(p + w,
  N - 1) (ranks P does not reach count 0).
- ``posfuse`` (Lillis et al.): the same P(i), read at the document's own rank (0 beyond).
- ``mapfuse`` (Lillis et al., 2010): MAP_r / (i + 1), MAP_r the run's mean average precision on the
  training queries.
- ``bayesfuse`` (Aslam and Montague, SIGIR 2001): log odds log(p / (1 - p)) per rank segment (boundaries 0, 5,
  10, 15, 20, 30, 100, 200, 500, 1000), p the mean precision of the segment over Q (0 and 1 replaced by
  0.001 and 0.999); a document's score is the sum over runs of its log odds, log(0.001 / 0.999) for a run
  that did not retrieve it or ranks it beyond 1000.

These are ranx's definitions (`ranx.fusion`), equal to them where ranx defines the case (tests); ranx needs
the same queries in the qrels and every run, where here a run's training queries are the qrels queries it
has. `search_fusion` trains on validation queries and reports the fused run's score on held-out ones.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragmetrics.errors import InputError
from ragmetrics.options import TRAINED_FUSION_METHODS
from ragmetrics.retrieval.fusion import Ranking, Scores
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run

__all__ = ["BAYES_CUTS", "SEGFUSE_BOUNDS", "FusionModel", "train_fusion"]

SEGFUSE_BOUNDS: tuple[int, ...] = (0, *(10 * 2 ** (k - 1) - 5 for k in range(1, 11)))
BAYES_CUTS: tuple[int, ...] = (0, 5, 10, 15, 20, 30, 100, 200, 500, 1000)
_LOW_ODDS = math.log(0.001 / 0.999)


@dataclass(frozen=True)
class FusionModel:
    """What training learned per run: relevance probabilities by segment or rank, log odds, or a MAP."""

    method: str
    per_run: tuple[tuple[float, ...], ...]
    """probfuse/segfuse: P per segment; slidefuse/posfuse: P per rank; bayesfuse: log odds per rank; mapfuse:
    (MAP,)."""
    window: int = 0
    """slidefuse's w."""
    training_queries: int = 0
    level: int = 1

    def combine(
        self, rankings: list[Ranking | None], _: Mapping[str, float], __: Sequence[float] | None
    ) -> Scores:
        """The fused scores of one query's rankings (`fusion.fuse` calls this for a trained method)."""
        if self.method == "bayesfuse":
            return self._bayes(rankings)
        scores: Scores = {}
        for r, ranking in enumerate(rankings):
            if ranking is None:
                continue
            for i, (doc, value) in enumerate(zip(ranking.docs, ranking.values, strict=True)):
                scores[doc] = scores.get(doc, 0.0) + self._point(r, i, len(ranking.docs), value)
        return scores

    def _point(self, r: int, i: int, n: int, value: float) -> float:
        model = self.per_run[r]
        if self.method == "probfuse":
            size = math.ceil(n / len(model))
            k = i // size
            return model[k] / (k + 1) if k < len(model) else 0.0
        if self.method == "segfuse":
            for k in range(len(SEGFUSE_BOUNDS) - 1):
                if i < SEGFUSE_BOUNDS[k + 1]:
                    return model[k] * (value + 1.0)
            return 0.0
        if self.method == "posfuse":
            return model[i] if i < len(model) else 0.0
        if self.method == "slidefuse":
            a, b = max(i - self.window, 0), min(i + self.window, n - 1)
            return math.fsum(model[a : b + 1]) / (b - a + 1)
        return model[0] / (i + 1)  # mapfuse

    def _bayes(self, rankings: list[Ranking | None]) -> Scores:
        odds: list[dict[str, float]] = []
        for r, ranking in enumerate(rankings):
            model = self.per_run[r]
            docs = ranking.docs if ranking is not None else []
            odds.append({doc: model[i] if i < len(model) else _LOW_ODDS for i, doc in enumerate(docs)})
        candidates = {doc for run in odds for doc in run}
        return {doc: math.fsum(run.get(doc, _LOW_ODDS) for run in odds) for doc in candidates}


def _hit_lists(qrels: Qrels, run: Run, level: int) -> list[list[int]]:
    """Per training query the run has: 1 where its ranking holds a relevant document, else 0."""
    judged = qrels.to_dict()
    ranked = run.to_dict()
    return [
        [1 if judged[qid].get(doc, 0) >= level else 0 for doc in ranked[qid]]
        for qid in judged
        if qid in ranked
    ]


def _probfuse(hits: list[list[int]], segments: int) -> tuple[float, ...]:
    probs = [0.0] * segments
    for hit_list in hits:
        size = math.ceil(len(hit_list) / segments)
        for k in range(segments):
            segment = hit_list[k * size : (k + 1) * size]
            if segment:
                probs[k] += sum(segment) / len(segment)
    return tuple(p / len(hits) for p in probs)


def _segfuse(hits: list[list[int]]) -> tuple[float, ...]:
    probs = [0.0] * (len(SEGFUSE_BOUNDS) - 1)
    for hit_list in hits:
        for k in range(len(probs)):
            start, end = SEGFUSE_BOUNDS[k], SEGFUSE_BOUNDS[k + 1]
            probs[k] += sum(hit_list[start:end]) / (end - start)
    return tuple(p / len(hits) for p in probs)


def _by_rank(hits: list[list[int]]) -> tuple[float, ...]:
    depth = max(len(h) for h in hits)
    reached = [0] * depth
    relevant = [0] * depth
    for hit_list in hits:
        for i, hit in enumerate(hit_list):
            reached[i] += 1
            relevant[i] += hit
    return tuple(rel / n for rel, n in zip(relevant, reached, strict=True))


def _bayes(hits: list[list[int]]) -> tuple[float, ...]:
    odds = [0.0] * BAYES_CUTS[-1]
    for start, end in itertools.pairwise(BAYES_CUTS):
        precision = math.fsum(sum(h[start:end]) / (end - start) for h in hits) / len(hits)
        precision = precision or 0.001
        rest = (1.0 - precision) or 0.001
        odds[start:end] = [math.log(precision / rest)] * (end - start)
    return tuple(odds)


def train_fusion(
    qrels: Qrels,
    runs: Sequence[Run],
    method: str,
    *,
    segments: int = 10,
    window: int = 5,
    level: int = 1,
) -> FusionModel:
    """Learn `method`'s per-run model from `qrels` (the training queries): `segments` for probfuse, `window`
    (w) for slidefuse, `level` the grade from which a document is relevant."""
    if method not in TRAINED_FUSION_METHODS:
        raise InputError(
            f"{method!r} is not trained; trained methods: {', '.join(TRAINED_FUSION_METHODS)}", field="method"
        )
    if not isinstance(qrels, Qrels):
        raise InputError("train_fusion needs the training qrels as a ragmetrics Qrels", field="qrels")
    if segments < 1:
        raise InputError(f"probfuse needs at least one segment, got {segments}", field="segments")
    if window < 0:
        raise InputError(f"slidefuse's window must be >= 0, got {window}", field="window")
    per_run: list[tuple[float, ...]] = []
    for run in runs:
        if method == "mapfuse":
            from ragmetrics.retrieval.evaluate import evaluate

            score = evaluate(qrels, run, [f"map-l{level}"], query_set="intersection", allow_disjoint=True)
            per_run.append((float(score.aggregate[f"map-l{level}"] or 0.0),))
            continue
        hits = _hit_lists(qrels, run, level)
        if not hits:
            raise InputError(
                f"run {run.name!r} has none of the training qrels' queries: nothing to learn {method} from",
                field="qrels",
            )
        if method == "probfuse":
            per_run.append(_probfuse(hits, segments))
        elif method == "segfuse":
            per_run.append(_segfuse(hits))
        elif method == "bayesfuse":
            per_run.append(_bayes(hits))
        else:
            per_run.append(_by_rank(hits))
    return FusionModel(
        method=method,
        per_run=tuple(per_run),
        window=window,
        training_queries=len(qrels.query_ids),
        level=level,
    )
