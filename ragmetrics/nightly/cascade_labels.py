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

__all__ = ["labelled_items", "split_labels"]

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
