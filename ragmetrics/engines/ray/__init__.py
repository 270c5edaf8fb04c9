"""The nightly job on a Ray cluster: retrieval scoring sharded by query, judging sharded across actors.

Install with ``pip install '.[ray]'`` in a clone; select with ``engine: {kind: ray}`` in a config or
``ragmetrics run CONFIG --engine ray``. Results equal the local engine's (docs/scale.md says how and what it
costs). Nothing outside this package imports ray.
"""

from __future__ import annotations

from ragmetrics.engines.ray.engine import RayEngine
from ragmetrics.engines.ray.partitions import evaluate_partitions

__all__ = ["RayEngine", "evaluate_partitions"]
