"""`RayEngine`: the Engine protocol on a Ray cluster (retrieval sharded by query, judging across actors)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmetrics.engines.ray.cluster import connect, disconnect
from ragmetrics.engines.ray.judge import RayJudgeSession
from ragmetrics.engines.ray.retrieval import score_sharded
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.options import QuerySet
from ragmetrics.schema import RunResult


class RayEngine:
    """Joins the cluster at `address` (None: start a local one with `num_cpus`), with `workers` judge actors
    taking `batch_size` samples at a time, and retrieval split into `retrieval_shards` tasks (default: 2 per
    worker)."""

    name = "ray"

    def __init__(
        self,
        *,
        address: str | None = None,
        workers: int = 2,
        batch_size: int = 64,
        num_cpus: int | None = None,
        worker_cpus: float = 1.0,
        retrieval_shards: int | None = None,
    ) -> None:
        if workers < 1 or batch_size < 1:
            raise ValueError("workers and batch_size must be at least 1")
        self.workers = workers
        self.batch_size = batch_size
        self.worker_cpus = worker_cpus
        self.retrieval_shards = retrieval_shards or 2 * workers
        self._started = connect(address, num_cpus)
        self.sessions: list[RayJudgeSession] = []

    def score_retrieval(
        self,
        qrels: Any,
        run: Any,
        metrics: Sequence[str],
        *,
        query_set: QuerySet,
        name: str,
        lengths: Any = None,
        straddle: str = "exclude",
    ) -> RunResult:
        return score_sharded(
            qrels,
            run,
            metrics,
            query_set=query_set,
            name=name,
            shards=self.retrieval_shards,
            lengths=lengths,
            straddle=straddle,
        )

    def judge_session(self, settings: JudgeSettings) -> RayJudgeSession:
        session = RayJudgeSession(
            settings, workers=self.workers, batch_size=self.batch_size, worker_cpus=self.worker_cpus
        )
        self.sessions.append(session)
        return session

    def close(self) -> None:
        disconnect(self._started)
        self._started = False
