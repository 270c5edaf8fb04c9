"""The grid a `sweep:` section spans: every (chunking, retrieval arm, reranker, k) as one named configuration.

A *retrieval arm* is a first-stage retriever or a hybrid of two of them at one fusion weight. The configurations
share their stages by construction: each names the stage keys it reads (`index_key`, `arm_key`, `rerank_key`),
so the runner computes a stage once per key, never once per configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragmetrics.errors import ConfigError
from ragmetrics.sweep.config import SweepConfig

__all__ = ["AS_GIVEN", "Configuration", "expand", "pick_baseline"]

AS_GIVEN = "passages"
"""The chunking label of a sweep without a chunking axis: the dataset's passages as they are."""


@dataclass(frozen=True)
class Configuration:
    """One point of the grid. `arm` is a retriever name or `hybrid(a+b@w)`; `weight` is None for a single one."""

    chunking: str
    arm: str
    reranker: str
    k: int
    retrievers: tuple[str, ...]
    weight: float | None = None

    @property
    def name(self) -> str:
        prefix = "" if self.chunking == AS_GIVEN else f"{self.chunking}/"
        return f"{prefix}{self.arm}/{self.reranker}/k{self.k}"

    @property
    def arm_key(self) -> tuple[str, str]:
        """The first-stage ranking this configuration reads (shared by every reranker and k over it)."""
        return (self.chunking, self.arm)

    @property
    def rerank_key(self) -> tuple[str, str, str]:
        """The reranked ranking it reads (shared by every k over it)."""
        return (self.chunking, self.arm, self.reranker)


def chunking_labels(config: SweepConfig) -> list[str]:
    """One label per chunking of the axis, from its own settings (method, size, overlap), or AS_GIVEN."""
    if config.chunking is None:
        return [AS_GIVEN]
    labels: list[str] = []
    for i, settings in enumerate(config.chunking):
        label = settings.name
        if label in labels:
            raise ConfigError(f"sweep.chunking[{i}]: chunking {label!r} is listed twice")
        labels.append(label)
    return labels


def _arms(config: SweepConfig) -> list[tuple[str, tuple[str, ...], float | None]]:
    arms: list[tuple[str, tuple[str, ...], float | None]] = [
        (r.name, (r.name,), None) for r in config.retrievers
    ]
    if config.fusion is not None:
        first, second = config.fusion.runs
        for weight in config.fusion.weights:
            arms.append((f"hybrid({first}+{second}@{weight:g})", (first, second), weight))
    return arms


def expand(config: SweepConfig) -> list[Configuration]:
    """Every configuration, in axis order (chunking, arm, reranker, k): the first is the default baseline."""
    grid = [
        Configuration(chunking, arm, reranker.name, k, retrievers, weight)
        for chunking in chunking_labels(config)
        for arm, retrievers, weight in _arms(config)
        for reranker in config.rerankers
        for k in config.k
    ]
    if not grid:  # every axis is validated non-empty; this guards a grid built from a config made in code
        raise ConfigError("sweep: the grid is empty (an axis has no value)")
    return grid


def pick_baseline(config: SweepConfig, grid: list[Configuration]) -> Configuration:
    """The configuration named by `sweep.baseline`, or the grid's first."""
    if config.baseline is None:
        return grid[0]
    for item in grid:
        if item.name == config.baseline:
            return item
    names = ", ".join(c.name for c in grid[:6])
    raise ConfigError(
        f"sweep.baseline: no configuration named {config.baseline!r}; names look like {names}, ..."
    )
