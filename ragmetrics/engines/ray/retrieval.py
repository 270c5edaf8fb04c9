"""Retrieval scoring split by query across Ray tasks, assembled into exactly the local engine's result.

Every metric is a function of one query's ranking and judgments, so scoring shards of queries separately and
stacking the rows gives the same per-query values. The driver decides which queries are scored (the qrels',
or the shared ones) and cuts that list into contiguous chunks in the qrels' sorted order, so the stacked rows
are in the local engine's order and the means, computed over the same array, are equal to the last bit.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmetrics.engines.ray.cluster import import_ray
from ragmetrics.errors import InputError
from ragmetrics.options import QuerySet
from ragmetrics.retrieval.evaluate import ScoreMatrix, score_matrix
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.schema import RunResult


def _score_chunk(
    qrels: Qrels, run: Run, metrics: list[str], name: str, lengths: Any = None, straddle: str = "exclude"
) -> ScoreMatrix:
    return score_matrix(
        qrels,
        run,
        metrics,
        query_set="qrels",
        name=name,
        allow_disjoint=True,
        lengths=lengths,
        straddle=straddle,
    )


def score_sharded(
    qrels: Qrels | Any,
    run: Run | Any,
    metrics: Sequence[str],
    *,
    query_set: QuerySet,
    name: str,
    shards: int,
    lengths: Any = None,
    straddle: str = "exclude",
) -> RunResult:
    """`evaluate(qrels, run, metrics, ...)`, with the queries scored in `shards` Ray tasks."""
    ray = import_ray()
    q = qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)
    r = run if isinstance(run, Run) else Run.from_dict(run, name=name)
    # The global checks and bookkeeping, on ids only (the same rules as the local engine, which raises them).
    whole = score_matrix(
        q.select(q.query_ids[:1]),
        r.select(()),
        metrics,
        name=name,
        allow_disjoint=True,
        lengths=lengths,
        straddle=straddle,
    )
    run_ids = set(r.query_ids)
    qrels_ids = set(q.query_ids)
    missing = tuple(qid for qid in q.query_ids if qid not in run_ids)
    extra = tuple(qid for qid in r.query_ids if qid not in qrels_ids)
    if r.query_ids and len(extra) == len(r.query_ids):
        score_matrix(
            q, r, metrics, query_set=query_set, name=name, lengths=lengths, straddle=straddle
        )  # raises
    scored = list(q.query_ids) if query_set == "qrels" else [qid for qid in q.query_ids if qid in run_ids]
    if not scored:
        raise InputError(
            f"run {name!r} shares no query with the qrels; nothing to average over "
            "(query_set='qrels' scores the missing queries 0)",
            field="query_set",
        )
    count = max(1, min(shards, len(scored)))
    bounds = np.linspace(0, len(scored), count + 1).astype(int)
    chunks = [scored[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    task = ray.remote(_score_chunk)
    refs = [
        task.remote(
            q.select(chunk),
            r.select([x for x in chunk if x in run_ids]),
            list(metrics),
            name,
            lengths,
            straddle,
        )
        for chunk in chunks
    ]
    parts: list[ScoreMatrix] = ray.get(refs)
    values = np.vstack([p.values for p in parts]) if parts else np.zeros((0, len(whole.metrics)))
    settings = dict(whole.settings)
    settings["query_set"] = query_set
    merged = ScoreMatrix(
        name=name,
        query_ids=tuple(qid for p in parts for qid in p.query_ids),
        metrics=whole.metrics,
        requests=whole.requests,
        values=values,
        query_set=query_set,
        missing_queries=missing,
        extra_queries=extra,
        num_qrels_queries=len(q.query_ids),
        num_run_queries=len(r.query_ids),
        settings=settings,
    )
    return merged.to_result()
