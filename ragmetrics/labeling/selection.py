"""Which samples a person should label first, and how many labels the estimate still needs.

The order is a score-stratified, equal-probability sample. Samples are sorted by the judge's score and
visited along a randomly shifted van der Corput sequence over that order, so any prefix of the order (the
first 10 labels, the first 37) is spread evenly over the judge's score range: low, middle and high scores
all get labels from the start. Each sample is equally likely to be at any position, so the labelled samples
stay a fair sample of all of them, which the prediction-powered estimate (ragmetrics.trust.ppi) assumes;
weighting labels towards uncertain scores would narrow the interval a little more but bias that estimate.
Against labelling at random, stratifying on the score removes the between-strata part of the rectifier's
variance (var(f - Y)), which is what narrows the PPI interval as labels come in.

How many labels halve the interval: the PPI variance is var(f)/N + var(f - Y)/n for n labelled and N
unlabelled samples, so its half-width at n' labels is predicted from the variances measured so far. Before
two labels exist, var(f - Y) is taken as mean(f (1 - f)), what it would be for a calibrated judge of
yes/no labels, and the plan says that it is an assumption.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ragmetrics.trust.ppi import estimate_mean, z_value

__all__ = ["LabelPlan", "label_plan", "labelling_order"]


def _van_der_corput(k: int) -> float:
    """The k-th point of the base-2 van der Corput sequence in [0, 1): 0, 1/2, 1/4, 3/4, 1/8, ..."""
    value, denominator = 0.0, 1.0
    while k:
        denominator *= 2.0
        k, bit = divmod(k, 2)
        value += bit / denominator
    return value


def labelling_order(scores: Mapping[str, float], *, seed: int = 0) -> list[str]:
    """Every sample id of `scores` (judge score per sample), in the order a person should label them."""
    ranked = sorted(scores, key=lambda sid: (scores[sid], sid))
    n = len(ranked)
    if n == 0:
        return []
    rng = random.Random(seed)
    shift = rng.random()
    taken = [False] * n
    order: list[str] = []
    size = 1 << max(0, (n - 1).bit_length())
    for k in range(2 * size):
        position = int(((_van_der_corput(k) + shift) % 1.0) * n)
        if not taken[position]:
            taken[position] = True
            order.append(ranked[position])
    rest = [ranked[i] for i in range(n) if not taken[i]]
    rng.shuffle(rest)
    return order + rest


@dataclass(frozen=True)
class LabelPlan:
    """Where the estimate of the people's mean stands and what more labels would do."""

    labelled: int
    scored: int
    half_width: float | None
    """Current PPI 95 % half-width (None below 2 labels)."""
    estimate: float | None
    assumed: bool
    """True when the rectifier's variance is assumed (fewer than 2 labels), not measured."""
    more_to_halve: int | None
    """Further labels after which the half-width is predicted to be half of today's; None when labels alone
    cannot get there (the judge-only term dominates) or nothing is labelled yet."""
    to_reach: dict[float, int | None]
    """Labels in all needed for a half-width of 0.10 and 0.05 (None: not reachable)."""

    def describe(self) -> str:
        if self.half_width is None or self.estimate is None:
            parts = [f"{self.labelled} of {self.scored} labelled"]
        else:
            parts = [
                f"{self.labelled} of {self.scored} labelled: people's mean {self.estimate:.3f} "
                f"± {self.half_width:.3f} (PPI, 95 %)"
            ]
        if self.more_to_halve is not None:
            parts.append(f"about {self.more_to_halve} more labels would halve the interval")
        elif self.half_width is not None:
            parts.append("more labels alone cannot halve the interval (the judge's own spread dominates)")
        reach = [
            f"±{w:.2f} at about {n} labels"
            if n is not None
            else f"±{w:.2f} out of reach with {self.scored} samples"
            for w, n in self.to_reach.items()
        ]
        if reach:
            parts.append(", ".join(reach) + (" (assuming a calibrated judge)" if self.assumed else ""))
        return "; ".join(parts)


def _half_width(var_f: float, var_r: float, n: int, total: int, z: float) -> float:
    unlabelled = total - n
    if n <= 0 or unlabelled <= 0:
        return math.inf
    return z * math.sqrt(var_f / unlabelled + var_r / n)


def _labels_for(width: float, var_f: float, var_r: float, total: int, z: float, start: int) -> int | None:
    for n in range(max(start, 2), total):
        if _half_width(var_f, var_r, n, total, z) <= width:
            return n
    return None


def label_plan(
    scores: Mapping[str, float], labels: Mapping[str, float], *, confidence: float = 0.95
) -> LabelPlan:
    """The plan for one metric: `scores` the judge's score per sample, `labels` the people's (ids among them)."""
    ids = list(scores)
    total = len(ids)
    labelled = [sid for sid in ids if sid in labels]
    f_all = np.asarray([scores[s] for s in ids], dtype=np.float64)
    z = z_value(confidence)
    var_f = float(f_all.var(ddof=1)) if total > 1 else 0.0
    n = len(labelled)
    estimate = half = None
    if n >= 2 and total - n >= 2:
        result = estimate_mean(
            [scores[s] for s in labelled],
            [labels[s] for s in labelled],
            [scores[s] for s in ids if s not in labels],
            confidence=confidence,
        )
        assert result.ppi is not None
        estimate, half = result.ppi.estimate, result.ppi.width / 2
    if n >= 2:
        rectifier = np.asarray([scores[s] - labels[s] for s in labelled], dtype=np.float64)
        var_r, assumed = float(rectifier.var(ddof=1)), False
    else:
        clipped = np.clip(f_all, 0.0, 1.0)
        var_r, assumed = float(np.mean(clipped * (1.0 - clipped))) if total else 0.0, True
    more = None
    if half is not None:
        needed = _labels_for(half / 2, var_f, var_r, total, z, n + 1)
        more = None if needed is None else needed - n
    to_reach = {w: _labels_for(w, var_f, var_r, total, z, 2) for w in (0.10, 0.05)}
    return LabelPlan(n, total, half, estimate, assumed, more, to_reach)
