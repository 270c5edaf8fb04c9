"""Several judges' scores of the same items made one: by the mean, the majority, weights learned from people's
labels (cross-fitted), or Dawid-Skene where there are no labels.

- Learned weights: a logistic regression of the people's label on the members' scores (an intercept plus one
  weight per member, L2-penalised so a handful of labels cannot blow a weight up; fitted by Newton's method,
  labels in [0, 1] used as soft targets). A judge that says "yes" to everything gets a weight near zero, so it
  no longer drags the panel the way it drags a plain mean.
- Cross-fitting: scored on labelled items, an item's panel score comes from weights fitted on the other folds
  only (`fold_of`), so an agreement measured on those labels is never measured on the labels that set the
  weights.
- Dawid-Skene (Dawid and Skene 1979, the binary "two-coin" form): each judge has its own sensitivity and
  specificity; EM alternates the posterior of every item's true verdict and those rates, starting from the
  majority vote. It needs no labels, only that the judges be better than chance on the whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DawidSkene",
    "LearnedWeights",
    "combine_scores",
    "cross_fitted",
    "dawid_skene",
    "fit_weights",
]

_CLIP = 1e-3
_RIDGE = 1.0


@dataclass(frozen=True)
class LearnedWeights:
    intercept: float
    weights: tuple[float, ...]

    def predict(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        z = self.intercept + scores @ np.asarray(self.weights, dtype=np.float64)
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


def _check(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"scores must be items x judges with at least two judges, got shape {s.shape}")
    if not np.all(np.isfinite(s)) or s.min(initial=0.0) < 0 or s.max(initial=0.0) > 1:
        raise ValueError("scores must be finite and in [0, 1]")
    return s


def fit_weights(scores: NDArray[np.float64], labels: NDArray[np.float64], ridge: float = _RIDGE) -> LearnedWeights:
    """Penalised logistic regression of `labels` (in [0, 1]) on `scores` (items x judges); module docstring."""
    s = _check(scores)
    y = np.asarray(labels, dtype=np.float64)
    if y.shape != (s.shape[0],) or not np.all((y >= 0) & (y <= 1)):
        raise ValueError("labels must be one value in [0, 1] per item")
    if len(y) == 0:
        raise ValueError("no labelled items to fit weights on")
    x = np.column_stack([np.ones(len(y)), s])
    beta = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], ridge)
    penalty[0] = 1e-6  # the intercept is not shrunk
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        gradient = x.T @ (y - p) - penalty * beta
        w = p * (1 - p)
        hessian = (x * w[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta = beta + step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    return LearnedWeights(float(beta[0]), tuple(float(b) for b in beta[1:]))


def cross_fitted(
    scores: NDArray[np.float64], labels: NDArray[np.float64], fold_of: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Each item's learned-panel score from weights fitted on the other folds' labels only."""
    s = _check(scores)
    y = np.asarray(labels, dtype=np.float64)
    folds = np.asarray(fold_of)
    if len(set(folds.tolist())) < 2:
        raise ValueError("cross-fitting needs at least two folds")
    out = np.empty(len(y))
    for fold in sorted(set(folds.tolist())):
        held = folds == fold
        out[held] = fit_weights(s[~held], y[~held]).predict(s[held])
    return out


@dataclass(frozen=True)
class DawidSkene:
    posterior: NDArray[np.float64]  # P(true verdict is yes) per item
    sensitivity: tuple[float, ...]
    specificity: tuple[float, ...]
    prevalence: float
    iterations: int

    def accuracy(self) -> tuple[float, ...]:
        """Each judge's estimated accuracy: prevalence * sensitivity + (1 - prevalence) * specificity."""
        p = self.prevalence
        return tuple(p * se + (1 - p) * sp for se, sp in zip(self.sensitivity, self.specificity, strict=True))


def dawid_skene(votes: NDArray[np.float64], *, max_iterations: int = 200, tol: float = 1e-8) -> DawidSkene:
    """The binary Dawid-Skene model fitted by EM to `votes` (items x judges, 0/1, NaN where a judge gave none)."""
    v = np.asarray(votes, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] < 2 or v.shape[0] == 0:
        raise ValueError(f"votes must be items x judges (at least two judges, one item), got shape {v.shape}")
    seen = ~np.isnan(v)
    if not np.all(np.isin(v[seen], (0.0, 1.0))):
        raise ValueError("Dawid-Skene reads verdicts: votes must be 0 or 1 (NaN for none)")
    if not np.all(seen.any(axis=1)):
        raise ValueError("every item needs at least one vote")
    filled = np.where(seen, v, 0.0)
    t = filled.sum(axis=1) / seen.sum(axis=1)  # the share of yes votes as the start
    t = np.clip(t, _CLIP, 1 - _CLIP)
    iterations = 0
    sens = spec = np.full(v.shape[1], 0.5)
    prevalence = 0.5
    while iterations < max_iterations:
        iterations += 1
        prevalence = float(np.clip(t.mean(), _CLIP, 1 - _CLIP))
        pos = (t[:, None] * seen).sum(axis=0)
        neg = ((1 - t)[:, None] * seen).sum(axis=0)
        sens = np.clip((t[:, None] * filled).sum(axis=0) / np.maximum(pos, 1e-12), _CLIP, 1 - _CLIP)
        spec = np.clip(((1 - t)[:, None] * (1 - filled) * seen).sum(axis=0) / np.maximum(neg, 1e-12),
                       _CLIP, 1 - _CLIP)  # fmt: skip
        yes = np.log(sens) * filled + np.log(1 - sens) * (1 - filled)
        no = np.log(1 - spec) * filled + np.log(spec) * (1 - filled)
        logit = math.log(prevalence / (1 - prevalence)) + np.where(seen, yes - no, 0.0).sum(axis=1)
        new = 1.0 / (1.0 + np.exp(-np.clip(logit, -500, 500)))
        change = float(np.max(np.abs(new - t)))
        t = new
        if change < tol:
            break
    return DawidSkene(
        posterior=t,
        sensitivity=tuple(float(x) for x in sens),
        specificity=tuple(float(x) for x in spec),
        prevalence=prevalence,
        iterations=iterations,
    )


def combine_scores(
    method: str,
    scores: NDArray[np.float64],
    *,
    threshold: float = 0.5,
    labels: NDArray[np.float64] | None = None,
    fold_of: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """The panel's score of every item by `method` ('mean', 'majority', 'learned' (needs `labels` and
    `fold_of`: cross-fitted), 'dawid_skene' (the posterior of a yes))."""
    s = _check(scores)
    if method == "mean":
        return np.asarray(s.mean(axis=1), dtype=np.float64)
    if method == "majority":
        yes = (s >= threshold).sum(axis=1)
        no = s.shape[1] - yes
        return np.where(yes > no, 1.0, np.where(no > yes, 0.0, 0.5))
    if method == "learned":
        if labels is None or fold_of is None:
            raise ValueError("learned weights need labels and folds")
        return cross_fitted(s, labels, fold_of)
    if method == "dawid_skene":
        return dawid_skene((s >= threshold).astype(np.float64)).posterior
    raise ValueError(f"unknown combination {method!r}; use mean, majority, learned or dawid_skene")
