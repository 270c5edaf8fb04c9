"""The registry of retrieval metrics: one declarative spec per metric, one module per family of metrics.

Everything else (the kernels' metric codes, the parser of metric strings, the CLI help, `docs/metrics.md`) is
derived from `REGISTRY`, so each metric is described in exactly one place. The families are concatenated in
the order the help and the reference show them.
"""

from __future__ import annotations

from ragmetrics.retrieval.registry import (
    counting,
    gain,
    incomplete,
    intent_aware,
    ranking,
    trec_extras,
    user_models,
)
from ragmetrics.retrieval.registry.spec import MetricSpec

REGISTRY: tuple[MetricSpec, ...] = (
    *counting.SPECS,
    *ranking.SPECS,
    *gain.SPECS,
    *incomplete.SPECS,
    *trec_extras.SPECS,
    *user_models.SPECS,
    *intent_aware.SPECS,
)
