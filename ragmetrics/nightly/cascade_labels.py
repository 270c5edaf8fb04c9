"""A cascade's labels for one night: read, checked, and split into annotators' examples, held-out and
calibration items.

The labels (`judge.labels`) are split by sample id, deterministically (a hash, so a sample stays on its side
night after night and a sample labelled for every run is never calibrated in one run and held out in
another): with `simulated_annotators`, first a pool of labelled examples the annotators are shown (judged like
every sample, but neither calibrating nor held out: an annotator may have seen its label), then the held-out
share, the rest calibrates. The night (`cascade_night`) and its estimate (`cascade_budget`) read them here, so
both price and judge the same calibration items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ragmetrics.judge.base import RagSample
from ragmetrics.judge.cascade.config import check_confidence_source, check_enough_labels

if TYPE_CHECKING:
    from ragmetrics.nightly.config import JudgeConfig, NightlyConfig
    from ragmetrics.trust.labels import HumanLabels

__all__ = ["check_unit_scores", "labelled_items", "split_labels"]

Item = tuple[str, str]


def _order(sample_id: str) -> str:
    return hashlib.sha256(sample_id.encode()).hexdigest()


def split_labels(
    sample_ids: Sequence[str], held_out: float, examples: int
) -> tuple[list[str], set[str], set[str]]:
    """(example pool, held-out ids, calibration ids) of the labelled sample ids, by the hash of each id."""
    ordered = sorted(set(sample_ids), key=_order)
    pool, rest = ordered[:examples], ordered[examples:]
    cut = int(len(rest) * held_out)
    return pool, set(rest[:cut]), set(rest[cut:])


def _labels(judge: JudgeConfig) -> HumanLabels:
    from ragmetrics.trust import load_labels

    assert judge.labels is not None
    return load_labels(judge.labels, scale=judge.label_scale)


def check_unit_scores(judge: JudgeConfig, metrics: Sequence[str]) -> None:
    """A ConfigError naming where a metric is defined when it scores outside [0, 1]: the cascade cuts verdicts
    and people's labels (in [0, 1]) at one threshold, 0.5, so a rubric scored 1 to 5 would say "yes" to every
    item and the agreement certified would be that of two different questions."""
    from ragmetrics.errors import ConfigError
    from ragmetrics.judge.registry import resolve_judge_metric, spec
    from ragmetrics.judge.rubric import RubricMetric

    defined = {m.name: m for m in judge.custom_metrics}
    origins = getattr(judge, "_metric_origins", None) or {}
    for metric in metrics:
        own = defined.get(metric)
        high: float | None
        if isinstance(own, RubricMetric):
            low, high = own.value_range()
            key = "scale" if own.scale is not None else "checklist"
        else:
            if resolve_judge_metric(metric) is None:
                continue  # an unknown metric is named where the metrics are checked
            (low, high), key = spec(metric).value_range, "range"
        if high is None or low < 0 or high > 1:
            shown = "inf" if high is None else f"{high:g}"
            cut = f"metric {metric!r} scores {low:g} to {shown}, but a cascade cuts its verdicts and people's labels at 0.5 on [0, 1]"
            if own is None:  # a built-in metric
                raise ConfigError(f"judge.metrics: {cut}: leave it out of the cascade")
            where = origins.get(metric) or "judge.custom_metrics"
            raise ConfigError(
                f"{where}: {key}: {cut}: score its levels within [0, 1] (for five levels: 0, 0.25, 0.5, 0.75, 1), "
                "or leave the metric out of the cascade"
            )


def labelled_items(
    config: NightlyConfig, plan: Mapping[str, tuple[list[RagSample], list[str]]]
) -> tuple[dict[str, dict[Item, float]], dict[str, set[Item]], dict[str, list[tuple[RagSample, float]]]]:
    """Per metric: the labelled items (run, sample id) with their labels (the annotators' examples left out),
    the calibration items among them, and the annotators' examples. The labels are read and checked here
    (known metrics and sample ids, enough of them for the guarantee), before anything is judged."""
    judge = config.judge
    assert judge is not None and judge.cascade is not None and judge.labels is not None
    metrics = sorted({m for _, ms in plan.values() for m in ms})
    check_confidence_source(judge, metrics, list(judge.custom_metrics))
    check_unit_scores(judge, metrics)
    labels = _labels(judge)
    labels.check_metrics(metrics)
    labels.check_ids({s.id for samples, _ in plan.values() for s in samples})  # none silently unused
    by_metric: dict[str, dict[Item, float]] = {}
    samples_by_id = {s.id: s for samples, _ in plan.values() for s in samples}
    for metric in metrics:
        found: dict[Item, float] = {}
        for run, (samples, run_metrics) in plan.items():
            if metric in run_metrics:
                applying = labels.for_metric(metric, run)
                found.update({(run, s.id): applying[s.id].value for s in samples if s.id in applying})
        by_metric[metric] = found
    pool_size = judge.samples * judge.shots if judge.confidence == "simulated_annotators" else 0
    counts = {m: len({sid for _, sid in found}) - pool_size for m, found in by_metric.items()}
    check_enough_labels(counts, judge, str(judge.labels))
    splits = {m: split_labels([sid for _, sid in found], judge.held_out, pool_size)
              for m, found in by_metric.items()}  # fmt: skip
    label_of = {m: {sid: v for (_, sid), v in found.items()} for m, found in by_metric.items()}
    examples = {
        m: [(samples_by_id[sid], label_of[m][sid]) for sid in pool] for m, (pool, _, _) in splits.items()
    }
    # the annotators' examples are judged like any item, but neither calibrate nor count as held out
    labelled = {m: {item: v for item, v in found.items() if item[1] not in splits[m][0]}
                for m, found in by_metric.items()}  # fmt: skip
    calibration = {m: {item for item in labelled[m] if item[1] in splits[m][2]} for m in metrics}
    return labelled, calibration, examples
