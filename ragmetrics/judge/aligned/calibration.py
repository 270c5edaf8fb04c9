"""Monotone maps from a judge's score to the score people would give, fitted on labels (`ragmetrics align`).

Two shapes, both monotone non-decreasing on [0, 1], so they never change which of two samples the judge
ranks higher (ROC AUC and rank correlations are untouched); what they change is where the verdict falls:

- `cut` (binary labels): the score at and above which people say yes is moved to 0.5, the cut every
  agreement figure and gate uses: knots (0, 0), (t, 0.5), (1, 1), linear in between;
- `isotonic` (graded labels): the pool-adjacent-violators fit of the labels on the scores, interpolated
  linearly between the fitted blocks' mean scores and constant beyond them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Calibration", "best_cut", "fit_cut", "fit_isotonic"]

CUT_EDGE = 1e-6
"""A cut is kept this far inside (0, 1), so the map stays a function with 0 -> 0 and 1 -> 1."""


class Calibration(BaseModel):
    """A piecewise-linear monotone map through `knots` (x ascending, y non-decreasing), flat beyond them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["cut", "isotonic"]
    knots_x: list[float] = Field(min_length=1)
    knots_y: list[float] = Field(min_length=1)
    cut: float | None = Field(default=None, description="cut: the judge score people's yes starts from")

    @model_validator(mode="after")
    def _monotone(self) -> Calibration:
        x, y = np.asarray(self.knots_x), np.asarray(self.knots_y)
        if x.shape != y.shape:
            raise ValueError("knots_x and knots_y differ in length")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError("knots must be finite")
        if (np.diff(x) <= 0).any() or (np.diff(y) < 0).any():
            raise ValueError("knots must ascend in x and never descend in y")
        if y.min() < 0 or y.max() > 1:
            raise ValueError("calibrated scores must lie in [0, 1]")
        return self

    def apply(self, scores: ArrayLike) -> NDArray[np.float64]:
        s = np.asarray(scores, dtype=np.float64)
        out: NDArray[np.float64] = np.interp(s, self.knots_x, self.knots_y)
        return out

    def describe(self) -> str:
        if self.kind == "cut":
            return f"a score of {self.cut:.3f} or more now counts as yes (was 0.5)"
        return f"isotonic map through {len(self.knots_x)} points"


def best_cut(scores: ArrayLike, labels: ArrayLike, threshold: float = 0.5) -> float:
    """The cut on `scores` with the best balanced accuracy against `labels` >= `threshold`; among equally
    good cuts, the middle of the widest run of them (a cut between two observed scores is their midpoint)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64) >= threshold
    values = np.unique(s)
    candidates = np.concatenate(([values[0] - 1e-9], (values[:-1] + values[1:]) / 2, [values[-1] + 1e-9]))
    pos, neg = max(1, int(y.sum())), max(1, int((~y).sum()))
    scored = np.array([((s >= c) & y).sum() / pos + ((s < c) & ~y).sum() / neg for c in candidates]) / 2
    best = scored.max()
    runs: list[tuple[int, int]] = []
    start = None
    for i, good in enumerate(np.isclose(scored, best)):
        if good and start is None:
            start = i
        if not good and start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(scored) - 1))
    a, b = max(runs, key=lambda r: (r[1] - r[0], -r[0]))
    return float((candidates[a] + candidates[b]) / 2)


def fit_cut(scores: ArrayLike, labels: ArrayLike, threshold: float = 0.5) -> Calibration:
    """The `cut` calibration (module doc) of binary labels."""
    t = float(np.clip(best_cut(scores, labels, threshold), CUT_EDGE, 1 - CUT_EDGE))
    return Calibration(kind="cut", knots_x=[0.0, t, 1.0], knots_y=[0.0, 0.5, 1.0], cut=t)


def _pav(y: Sequence[float], w: Sequence[float]) -> tuple[list[float], list[float], list[list[int]]]:
    """Pool adjacent violators: block means, block weights and each block's members (inputs sorted by x)."""
    means: list[float] = []
    weights: list[float] = []
    members: list[list[int]] = []
    for i, (value, weight) in enumerate(zip(y, w, strict=True)):
        means.append(value)
        weights.append(weight)
        members.append([i])
        while len(means) > 1 and means[-2] > means[-1]:
            m2, w2, g2 = means.pop(), weights.pop(), members.pop()
            m1, w1 = means[-1], weights[-1]
            means[-1] = (m1 * w1 + m2 * w2) / (w1 + w2)
            weights[-1] = w1 + w2
            members[-1].extend(g2)
    return means, weights, members


def fit_isotonic(scores: ArrayLike, labels: ArrayLike) -> Calibration:
    """The `isotonic` calibration (module doc) of labels in [0, 1]."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    order = np.argsort(s, kind="stable")
    xs, ys = s[order], y[order]
    # equal scores are one point: their labels' mean, weighted by their count
    unique, first, counts = np.unique(xs, return_index=True, return_counts=True)
    sums = np.add.reduceat(ys, first)
    means, _, members = _pav((sums / counts).tolist(), counts.astype(float).tolist())
    knot_x = [float(np.average(unique[g], weights=counts[g])) for g in members]
    knot_y = [float(np.clip(m, 0.0, 1.0)) for m in means]
    return Calibration(kind="isotonic", knots_x=knot_x, knots_y=knot_y)
