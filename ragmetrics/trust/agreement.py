"""How well a judge agrees with people on the samples both scored: one metric at a time, each figure with a CI.

Scores are in [0, 1] on both sides (human grades divided by their scale when loaded). Agreement on decisions
(accuracy, balanced accuracy, Cohen's kappa) compares both sides cut at `threshold` (0.5: a score of at least
one half counts as positive); agreement on order (Spearman, Kendall's tau-b) uses the scores themselves.
The calibration table bins the judge's scores and shows the people's mean in each bin: a calibrated judge
has them equal. Bias is mean(judge - human) with a t interval; every other CI is a percentile bootstrap over
the labelled samples (`resamples`, fixed `seed`), because none of these statistics has a simple exact
interval that holds for small n.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

__all__ = [
    "Agreement",
    "CalibrationRow",
    "Estimate",
    "LabelKind",
    "agreement",
    "cohen_kappa",
    "decision_accuracy",
    "decision_balanced_accuracy",
    "decision_kappa",
    "rank_correlation",
    "roc_auc",
    "roc_auc_ci",
]

LabelKind = str  # "binary" | "graded" | "score"
CALIBRATION_BINS = 5


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class CalibrationRow:
    low: float
    high: float
    n: int
    judge_mean: float
    human_mean: float


@dataclass(frozen=True)
class Agreement:
    n: int
    kind: LabelKind
    threshold: float
    accuracy: Estimate | None
    balanced_accuracy: Estimate | None
    kappa: Estimate | None
    spearman: Estimate | None
    kendall: Estimate | None
    bias: Estimate
    calibration: list[CalibrationRow] = field(default_factory=list)


def decision_accuracy(j: NDArray[np.bool_], h: NDArray[np.bool_]) -> float:
    """Share of samples where the judge's decision `j` equals the people's `h`."""
    return float(np.mean(j == h))


def decision_balanced_accuracy(j: NDArray[np.bool_], h: NDArray[np.bool_]) -> float:
    """Mean of the judge's recall on the people's yes and on their no; NaN with one class."""
    pos, neg = h, ~h
    if not pos.any() or not neg.any():
        return math.nan
    return float((np.mean(j[pos]) + np.mean(~j[neg])) / 2.0)


def decision_kappa(j: NDArray[np.bool_], h: NDArray[np.bool_]) -> float:
    """Cohen's kappa of two yes/no raters; NaN when chance agreement is total."""
    observed = float(np.mean(j == h))
    pj, ph = float(np.mean(j)), float(np.mean(h))
    expected = pj * ph + (1 - pj) * (1 - ph)
    return math.nan if expected >= 1.0 else (observed - expected) / (1.0 - expected)


def rank_correlation(kind: str) -> Callable[[NDArray[np.float64], NDArray[np.float64]], float]:
    """Spearman's rho ('spearman') or Kendall's tau-b ('kendall'); NaN when either side is constant."""

    def spearman(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
        if np.ptp(a) == 0 or np.ptp(b) == 0:
            return math.nan
        return float(stats.spearmanr(a, b).statistic)

    def kendall(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
        if np.ptp(a) == 0 or np.ptp(b) == 0:
            return math.nan
        return float(stats.kendalltau(a, b).statistic)

    return spearman if kind == "spearman" else kendall


def _bootstrap(
    stat: Callable[[NDArray[np.intp]], float], n: int, resamples: int, rng: np.random.Generator, alpha: float
) -> Estimate | None:
    value = stat(np.arange(n))
    if not math.isfinite(value):
        return None
    draws = np.array([stat(rng.integers(0, n, size=n)) for _ in range(resamples)])
    draws = draws[np.isfinite(draws)]
    if draws.size < resamples // 2:
        return Estimate(value, math.nan, math.nan)
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return Estimate(value, float(low), float(high))


def roc_auc(scores: ArrayLike, labels: ArrayLike) -> float:
    """ROC AUC of `scores` against binary `labels` (1 positive): the chance that a random positive scores
    above a random negative, ties counted as one half (Mann-Whitney U over mid-ranks); NaN without both
    classes."""
    s = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(labels) == 1
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if not n_pos or not n_neg:
        return math.nan
    rank_sum = float(stats.rankdata(s)[positive].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def roc_auc_ci(
    scores: ArrayLike, labels: ArrayLike, *, resamples: int = 1000, seed: int = 0, alpha: float = 0.05
) -> Estimate | None:
    """`roc_auc` with a percentile bootstrap interval over the items (None when it is undefined)."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels)
    return _bootstrap(
        lambda idx: roc_auc(s[idx], y[idx]), len(s), resamples, np.random.default_rng(seed), alpha
    )


def label_kind(raw: ArrayLike) -> LabelKind:
    """'binary' (every label 0 or 1), 'graded' (whole numbers above 1 occur), else 'score'."""
    values = np.asarray(raw, dtype=np.float64)
    if np.isin(values, (0.0, 1.0)).all():
        return "binary"
    if np.all(values == np.round(values)) and values.max(initial=0) > 1:
        return "graded"
    return "score"


def agreement(
    judge: ArrayLike,
    human: ArrayLike,
    *,
    kind: LabelKind = "score",
    threshold: float = 0.5,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Agreement figures of paired judge scores and human labels (both in [0, 1]); see the module doc."""
    j = np.asarray(judge, dtype=np.float64).ravel()
    h = np.asarray(human, dtype=np.float64).ravel()
    if j.shape != h.shape:
        raise ValueError(f"{j.size} judge scores for {h.size} labels: they must pair up")
    if j.size == 0:
        raise ValueError("no labelled sample has a judge score")
    if not (np.isfinite(j).all() and np.isfinite(h).all()):
        raise ValueError("scores and labels must be finite")
    n = j.size
    alpha = 1.0 - confidence
    rng = np.random.default_rng(seed)
    jb, hb = j >= threshold, h >= threshold

    def on(
        fn: Callable[[NDArray[np.bool_], NDArray[np.bool_]], float],
    ) -> Callable[[NDArray[np.intp]], float]:
        return lambda idx: fn(jb[idx], hb[idx])

    def ranked(name: str) -> Callable[[NDArray[np.intp]], float]:
        fn = rank_correlation(name)
        return lambda idx: fn(j[idx], h[idx])

    diff = j - h
    if n > 1:
        half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * float(diff.std(ddof=1)) / math.sqrt(n)
    else:
        half = math.nan
    bias = Estimate(float(diff.mean()), float(diff.mean()) - half, float(diff.mean()) + half)
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    which = np.clip(np.digitize(j, edges[1:-1], right=False), 0, CALIBRATION_BINS - 1)
    calibration = [
        CalibrationRow(
            low=float(edges[b]),
            high=float(edges[b + 1]),
            n=int((which == b).sum()),
            judge_mean=float(j[which == b].mean()),
            human_mean=float(h[which == b].mean()),
        )
        for b in range(CALIBRATION_BINS)
        if (which == b).any()
    ]
    return Agreement(
        n=n,
        kind=kind,
        threshold=threshold,
        accuracy=_bootstrap(on(decision_accuracy), n, resamples, rng, alpha),
        balanced_accuracy=_bootstrap(on(decision_balanced_accuracy), n, resamples, rng, alpha),
        kappa=_bootstrap(on(decision_kappa), n, resamples, rng, alpha) if kind == "binary" else None,
        spearman=_bootstrap(ranked("spearman"), n, resamples, rng, alpha),
        kendall=_bootstrap(ranked("kendall"), n, resamples, rng, alpha) if kind != "binary" else None,
        bias=bias,
        calibration=calibration,
    )


def cohen_kappa(
    first: Sequence[Hashable],
    second: Sequence[Hashable],
    categories: Sequence[Hashable],
    *,
    weights: str = "none",
) -> float:
    """Cohen's kappa of two raters over `categories` (in scale order): 1 - sum(w * observed) / sum(w * expected).

    weights 'none': w = 1 off the diagonal (plain kappa, for yes/no and categories); 'quadratic': w = (i - j)^2
    (ordinal levels: rating 'neutral' for 'polite' costs less than 'rude'). NaN-free: when the expected
    disagreement is 0 (both raters gave one and the same category throughout) kappa is 1 if they agree.
    """
    if len(first) != len(second) or not first:
        raise ValueError("kappa needs two equally long, non-empty lists of ratings")
    index = {c: i for i, c in enumerate(categories)}
    unknown = [r for r in (*first, *second) if r not in index]
    if unknown:
        raise ValueError(f"rating {unknown[0]!r} is not one of {list(categories)}")
    k = len(categories)
    observed = np.zeros((k, k))
    for a, b in zip(first, second, strict=True):
        observed[index[a], index[b]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    if weights == "none":
        w = (i != j).astype(float)
    elif weights == "quadratic":
        w = (i - j).astype(float) ** 2
    else:
        raise ValueError(f"weights must be 'none' or 'quadratic', not {weights!r}")
    disagreement_expected = float((w * expected).sum())
    disagreement_observed = float((w * observed).sum())
    if disagreement_expected == 0:
        return 1.0 if disagreement_observed == 0 else 0.0
    return 1.0 - disagreement_observed / disagreement_expected
