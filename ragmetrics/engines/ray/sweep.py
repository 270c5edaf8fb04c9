"""A sweep's first stages (one index per chunking and retriever, searched for every question) as Ray tasks.

The engine knows nothing of retrievers: it is handed a module-level function and picklable jobs, runs one task
per job, and returns the results in job order, so a grid's largest stages build in parallel across a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

from ragmetrics.engines.ray.cluster import connect, disconnect, import_ray

__all__ = ["RayStages"]

J = TypeVar("J")
R = TypeVar("R")


class RayStages:
    """Joins the cluster at `address` (None: a local one with `num_cpus`); `map` runs fn(job) as one task each."""

    def __init__(
        self, *, address: str | None = None, num_cpus: int | None = None, task_cpus: float = 1.0
    ) -> None:
        self._started = connect(address, num_cpus)
        self.task_cpus = task_cpus
        self.tasks = 0

    def map(self, fn: Callable[[J], R], jobs: Sequence[J]) -> list[R]:
        ray = import_ray()
        remote: Any = ray.remote(num_cpus=self.task_cpus)(fn)
        refs = [remote.remote(job) for job in jobs]
        self.tasks += len(refs)
        return list(ray.get(refs))

    def close(self) -> None:
        disconnect(self._started)
        self._started = False

    def __enter__(self) -> RayStages:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
