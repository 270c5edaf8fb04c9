"""Which judge to pay for: every candidate's agreement with people, and the cheapest one not worse than the best.

Agreement per candidate, on the labelled units (a unit is a (sample, metric) with a label): accuracy of the
decision (both sides cut at `threshold`), Cohen's kappa of those decisions when the labels are yes/no, and the
ROC AUC of the candidate's scores against the people's yes/no (graded labels cut at `threshold`). Intervals are percentile bootstraps that
resample samples (all of a sample's metrics together), with one set of draws shared by every candidate so
their differences are paired.

The choice, a non-inferiority test on per-unit agreement (correct / incorrect):

1. the best candidate is the one with the highest accuracy (the cheaper on a tie);
2. a candidate is *not worse than the best* when the data rule out that it loses `margin` or more: the paired
   bootstrap's p-value of H0 "accuracy(best) - accuracy(candidate) >= margin" (the share of draws with a gap of
   at least `margin`; below alpha exactly when the one-sided (1 - alpha) upper bound is below `margin`),
   Holm-adjusted over the candidates compared with the best, is below alpha. The choice is the cheapest
   candidate passing, so every candidate's claim is one the choice may rest on: tested one at a time at alpha,
   with several near-misses one of them would pass far more often than alpha. "Not significantly different"
   would not do: with few labels every judge would pass;
3. and it must not be significantly worse than the best at all: McNemar's exact test (two-sided, no margin,
   level alpha, Holm-adjusted over the candidates compared with the best, since the best was picked among them)
   on the units where the two disagree must not find it worse;
4. the choice is the cheapest candidate meeting 2 and 3 (the best itself always does).

So the choice is never significantly worse than the best, and the data rule out that it loses `margin` or more.
With too few labels to rule that out, the choice falls back on a dearer, better-shown candidate: never on one
that could be worse by the margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ragmetrics.comparison.corrections import holm
from ragmetrics.comparison.proportions import exact_mcnemar
from ragmetrics.trust.agreement import Estimate, decision_kappa, roc_auc

__all__ = ["CandidateRow", "Choice", "JudgeEvidence", "choose_judge"]


@dataclass(frozen=True)
class JudgeEvidence:
    """A candidate's scores of the labelled units (same order as the labels) and what judging them cost."""

    name: str
    scores: NDArray[np.float64]
    cost_usd: float
    latency_s: float | None = None
    tuned_on_labels: bool = False  # its scores are cross-fitted on these labels (a learned panel)


@dataclass(frozen=True)
class CandidateRow:
    name: str
    n: int
    accuracy: Estimate
    kappa: Estimate | None
    auc: Estimate | None
    cost_usd: float
    latency_s: float | None
    gap_to_best: float  # accuracy(best) - accuracy(this)
    gap_upper: float  # its one-sided upper bound (paired bootstrap)
    not_worse: bool  # non_inferiority_p_holm < alpha (the best itself: True)
    mcnemar_p: float  # two-sided exact McNemar against the best (1.0 for the best itself)
    mcnemar_p_holm: float  # the same, Holm-adjusted over every candidate's comparison with the best
    significantly_worse: bool  # mcnemar_p_holm < alpha and gap_to_best > 0
    non_inferiority_p: float = 0.0  # bootstrap p of "worse than the best by margin or more" (0 for the best)
    non_inferiority_p_holm: float = 0.0  # the same, Holm-adjusted over every candidate's comparison with the best


@dataclass(frozen=True)
class Choice:
    rows: list[CandidateRow]
    best: str
    chosen: str
    margin: float
    alpha: float
    n_units: int
    n_samples: int

    def row(self, name: str) -> CandidateRow:
        return next(r for r in self.rows if r.name == name)


def _draws(clusters: NDArray[np.int64], resamples: int, seed: int) -> NDArray[np.float64]:
    """Bootstrap weights per unit (resamples x units): samples drawn with replacement, a unit weighs what its
    sample was drawn."""
    ids, inverse = np.unique(clusters, return_inverse=True)
    k = len(ids)
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, k, size=(resamples, k)) + (np.arange(resamples) * k)[:, None]
    counts = np.bincount(drawn.ravel(), minlength=resamples * k).reshape(resamples, k).astype(np.float64)
    return counts[:, inverse]


def _interval(value: float, draws: NDArray[np.float64], alpha: float) -> Estimate:
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return Estimate(value, math.nan, math.nan)
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return Estimate(value, float(low), float(high))


def _kappa_from(observed: NDArray[np.float64], pj: NDArray[np.float64], ph: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cohen's kappa of yes/no decisions from the share agreeing and each side's share of yes (per draw)."""
    expected = pj * ph + (1 - pj) * (1 - ph)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(expected >= 1, np.where(observed >= 1, 1.0, 0.0), (observed - expected) / (1 - expected))
    return np.asarray(kappa, dtype=np.float64)


def _kappa_draws(j: NDArray[np.bool_], h: NDArray[np.bool_], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cohen's kappa of yes/no decisions under every bootstrap draw's unit weights at once."""
    shares = weights @ np.column_stack([j == h, j, h]).astype(np.float64) / weights.sum(axis=1)[:, None]
    return _kappa_from(shares[:, 0], shares[:, 1], shares[:, 2])


def _auc_draws(scores: NDArray[np.float64], positive: NDArray[np.bool_], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """ROC AUC under every draw's unit weights: at once over the score levels when they are few (verdicts),
    draw by draw otherwise."""
    levels, level_of = np.unique(scores, return_inverse=True)
    if levels.size > 64:
        return np.array([_weighted_auc(scores, positive, w) for w in weights])
    onehot = np.zeros((scores.size, levels.size))
    onehot[np.arange(scores.size), level_of] = 1.0
    pos_at = weights @ (onehot * positive[:, None])
    neg_at = weights @ (onehot * ~positive[:, None])
    neg_below = np.cumsum(neg_at, axis=1) - neg_at
    wp, wn = pos_at.sum(axis=1), neg_at.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (pos_at * (neg_below + 0.5 * neg_at)).sum(axis=1) / (wp * wn)
    return np.where((wp > 0) & (wn > 0), auc, np.nan)


def choose_judge(
    candidates: Sequence[JudgeEvidence],
    labels: NDArray[np.float64],
    clusters: NDArray[np.int64],
    *,
    threshold: float = 0.5,
    margin: float = 0.05,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> Choice:
    """Agreement of every candidate with `labels` and the choice (module docstring)."""
    y = np.asarray(labels, dtype=np.float64)
    if not candidates:
        raise ValueError("no candidate judges")
    if y.size == 0:
        raise ValueError("no labelled units to score the candidates on")
    if not 0 < margin < 1 or not 0 < alpha < 1:
        raise ValueError("margin and alpha must be in (0, 1)")
    for c in candidates:
        if c.scores.shape != y.shape or not np.all(np.isfinite(c.scores)):
            raise ValueError(f"candidate {c.name!r}: one finite score per labelled unit is needed")
        if not (c.cost_usd >= 0 and math.isfinite(c.cost_usd)):
            raise ValueError(f"candidate {c.name!r}: cost must be finite and >= 0")
    human = y >= threshold
    binary = bool(np.all(np.isin(y, (0.0, 1.0))))
    weights = _draws(np.asarray(clusters), resamples, seed)
    correct = {c.name: ((c.scores >= threshold) == human).astype(np.float64) for c in candidates}
    accuracy = {name: float(v.mean()) for name, v in correct.items()}
    # One product gives every draw's share correct and share of yes for every candidate, and the people's.
    k = len(candidates)
    columns = [correct[c.name] for c in candidates] + [(c.scores >= threshold) for c in candidates] + [human]
    shares = weights @ np.column_stack(columns).astype(np.float64) / weights.sum(axis=1)[:, None]
    draws_acc = {c.name: shares[:, i] for i, c in enumerate(candidates)}
    yes_share = {c.name: shares[:, k + i] for i, c in enumerate(candidates)}
    cost = {c.name: c.cost_usd for c in candidates}
    best = min(candidates, key=lambda c: (-accuracy[c.name], c.cost_usd)).name
    rows: list[CandidateRow] = []
    for c in candidates:
        judged = c.scores >= threshold
        gap = accuracy[best] - accuracy[c.name]
        gap_draws = draws_acc[best] - draws_acc[c.name]
        upper = float(np.quantile(gap_draws, 1 - alpha)) if c.name != best else 0.0
        ni_p = float(np.mean(gap_draws >= margin)) if c.name != best else 0.0
        b = int(((correct[best] == 1) & (correct[c.name] == 0)).sum())
        d = int(((correct[best] == 0) & (correct[c.name] == 1)).sum())
        p = exact_mcnemar(b, d)
        kappa = None
        auc = None
        if binary:
            kappa_draws = _kappa_from(draws_acc[c.name], yes_share[c.name], shares[:, 2 * k])
            kappa = _interval(decision_kappa(judged, human), kappa_draws, alpha)
        if human.any() and (~human).any():  # the candidate's scores against the people's yes / no
            auc = _interval(roc_auc(c.scores, human.astype(int)), _auc_draws(c.scores, human, weights), alpha)
        rows.append(
            CandidateRow(
                name=c.name,
                n=int(y.size),
                accuracy=_interval(accuracy[c.name], draws_acc[c.name], alpha),
                kappa=kappa,
                auc=auc,
                cost_usd=c.cost_usd,
                latency_s=c.latency_s,
                gap_to_best=gap,
                gap_upper=upper,
                not_worse=c.name == best,
                mcnemar_p=p,
                mcnemar_p_holm=p,
                significantly_worse=False,
                non_inferiority_p=ni_p,
            )
        )
    rows = _holm(rows, best, alpha)
    ni_holm = _holm_by_name({r.name: r.non_inferiority_p for r in rows if r.name != best})
    rows = [replace(r, non_inferiority_p_holm=ni_holm.get(r.name, 0.0),
                    not_worse=r.name == best or ni_holm[r.name] < alpha) for r in rows]  # fmt: skip
    # Shown not worse by the margin, and not significantly worse at all (so the choice never is).
    eligible = [r for r in rows if r.not_worse and not r.significantly_worse]
    chosen = min(eligible, key=lambda r: (cost[r.name], -accuracy[r.name])).name
    return Choice(rows, best, chosen, margin, alpha, int(y.size), int(np.unique(clusters).size))


def _holm_by_name(p_values: dict[str, float]) -> dict[str, float]:
    """Holm-adjusted p-values (`comparison.corrections.holm`) keyed by candidate name."""
    names = list(p_values)
    return dict(zip(names, holm([p_values[n] for n in names]), strict=True))


def _holm(rows: list[CandidateRow], best: str, alpha: float) -> list[CandidateRow]:
    """McNemar p-values against the best, Holm-adjusted over the candidates compared with it: the best is picked
    among them, so one comparison alone would call an equal candidate worse too often."""
    adjusted = _holm_by_name({r.name: r.mcnemar_p for r in rows if r.name != best})
    return [replace(r, mcnemar_p_holm=adjusted.get(r.name, 1.0),
                    significantly_worse=adjusted.get(r.name, 1.0) < alpha and r.gap_to_best > 0) for r in rows]  # fmt: skip


def _weighted_auc(scores: NDArray[np.float64], positive: NDArray[np.bool_], w: NDArray[np.float64]) -> float:
    """ROC AUC with units weighted by how often the bootstrap drew them (ties count one half)."""
    keep = w > 0
    s, pos, ww = scores[keep], positive[keep], w[keep]
    wp, wn = ww[pos].sum(), ww[~pos].sum()
    if wp == 0 or wn == 0:
        return math.nan
    order = np.argsort(s, kind="mergesort")
    s, pos, ww = s[order], pos[order], ww[order]
    # For each distinct score: negatives' weight below it, and half the negatives' weight at it.
    _, start = np.unique(s, return_index=True)
    neg_w = np.where(~pos, ww, 0.0)
    pos_w = np.where(pos, ww, 0.0)
    neg_at = np.add.reduceat(neg_w, start)
    pos_at = np.add.reduceat(pos_w, start)
    neg_below = np.concatenate([[0.0], np.cumsum(neg_at)[:-1]])
    return float((pos_at * (neg_below + 0.5 * neg_at)).sum() / (wp * wn))
