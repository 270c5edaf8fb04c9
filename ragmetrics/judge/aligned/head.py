"""The local judge's evidence head: a logistic regression over `evidence.evidence_features`, refit on a
team's labels and pulled toward the judge as shipped.

The shipped judge is the model `sigmoid(a * judge_logit + b)`: its own score, recalibrated. The head adds
the rest of the evidence with weights shrunk toward 0 by an L2 penalty `penalty` (the slope and intercept of
`judge_logit` are not shrunk: that part is calibration, which labels can always afford). With few labels or
evidence that does not help, the penalty chosen by cross-validation is large and the head ranks samples as
the shipped judge does; with many labels that show a signal, it moves. Labels may be 0/1 or in [0, 1]
(graded labels divided by their scale): the loss is the cross-entropy with the label as the target.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy.optimize import minimize

from ragmetrics.judge.aligned.evidence import JUDGE_LOGIT

__all__ = ["PENALTIES", "EvidenceHead", "fit_head", "head_matrix"]

PENALTIES: tuple[float, ...] = (1000.0, 100.0, 30.0, 10.0, 3.0, 1.0)
"""The L2 penalties cross-validation chooses from, strongest (the shipped judge's ranking) first."""
_FREE_RIDGE = 1e-3  # keeps the unpenalised slope and intercept finite when the labels separate perfectly


class EvidenceHead(BaseModel):
    """A fitted head: features in order, the value filled in for a feature a sample lacks, the training
    mean and scale each feature is standardised by, and the coefficients over the standardised features."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    features: list[str] = Field(min_length=1)
    fill: list[float]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    penalty: float = Field(gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> EvidenceHead:
        n = len(self.features)
        if not len(self.fill) == len(self.mean) == len(self.scale) == len(self.coef) == n:
            raise ValueError("features, fill, mean, scale and coef differ in length")
        if self.features[0] != JUDGE_LOGIT:
            raise ValueError(f"the first feature must be {JUDGE_LOGIT!r}")
        values = [*self.fill, *self.mean, *self.scale, *self.coef, self.intercept]
        if not all(math.isfinite(v) for v in values) or min(self.scale) <= 0:
            raise ValueError("a head's numbers must be finite, with positive scales")
        return self

    def probability(self, rows: Sequence[Mapping[str, float]]) -> NDArray[np.float64]:
        x = head_matrix(rows, self.features, np.asarray(self.fill))
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        logits = np.clip(z @ np.asarray(self.coef) + self.intercept, -30.0, 30.0)
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-logits))
        return out

    def weights(self) -> dict[str, float]:
        """Each feature's weight per standard deviation (for the report)."""
        return {f: round(c, 4) for f, c in zip(self.features, self.coef, strict=True)}


def head_matrix(
    rows: Sequence[Mapping[str, float]], features: Sequence[str], fill: NDArray[np.float64]
) -> NDArray[np.float64]:
    x = np.tile(fill, (len(rows), 1)).astype(np.float64)
    for i, row in enumerate(rows):
        for j, name in enumerate(features):
            value = row.get(name)
            if value is not None:
                x[i, j] = value
    return x


def _fit(z: NDArray[np.float64], y: NDArray[np.float64], penalty: float) -> tuple[NDArray[np.float64], float]:
    _, d = z.shape
    shrink = np.full(d, penalty)
    shrink[0] = _FREE_RIDGE

    def objective(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        w, b = theta[:d], theta[d]
        t = z @ w + b
        # log(1 + e^t) - y t, written to stay finite for large |t|
        loss = float(np.sum(np.logaddexp(0.0, t) - y * t)) + 0.5 * float(np.sum(shrink * w * w))
        p = 1.0 / (1.0 + np.exp(-np.clip(t, -30, 30)))
        grad_w = z.T @ (p - y) + shrink * w
        grad_b = float(np.sum(p - y)) + _FREE_RIDGE * b
        return float(loss + 0.5 * _FREE_RIDGE * float(b) ** 2), np.append(grad_w, grad_b)

    start = np.zeros(d + 1)
    start[0] = 1.0
    result = minimize(objective, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    theta = np.asarray(result.x, dtype=np.float64)
    return theta[:d], float(theta[d])


def _log_loss(z: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64], b: float) -> float:
    t = z @ w + b
    return float(np.mean(np.logaddexp(0.0, t) - y * t))


def fit_head(
    rows: Sequence[Mapping[str, float]],
    labels: Sequence[float],
    *,
    penalty: float | None = None,
    inner_folds: int = 3,
    seed: int = 0,
) -> EvidenceHead:
    """Fit a head on judged samples' features and their labels in [0, 1]; `penalty` None chooses it among
    `PENALTIES` by `inner_folds`-fold cross-validated log loss on these rows alone (nested in any outer
    evaluation, which never shows this function its held-out labels)."""
    if len(rows) != len(labels) or not rows:
        raise ValueError("a head needs as many labels as feature rows, and at least one")
    names = sorted({k for row in rows for k in row} - {JUDGE_LOGIT})
    features = [JUDGE_LOGIT, *names]
    y = np.asarray(labels, dtype=np.float64)
    raw = head_matrix(rows, features, np.full(len(features), np.nan))
    fill = np.nanmean(np.where(np.isnan(raw), np.nan, raw), axis=0)
    fill = np.where(np.isfinite(fill), fill, 0.0)
    x = np.where(np.isnan(raw), fill, raw)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = (x - mean) / scale
    if penalty is None:
        penalty = _choose_penalty(z, y, inner_folds, seed)
    w, b = _fit(z, y, penalty)
    return EvidenceHead(
        features=features,
        fill=fill.tolist(),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=w.tolist(),
        intercept=b,
        penalty=penalty,
    )


def _choose_penalty(z: NDArray[np.float64], y: NDArray[np.float64], folds: int, seed: int) -> float:
    n = len(y)
    if n < 2 * folds:
        return PENALTIES[0]
    rng = np.random.default_rng(seed)
    positive = y >= 0.5
    assignment = np.empty(n, dtype=np.int64)
    for group in (np.flatnonzero(positive), np.flatnonzero(~positive)):
        shuffled = rng.permutation(group)
        assignment[shuffled] = np.arange(len(shuffled)) % folds
    losses = []
    for penalty in PENALTIES:
        total = 0.0
        for f in range(folds):
            train, test = assignment != f, assignment == f
            w, b = _fit(z[train], y[train], penalty)
            total += _log_loss(z[test], y[test], w, b) * int(test.sum())
        losses.append(total / n)
    # the strongest penalty within a hair of the best: a tie goes to the shipped judge's ranking
    best = min(losses)
    return next(p for p, loss in zip(PENALTIES, losses, strict=True) if loss <= best + 1e-3)
