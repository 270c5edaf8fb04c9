"""Judging on Ray: samples in batches across actors that each hold a judge, one verdict cache in the end.

Each actor builds the judge the settings ask for (the local embedder, or an LLM client whose share of the
global concurrency budget is `max_concurrency / workers`) over a `ShardedCache`: it reads the main cache and
writes every new verdict, committed one by one, to its own shard file. The driver hands out batches of
samples in order, merges a worker's shard into the main cache each time that worker returns a batch (a
checkpoint), and merges all shards at the end. A worker that dies mid-batch is replaced, its shard merged,
and its batch handed out again: the replacement finds every verdict the dead worker stored, so only the
verdicts that were in flight are asked again. A killed driver leaves the shards on disk; the next run merges
them before it starts (`merge_leftovers`). One progress bar counts the units of all workers.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics.engines.ray.cluster import import_ray
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.cache_shards import ShardMerger, merge_leftovers, shard_path
from ragmetrics.judge.registry import JudgeMetricSpec, registered_metrics, spec
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.schema import CacheStats, JudgeInfo, RunResult, TokenUsage

logger = logging.getLogger("ragmetrics.engines")

MAX_RESTARTS_PER_BATCH = 3


class JudgeWorker:
    """A Ray actor's state: one judge over a shard of the verdict cache (run via `ray.remote`)."""

    def __init__(self, settings: dict[str, Any], shard: str | None) -> None:
        from ragmetrics.judge.cache_shards import ShardedCache
        from ragmetrics.judge.select import make_judge

        parsed = JudgeSettings.model_validate(settings)
        cache = None
        if shard is not None and parsed.cache_path is not None and parsed.use_cache:
            cache = ShardedCache(Path(parsed.cache_path), Path(shard))
        self._judge = make_judge(parsed, cache=cache)

    def score(
        self, samples: list[dict[str, Any]], metrics: list[str], name: str, own: list[JudgeMetricSpec]
    ) -> dict[str, Any]:
        """`own`: the team's metrics among `metrics`, registered here too (a worker is another process)."""
        from ragmetrics.judge.evaluate import evaluate_rag

        with registered_metrics(own):
            result = evaluate_rag(samples, metrics, self._judge, name=name, progress=False)
        return result.model_dump(mode="json")

    def info(self) -> dict[str, Any]:
        return self._judge.info().model_dump(mode="json")

    def pid(self) -> int:
        import os

        return os.getpid()


class RayJudgeSession:
    """The JudgeSession of the Ray engine (see module doc)."""

    def __init__(self, settings: JudgeSettings, *, workers: int, batch_size: int, worker_cpus: float) -> None:
        self._ray = import_ray()
        self.settings = settings
        self.workers = workers
        self.batch_size = batch_size
        per_worker = max(1, settings.max_concurrency // workers)
        self._worker_settings = settings.model_copy(update={"max_concurrency": per_worker}).model_dump(
            mode="json"
        )
        self._main: VerdictCache | None = None
        if settings.cache_path is not None and settings.use_cache:
            self._main = VerdictCache(settings.cache_path)
            merge_leftovers(self._main)
        self._merger = ShardMerger(self._main) if self._main is not None else None
        self._actor_class = self._ray.remote(num_cpus=worker_cpus)(JudgeWorker)
        self._actors: list[Any] = [self._start(i) for i in range(workers)]
        self._infos: list[JudgeInfo] = []
        self.restarts = 0

    def _shard(self, index: int) -> str | None:
        if self.settings.cache_path is None or not self.settings.use_cache:
            return None
        return str(shard_path(Path(self.settings.cache_path), f"worker-{index}"))

    def _start(self, index: int) -> Any:
        return self._actor_class.remote(self._worker_settings, self._shard(index))

    def _checkpoint(self, index: int) -> None:
        shard = self._shard(index)
        if self._merger is not None and shard is not None:
            self._merger.merge(Path(shard))

    def actors(self) -> list[Any]:
        """The live actor handles (tests kill one to prove a lost worker costs only its calls in flight)."""
        return list(self._actors)

    def score(
        self, samples: Sequence[RagSample], metrics: Sequence[str], *, name: str, progress: bool
    ) -> RunResult:
        ray = self._ray
        from ragmetrics.judge.conversation import batches_keeping_conversations
        from ragmetrics.judge.evaluate import _progress

        items = [s.model_dump(mode="json") for s in samples]
        own = [spec(m) for m in metrics if spec(m).origin != "built-in"]
        # A conversation's turns stay in one batch: faithfulness of a turn reads the turns before it.
        batches = [
            [items[i] for i in group] for group in batches_keeping_conversations(samples, self.batch_size)
        ]
        queue: deque[int] = deque(range(len(batches)))
        results: dict[int, RunResult] = {}
        tries: dict[int, int] = {}
        pending: dict[Any, tuple[int, int]] = {}
        idle = deque(range(len(self._actors)))
        context, advance = _progress(progress, len(items) * len(metrics), name, list(metrics))
        with context:
            while queue or pending:
                while queue and idle:
                    worker, batch = idle.popleft(), queue.popleft()
                    ref = self._actors[worker].score.remote(batches[batch], list(metrics), name, own)
                    pending[ref] = (worker, batch)
                ready, _ = ray.wait(list(pending), num_returns=1)
                worker, batch = pending.pop(ready[0])
                try:
                    data = ray.get(ready[0])
                except ray.exceptions.RayActorError as exc:
                    tries[batch] = tries.get(batch, 0) + 1
                    if tries[batch] > MAX_RESTARTS_PER_BATCH:
                        raise RuntimeError(
                            f"judge worker died {tries[batch]} times on batch {batch} of run {name!r}: {exc}"
                        ) from exc
                    logger.warning("judge worker %d died (%s); restarting it and resubmitting", worker, exc)
                    self.restarts += 1
                    self._checkpoint(worker)  # what it stored before dying is not asked again
                    self._actors[worker] = self._start(worker)
                    queue.appendleft(batch)
                    idle.append(worker)
                    continue
                results[batch] = RunResult.model_validate(data)
                self._checkpoint(worker)
                idle.append(worker)
                for _ in range(len(batches[batch]) * len(metrics)):
                    advance()
        return _combine(name, [results[b] for b in range(len(batches))], list(metrics), self.info())

    def info(self) -> JudgeInfo:
        infos = [JudgeInfo.model_validate(d) for d in self._ray.get([a.info.remote() for a in self._actors])]
        return combine_infos([*self._infos, *infos], self.settings)

    def close(self) -> None:
        try:
            self._infos = [
                JudgeInfo.model_validate(d) for d in self._ray.get([a.info.remote() for a in self._actors])
            ]
        except Exception:  # a dead actor's figures are lost, its verdicts are not (they are in its shard)
            logger.warning("could not read the judge workers' figures before closing them", exc_info=True)
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
        if self._main is not None:
            merge_leftovers(self._main)  # every shard, then the shards are removed
            self._main.close()


def combine_infos(infos: list[JudgeInfo], settings: JudgeSettings) -> JudgeInfo:
    """One JudgeInfo for all workers: the first's description, with calls, tokens, cache counts summed."""
    if not infos:
        raise ValueError("no judge worker reported")
    first = infos[0].model_copy(deep=True)
    usage = TokenUsage()
    cache = CacheStats(
        path=str(settings.cache_path) if settings.cache_path else None, enabled=settings.use_cache
    )
    costs = [i.usage.cost_usd for i in infos if i.usage.cost_usd is not None]
    for info in infos:
        for field in (
            "calls",
            "prompt_tokens",
            "completion_tokens",
            "embedding_tokens",
            "retries",
            "repairs",
        ):
            setattr(usage, field, getattr(usage, field) + getattr(info.usage, field))
        for field in ("hits", "misses", "writes", "write_failures", "failure_hits", "failure_retries"):
            setattr(cache, field, getattr(cache, field) + getattr(info.cache, field))
    usage.cost_usd = sum(costs) if costs else None
    first.usage, first.cache = usage, cache
    first.failures = sum(i.failures for i in infos)
    first.settings = {**first.settings, "max_concurrency": settings.max_concurrency, "workers": len(infos)}
    return first


def _combine(name: str, parts: list[RunResult], metrics: list[str], info: JudgeInfo) -> RunResult:
    """The batches' results as one, in sample order (as the local engine orders them)."""
    per_query: dict[str, dict[str, float | None]] = {}
    details: dict[str, Any] = {}
    failures = []
    not_applicable = []
    for part in parts:
        per_query.update(part.per_query)
        details.update(part.details)
        failures.extend(part.failures)
        not_applicable.extend(part.not_applicable)
    metadata = parts[0].metadata.model_copy(deep=True)
    metadata.num_queries = len(per_query)
    metadata.judge = info
    metadata.metric_settings = {"backend": info.backend, **info.settings}
    result = RunResult(
        name=name,
        per_query=per_query,
        failures=failures,
        not_applicable=not_applicable,
        details=details,
        metadata=metadata,
    )
    result.recompute_aggregate()
    return result
