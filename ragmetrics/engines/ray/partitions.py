"""Retrieval over runs too large for one process: Parquet partitions read as a Ray Dataset, scored per shard.

The run's lines are never gathered in one place. Each line goes to shard ``crc32(query id) % shards`` (one
shuffle), each shard is scored by the same kernels as everywhere else against the qrels of its queries (the
qrels are small next to a run and are shared through the object store), and only per-query scores come back:
gathered into a `RunResult`, or, with `output`, written as Parquet by the workers while the driver keeps
only the running sums that make the means. A worker holds one shard, so its memory grows with
``lines / shards``, not with the run; pick `shards` so a shard fits comfortably.

Queries of the qrels that no line of the run mentions score 0 (the 'qrels' query set, trec_eval -c), as in
the local engine; 'intersection' leaves them out. Queries only the run has are dropped in the workers and not
listed (`num_run_queries` counts the judged ones), so a run this large never sends its ids to the driver.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmetrics.engines.ray.cluster import import_ray
from ragmetrics.errors import InputError
from ragmetrics.options import QuerySet
from ragmetrics.retrieval.evaluate import ScoreMatrix, score_matrix
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import DOC_COL, Q_COL, SCORE_COL, Run
from ragmetrics.schema import RunMetadata, RunResult

__all__ = ["evaluate_partitions", "shard_of"]

_SHARD_COL = "__shard"


def shard_of(query_id: str, shards: int) -> int:
    """The shard a query's lines go to: stable across processes and runs (unlike Python's `hash`)."""
    return zlib.crc32(query_id.encode("utf-8")) % shards


def _score_shard(frame: Any, qrels: Qrels, metrics: list[str], name: str) -> Any:
    """Score one shard's lines (a pandas frame) against the qrels of that shard's queries."""
    import pandas as pd

    run = Run.from_df(frame[[Q_COL, DOC_COL, SCORE_COL]], name=name, source=f"{name} partitions")
    wanted = [qid for qid in run.query_ids if qid in qrels]
    if not wanted:
        return pd.DataFrame({Q_COL: pd.Series([], dtype=str), **{m: [] for m in metrics}})
    matrix = score_matrix(qrels.select(wanted), run.select(wanted), metrics, name=name)
    out = pd.DataFrame(matrix.values, columns=list(matrix.metrics))
    out.insert(0, Q_COL, list(matrix.query_ids))
    return out


def _add_shard(batch: Any, shards: int) -> Any:
    batch[_SHARD_COL] = [shard_of(str(q), shards) for q in batch[Q_COL]]
    return batch


def evaluate_partitions(
    qrels: Qrels,
    runs: str | Path | Sequence[str | Path],
    metrics: Sequence[str],
    *,
    name: str = "run",
    query_set: QuerySet = "qrels",
    shards: int = 16,
    output: str | Path | None = None,
) -> RunResult:
    """Score a run stored as Parquet files (columns query_id, doc_id, score) on a Ray cluster.

    Returns the `RunResult` (per-query scores gathered) or, with `output`, a result whose `per_query` is
    empty and whose `aggregate` holds the means, the per-query scores written to `output` as Parquet.
    """
    ray = import_ray()
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # the driver's own output stays readable; Ray logs progress anyway
    paths = [str(p) for p in ([runs] if isinstance(runs, str | Path) else runs)]
    if not paths:
        raise InputError("no run partitions given", source=name)
    dataset = ray.data.read_parquet(paths).select_columns([Q_COL, DOC_COL, SCORE_COL])
    dataset = dataset.map_batches(_add_shard, fn_kwargs={"shards": shards}, batch_format="pandas")
    scored = dataset.groupby(_SHARD_COL, num_partitions=shards).map_groups(
        _score_shard,
        batch_format="pandas",
        fn_kwargs={"qrels": qrels, "metrics": list(metrics), "name": name},
    )
    probe = score_matrix(qrels.select(qrels.query_ids[:1]), Run.from_dict({}, name=name), metrics, name=name)
    columns = list(probe.metrics)
    if output is not None:
        scored.write_parquet(str(output))
        scored = ray.data.read_parquet(str(output))
    frame = scored.select_columns([Q_COL]).to_pandas() if output is not None else scored.to_pandas()
    seen = set(frame[Q_COL].astype(str))
    if not seen:
        raise InputError(
            f"run {name!r} shares no query id with the qrels: every score would be 0. Are these the right files?",
            source=", ".join(paths[:3]),
            field="query_id",
        )
    missing = tuple(q for q in qrels.query_ids if q not in seen)
    settings = dict(probe.settings)
    settings["query_set"] = query_set
    if output is not None:
        sums = {m: float(scored.sum(m)) for m in columns} if len(seen) else dict.fromkeys(columns, 0.0)
        n = len(seen) + (len(missing) if query_set == "qrels" else 0)
        result = RunResult(
            name=name,
            per_query={},
            aggregate={m: sums[m] / n for m in columns},
            metadata=RunMetadata(
                kind="retrieval",
                metrics=columns,
                metric_settings=settings,
                num_queries=n,
                num_qrels_queries=len(qrels.query_ids),
                missing_queries=list(missing),
                extra={"per_query_parquet": str(output)},
            ),
        )
        return result
    by_query = {
        str(q): row for q, row in zip(frame[Q_COL], frame[columns].to_numpy(dtype=np.float64), strict=True)
    }
    if query_set == "qrels" and missing:
        zeros = score_matrix(qrels.select(missing), Run.from_dict({}, name=name), metrics, name=name)
        by_query.update(zip(zeros.query_ids, zeros.values, strict=True))
    order = [q for q in qrels.query_ids if q in by_query]
    values = np.vstack([by_query[q] for q in order]) if order else np.zeros((0, len(columns)))
    matrix = ScoreMatrix(
        name=name,
        query_ids=tuple(order),
        metrics=probe.metrics,
        requests=probe.requests,
        values=values,
        query_set=query_set,
        missing_queries=missing,
        extra_queries=(),
        num_qrels_queries=len(qrels.query_ids),
        num_run_queries=len(seen),
        settings=settings,
    )
    return matrix.to_result()
