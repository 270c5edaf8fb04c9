"""The labelled samples an alignment fits on: labels of one metric joined to the samples they describe.

Checked strictly, each problem an InputError naming the labels file, line and field: no label of the metric,
a label whose sample id no sample has, labels of a single class (nothing to align to), fewer labels of a
class than folds (a fold without it could not be scored).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.trust.agreement import label_kind
from ragmetrics.trust.labels import HumanLabels

__all__ = ["LabelledSamples", "join_labels", "labels_sha256"]


@dataclass(frozen=True)
class LabelledSamples:
    samples: list[RagSample]
    labels: NDArray[np.float64]  # in [0, 1]
    lines: list[int]
    kind: Literal["binary", "graded"]
    source: str
    run: str | None = None


def labels_sha256(source: str) -> str:
    path = Path(source)
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return hashlib.sha256(source.encode()).hexdigest()


def join_labels(
    samples: Sequence[RagSample], human: HumanLabels, metric: str, *, run: str | None, folds: int
) -> LabelledSamples:
    by_id = {s.id: s for s in samples}
    if run is None:
        runs = sorted({lab.run for lab in human.labels if lab.metric == metric and lab.run is not None})
        if len(runs) == 1:
            run = runs[0]  # every run-specific label is of one run: these samples are its outputs
        elif len(runs) > 1:
            raise InputError(
                f"the labels of {metric!r} describe the outputs of runs {', '.join(runs)}: say which one these "
                "samples are with --run (run=...)",
                source=human.source,
                field="run",
            )
    found = human.for_metric(metric, run)
    if not found:
        have = ", ".join(human.metrics()) or "none"
        raise InputError(
            f"no labels of metric {metric!r} (the file labels: {have})", source=human.source, field="metric"
        )
    chosen: list[RagSample] = []
    values: list[float] = []
    raw: list[float] = []
    lines: list[int] = []
    for sample_id, label in sorted(found.items(), key=lambda kv: kv[1].line):
        sample = by_id.get(sample_id)
        if sample is None:
            raise InputError(
                f"unknown sample id {sample_id!r}: none of the {len(by_id)} samples has it",
                source=human.source,
                line=label.line,
                field="sample_id",
            )
        chosen.append(sample)
        values.append(label.value)
        raw.append(label.raw)
        lines.append(label.line)
    kind: Literal["binary", "graded"] = "binary" if label_kind(raw) == "binary" else "graded"
    y = np.asarray(values, dtype=np.float64)
    positive = y >= 0.5
    if len(set(values)) < 2 or positive.all() or not positive.any():
        raise InputError(
            f"the {len(values)} labels of {metric!r} are all on one side of 0.5 (all {'yes' if positive.all() else 'no'}): "
            "alignment needs people's yes and no to learn where the line is",
            source=human.source,
            field="label",
        )
    if len(values) < folds:
        raise InputError(
            f"{len(values)} labels of {metric!r} for {folds} folds: give at least one label per fold (more "
            "labels, or fewer --folds)",
            source=human.source,
            field="label",
        )
    fewest = int(min(positive.sum(), (~positive).sum()))
    if fewest < folds:
        side = "yes" if positive.sum() < (~positive).sum() else "no"
        raise InputError(
            f"only {fewest} {side} label(s) of {metric!r} for {folds} folds: each fold needs at least one of each "
            "side (label more samples of that side, or use fewer --folds)",
            source=human.source,
            field="label",
        )
    return LabelledSamples(chosen, y, lines, kind, human.source, run)
