"""The cross-fitting: the outer folds (`_HeldOut`), each step fitted per fold on top of the kept ones and kept
only when its held-out gain's interval is above 0 (`_fit_steps`), the figures before and after, the kept steps
refitted on every label (`_refit`) and the learning curve of the refit steps (`_curve`).

Why its own module: this is the part that makes "after" an honest estimate (every held-out label scored by
an alignment fitted without it); `run.align_judge` only wires it to the judge and the report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ragmetrics.alignment.aligner import State, StepName, _Aligner
from ragmetrics.alignment.figures import STATISTICS, figure, paired_gain
from ragmetrics.alignment.folds import stratified_subsample
from ragmetrics.alignment.labelled import LabelledSamples
from ragmetrics.alignment.report import CurvePoint, FigureRow, StepReport
from ragmetrics.alignment.scoring import BudgetExceeded, Judged
from ragmetrics.errors import FAILURE_CAUSES, ConfigError, FailureCause, InputError, JudgeError
from ragmetrics.schema import Interval

__all__ = ["CURVE_SHARES"]


CURVE_SHARES = (0.25, 0.5, 0.75, 1.0)


def _est(f: Any) -> Interval:
    return Interval(estimate=f.value, low=f.low, high=f.high)


def _usable(
    data: LabelledSamples, baseline: list[Judged], threshold: float
) -> tuple[dict[str, str], list[int]]:
    """The labelled samples the judge could not score (id -> cause) and the positions of those it did; stops
    when it failed on most of them, or scored only one side of the labels."""
    everyone = range(len(data.samples))
    excluded = {
        data.samples[i].id: str(j.failure) for i, j in zip(everyone, baseline, strict=True) if j.value is None
    }
    usable = [i for i in everyone if data.samples[i].id not in excluded]
    failed = {k: v for k, v in excluded.items() if v != "not applicable"}
    if len(failed) * 2 > len(data.samples):
        first_id, first_cause = next(iter(failed.items()))
        cause = first_cause.split(":", 1)[0]
        raise JudgeError(
            f"the judge could not score {len(failed)} of {len(data.samples)} labelled samples (e.g. {first_id}: "
            f"{first_cause}); nothing to align on: fix the judge and run again (verdicts already given are cached)",
            cause=cast(FailureCause, cause) if cause in FAILURE_CAUSES else "internal_error",
        )
    if len(set((data.labels[usable] >= threshold).tolist())) < 2:
        raise InputError(
            f"the judge scored only one side of the labels ({len(excluded)} labelled samples failed)",
            source=data.source, field="label",
        )  # fmt: skip
    return excluded, usable


@dataclass(frozen=True)
class _HeldOut:
    """The outer folds: each fold's training and held-out positions, the held-out positions in pooled order and
    their labels."""

    aligner: _Aligner
    trains: list[list[int]]
    tests: list[list[int]]
    order: list[int]
    y: NDArray[np.float64]

    @classmethod
    def of(cls, aligner: _Aligner, usable: list[int], folds: int) -> _HeldOut:
        fold_of = aligner.fold_of
        trains = [[i for i in usable if fold_of[i] != f] for f in range(folds)]
        tests = [[i for i in usable if fold_of[i] == f] for f in range(folds)]
        order = [i for f in range(folds) for i in tests[f]]
        return cls(aligner, trains, tests, order, aligner.y[order])

    def pooled(self, per_fold: Sequence[State]) -> NDArray[np.float64]:
        """Every held-out label's score under its own fold's state, in `order`."""
        return np.concatenate(
            [self.aligner.predict(per_fold[f], self.tests[f]) for f in range(len(self.tests))]
        )


def _fit_steps(
    aligner: _Aligner,
    held: _HeldOut,
    chosen_steps: Sequence[StepName],
    statistic: str,
    threshold: float,
    seed: int,
    say: Any,
) -> tuple[list[State], list[StepReport], list[StepName]]:
    """Each step fitted per fold on top of the kept ones, kept when its held-out gain's interval is above 0."""
    states = [State() for _ in held.tests]
    reports: list[StepReport] = []
    kept: list[StepName] = []
    for step in chosen_steps:
        calls_before = aligner.scorer.calls
        try:
            candidates, choices = [], []
            for f, train in enumerate(held.trains):
                state, note = aligner.fit(step, states[f], train)
                candidates.append(state)
                choices.append(f"fold {f + 1}: {note}")
            current, proposed = held.pooled(states), held.pooled(candidates)
        except BudgetExceeded as exc:
            reports.append(StepReport(name=step, kept=False, why=f"over budget: {exc}",
                                      calls=aligner.scorer.calls - calls_before))  # fmt: skip
            continue
        except JudgeError as exc:
            reports.append(StepReport(name=step, kept=False, why=f"the judge failed: {exc.cause}: {exc}",
                                      calls=aligner.scorer.calls - calls_before))  # fmt: skip
            continue
        ok = np.isfinite(current) & np.isfinite(proposed)
        y = held.y[ok]
        gain = paired_gain(statistic, current[ok], proposed[ok], y, threshold=threshold, seed=seed)
        before_f = figure(statistic, current[ok], y, threshold=threshold, seed=seed)
        after_f = figure(statistic, proposed[ok], y, threshold=threshold, seed=seed)
        keep = gain.low is not None and gain.low > 0
        why = _why(statistic, gain, keep)
        reports.append(StepReport(
            name=step, kept=keep, why=why, gain=_est(gain), before=_est(before_f), after=_est(after_f),
            choices=choices, calls=aligner.scorer.calls - calls_before,
        ))  # fmt: skip
        say(f"{step}: {'kept' if keep else 'not kept'} ({why})")
        if keep:
            states = candidates
            kept.append(step)
    return states, reports, kept


def _why(statistic: str, gain: Any, keep: bool) -> str:
    """Why a step was kept or not, from its held-out gain and interval."""
    if gain.value is None:
        return f"{statistic} is undefined on the held-out labels"
    if keep:
        return f"held-out {statistic} {gain.value:+.3f}, 95 % CI [{gain.low:+.3f}, {gain.high:+.3f}] above 0"
    if gain.high is not None and gain.high < 0:
        return (f"held-out {statistic} {gain.value:+.3f}, 95 % CI [{gain.low:+.3f}, {gain.high:+.3f}] below 0: "
                "it made the judge worse")  # fmt: skip
    if gain.low is None:
        return f"held-out {statistic} {gain.value:+.3f}, too few labels for an interval"
    return f"held-out {statistic} {gain.value:+.3f}, 95 % CI [{gain.low:+.3f}, {gain.high:+.3f}] covers 0: within the noise"


def _figures(
    data: LabelledSamples,
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    y: NDArray[np.float64],
    threshold: float,
    seed: int,
) -> list[FigureRow]:
    """Every statistic on the held-out labels, before and after (Kendall's tau only for graded labels)."""
    figures = []
    for name in STATISTICS:
        if name == "kendall" and data.kind == "binary":
            continue
        b = figure(name, before, y, threshold=threshold, seed=seed)
        a = figure(name, after, y, threshold=threshold, seed=seed)
        figures.append(FigureRow(statistic=name, before=_est(b), after=_est(a)))
    return figures


def _refit(aligner: _Aligner, kept: Sequence[StepName], usable: list[int]) -> State:
    """The kept steps refitted on every usable label: what the aligned metric applies."""
    final = State()
    for step in kept:
        try:
            final, _note = aligner.fit(step, final, usable)
        except BudgetExceeded as exc:
            raise ConfigError(
                f"the budget ran out refitting the kept step {step} on all labels: {exc}"
            ) from None
    return final


def _curve(
    aligner: _Aligner,
    steps: Sequence[StepName],
    states: Sequence[State],
    trains: Sequence[list[int]],
    tests: Sequence[list[int]],
    order: Sequence[int],
    y_order: NDArray[np.float64],
    seed: int,
) -> tuple[list[CurvePoint], str]:
    """Held-out agreement of the refit steps (head, calibration) fitted on a share of each training fold."""
    cheap = [s for s in steps if s in ("head", "calibration")]
    if not cheap:
        return [], "no learning curve: the steps tried all ask the judge again (few-shot, guidance)"
    points: list[CurvePoint] = []
    pooled_at: dict[float, NDArray[np.float64]] = {}
    for share in CURVE_SHARES:
        preds = []
        sizes = []
        for f, (train, test) in enumerate(zip(trains, tests, strict=True)):
            sub = (
                stratified_subsample(train, aligner.y.tolist(), share, seed + f) if share < 1 else list(train)
            )
            sizes.append(len(sub))
            start = State(edit=states[f].edit)
            try:
                for step in cheap:
                    start, _ = aligner.fit(step, start, sub)
            except (ValueError, BudgetExceeded):
                pass
            preds.append(aligner.predict(start, test))
        pooled = np.concatenate(preds)
        pooled_at[share] = pooled
        ok = np.isfinite(pooled)
        f_ = figure(aligner.statistic, pooled[ok], y_order[ok], threshold=aligner.threshold, seed=seed)
        points.append(CurvePoint(share=share, labels=round(float(np.mean(sizes))), value=_est(f_)))
    half, full = pooled_at[0.5], pooled_at[1.0]
    ok = np.isfinite(half) & np.isfinite(full)
    gain = paired_gain(
        aligner.statistic, half[ok], full[ok], y_order[ok], threshold=aligner.threshold, seed=seed
    )
    steps_text = " + ".join(cheap)
    if gain.value is None:
        note = f"learning curve of {steps_text}: undefined on these labels"
    elif gain.low is not None and gain.low > 0:
        note = (f"learning curve of {steps_text}: still rising from half to all training labels ({gain.value:+.3f}, "
                f"CI [{gain.low:+.3f}, {gain.high:+.3f}]): more labels would likely help")  # fmt: skip
    elif gain.value > 0.005:
        note = (f"learning curve of {steps_text}: {gain.value:+.3f} from half to all training labels, within the "
                "noise: more labels may help a little")  # fmt: skip
    else:
        note = (f"learning curve of {steps_text}: flat from half to all training labels ({gain.value:+.3f}): more "
                "labels of this kind are unlikely to help")  # fmt: skip
    return points, note
