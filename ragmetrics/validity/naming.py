"""Naming the metric that tracks the answers best, or saying that the data cannot tell.

The rule: the metric with the highest per-query tau leads. For every other metric, the difference of the two
taus is taken on each bootstrap resample (the same questions drawn for both, so the metrics' shared noise cancels);
where that difference's interval reaches 0, the data cannot tell the two apart. The leader is named only when
no other metric is within reach; otherwise every metric the data cannot tell from it is listed and none is named.
Comparing the differences, not whether two separate intervals overlap, is the sharper and the right test: two
intervals may overlap while the paired difference is clearly positive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragmetrics.validity.model import TauInterval, ValidityVerdict

__all__ = ["TauSamples", "name_best"]


@dataclass(frozen=True)
class TauSamples:
    """One metric's per-query tau on every resample (NaN where undefined): what the naming rule pairs."""

    metric: str
    tau: float | None
    resampled: NDArray[np.float64]


def _percentile(estimate: float, resampled: np.ndarray, confidence: float) -> TauInterval:
    defined = resampled[~np.isnan(resampled)]
    if not defined.size:
        return TauInterval(estimate=estimate, undefined="undefined on every resample",
                           undefined_resamples=int(resampled.size))  # fmt: skip
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return TauInterval(estimate=estimate, low=float(low), high=float(high),
                       undefined_resamples=int(resampled.size - defined.size))  # fmt: skip


def _difference(best: TauSamples, other: TauSamples, confidence: float) -> TauInterval:
    assert best.tau is not None and other.tau is not None
    return _percentile(best.tau - other.tau, best.resampled - other.resampled, confidence)


def name_best(samples: Sequence[TauSamples], confidence: float) -> ValidityVerdict:
    """The verdict over the metrics' per-query taus and their resamples (one row of questions for all)."""
    defined = sorted((s for s in samples if s.tau is not None), key=lambda s: -(s.tau or 0.0))
    if not defined:
        return ValidityVerdict(best=None, text="no metric has a defined tau with the answer quality")
    best = defined[0]
    assert best.tau is not None
    own = _percentile(best.tau, best.resampled, confidence)
    if len(defined) == 1:
        return ValidityVerdict(
            best=best.metric, leaders=[best.metric], tau=own,
            text=f"{best.metric} is the only metric with a defined tau ({_fmt(own)}); nothing to compare it with",
        )  # fmt: skip
    differences = {s.metric: _difference(best, s, confidence) for s in defined[1:]}
    tied = [m for m, d in differences.items() if d.low is None or d.low <= 0.0]
    runner = defined[1].metric
    level = f"{confidence:.0%}"
    if tied:
        shown = ", ".join(f"{m} (difference {_fmt(differences[m])})" for m in tied)
        return ValidityVerdict(
            best=None, leaders=[best.metric, *tied], tau=own, difference=differences[runner], runner_up=runner,
            text=f"the data cannot tell which metric tracks the answers best: {best.metric} leads "
            f"(tau {_fmt(own)}) but its {level} paired interval of the difference reaches 0 against {shown}",
        )  # fmt: skip
    return ValidityVerdict(
        best=best.metric, leaders=[best.metric], tau=own, difference=differences[runner], runner_up=runner,
        text=f"{best.metric} tracks the answers best: tau {_fmt(own)}; ahead of the next, {runner}, by "
        f"{_fmt(differences[runner])} ({level} paired bootstrap interval)",
    )  # fmt: skip


def _fmt(interval: TauInterval) -> str:
    if interval.estimate is None:
        return "undefined"
    if interval.low is None or interval.high is None:
        return f"{interval.estimate:.3f} [interval undefined]"
    return f"{interval.estimate:.3f} [{interval.low:.3f}, {interval.high:.3f}]"
