"""The retrieval metrics' public names in one place: the registry, the parser of metric strings and the reference.

Each metric has one declarative spec in `ragmetrics.retrieval.registry` (a module per family), from which the
kernels' metric codes, the parser (`metric_parse`), the CLI help and `docs/metrics.md` (`metric_reference`) are
derived, so each metric is described in exactly one place. A metric string reads ``name[@k][-lN]`` (``rbp.P``
carries the persistence 0.P); trec_eval's spellings (``P_10``, ``ndcg_cut_10``, ``recip_rank``, ``Rprec``,
``success_5``, ``map_cut_10``, ``recall_100``, ``num_rel_ret``, ``set_F``, ...) and ir_measures-style ones
(``P@10``, ``AP``, ``RR``, ``nDCG@10``) are accepted as aliases. Run ``python -m ragmetrics.retrieval.metrics``
to print the metric reference in Markdown.
"""

from __future__ import annotations

from ragmetrics.retrieval.metric_parse import MetricRequest, parse_metric, parse_metrics
from ragmetrics.retrieval.metric_reference import metric_help, render_reference
from ragmetrics.retrieval.registry import REGISTRY
from ragmetrics.retrieval.registry.spec import Aggregate, Kind, MetricSpec
from ragmetrics.retrieval.registry.user_models import (
    UDCG_IRRELEVANT_WEIGHT,
    UDCG_MAX_WEIGHT,
    UDCG_RELEVANT_WEIGHT,
)

__all__ = [
    "REGISTRY",
    "UDCG_IRRELEVANT_WEIGHT",
    "UDCG_MAX_WEIGHT",
    "UDCG_RELEVANT_WEIGHT",
    "Aggregate",
    "Kind",
    "MetricRequest",
    "MetricSpec",
    "metric_help",
    "parse_metric",
    "parse_metrics",
    "render_reference",
]


if __name__ == "__main__":
    print(render_reference(), end="")
