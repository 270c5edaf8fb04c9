"""The judge measured against people on a night: agreement and PPI estimates per judged run, and the
PPI-corrected paired differences, from the config's human labels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.schema import Report, RunResult

if TYPE_CHECKING:
    from ragmetrics.trust.labels import HumanLabels


def attach_human_labels(
    config: NightlyConfig, results: dict[str, RunResult], report: Report, dataset: QADataset
) -> HumanLabels | None:
    """Agreement and PPI estimates on every judged run, and PPI-corrected paired differences, from the
    config's human labels; returns the labels (the gate's PPI switch uses them)."""
    if config.human_labels is None:
        return None
    from ragmetrics.trust import judge_agreement, load_labels, ppi_difference
    from ragmetrics.trust.labels import labels_from_columns

    spec = config.human_labels
    if spec.columns is not None:
        labels = labels_from_columns(dataset.kept, spec.columns, source=dataset.source, scale=spec.scale)
    else:
        assert spec.path is not None  # the config allows exactly one of them
        labels = load_labels(spec.path, scale=spec.scale, adjudication=spec.adjudication)
    judged = [
        r for r in results.values() if r.metadata.judge is not None or r.metadata.kind in ("judge", "mixed")
    ]
    labels.check_ids(
        {q for r in judged for q in r.per_query} or {q for r in results.values() for q in r.per_query}
    )
    judge_metrics = set(config.judge.metrics) if config.judge is not None else set()
    labels.check_metrics(judge_metrics)
    for result in judged:
        trust = judge_agreement(
            result,
            labels,
            metrics=[m for m in result.metadata.metrics if m in judge_metrics],
            threshold=spec.threshold,
            confidence=spec.confidence,
            seed=config.compare.seed,
            check_ids=False,
        )
        noise = result.trust.noise if result.trust is not None else []
        result.trust = trust.model_copy(update={"noise": noise})
    pairs = []
    for comparison in report.comparisons:
        if comparison.metric not in judge_metrics:
            continue
        a, b = results.get(comparison.baseline), results.get(comparison.candidate)
        if a is None or b is None:
            continue
        pair = ppi_difference(a, b, labels, comparison.metric, confidence=spec.confidence)
        if pair is not None:
            pairs.append(pair)
    report.metadata.ppi_pairs = pairs
    return labels
