"""Kendall's tau-b over grouped observations, and its bootstrap over the groups.

tau-b = (concordant - discordant) / sqrt((n0 - n1) (n0 - n2)), n0 the number of pairs, n1 and n2 the pairs
tied in x and in y (Kendall 1945; scipy.stats.kendalltau's default variant). It is the rank correlation for
data with many ties: a metric such as hit_rate or a 0/1 verdict ties most pairs, and tau-a would shrink
toward 0 just for that.

Why grouped: a validity study pairs (question, run) observations, and the questions are the sample (the runs
are fixed systems). A bootstrap that resamples units would treat the runs of one question as independent and
give intervals too narrow. Here a resample draws questions with replacement and keeps all the units of a
question together. Resampled tau-b needs no re-sorting: with per-group pair sums

    C[q, r] = sum over units a of q, b of r of sign(x_a - x_b) sign(y_a - y_b)
    X[q, r] = sum of |sign(x_a - x_b)|,  Y[q, r] = sum of |sign(y_a - y_b)|

a resample with group counts w has tau-b = w'Cw / sqrt(w'Xw w'Yw) exactly (pairs of a unit with its own copy
are tied on both sides, so they count nowhere, as in tau-b on the expanded data). The matrices are built once;
each resample is then two matrix products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError

__all__ = ["GroupedPairs", "bootstrap_counts", "grouped_pairs", "kendall_tau_b", "tau_b_of_counts"]

# Units per block when the pair signs are built: bounds the memory to ~BLOCK x units signs at a time.
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class GroupedPairs:
    """The per-group pair sums of one (x, y) sample: C (concordance), X and Y (pairs untied in x, in y)."""

    concordance: NDArray[np.float64]
    untied_x: NDArray[np.float64]
    untied_y: NDArray[np.float64]
    units: int


def _checked(
    x: NDArray[np.float64] | list[float], y: NDArray[np.float64] | list[float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise InputError(f"tau-b: x and y must be 1-d of one length, got shapes {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("tau-b: values contain NaN or infinity (leave missing observations out first)")
    return a, b


def kendall_tau_b(x: NDArray[np.float64] | list[float], y: NDArray[np.float64] | list[float]) -> float | None:
    """Kendall's tau-b of x and y; None when it is undefined (fewer than 2 values, or x or y constant: no
    pair is ordered on that side, so there is nothing to correlate)."""
    a, b = _checked(x, y)
    n = a.size
    concordance = untied_x = untied_y = 0.0
    step = max(1, _BLOCK_CELLS // max(1, n))
    for start in range(0, n, step):
        sx = np.sign(a[start : start + step, None] - a[None, :])
        sy = np.sign(b[start : start + step, None] - b[None, :])
        concordance += float(np.sum(sx * sy))
        untied_x += float(np.sum(np.abs(sx)))
        untied_y += float(np.sum(np.abs(sy)))
    if untied_x == 0 or untied_y == 0:
        return None
    return float(min(1.0, max(-1.0, concordance / np.sqrt(untied_x * untied_y))))


def grouped_pairs(
    x: NDArray[np.float64] | list[float],
    y: NDArray[np.float64] | list[float],
    groups: NDArray[np.int64] | list[int],
    group_count: int | None = None,
) -> GroupedPairs:
    """The pair sums between groups (0 .. group_count - 1) of the units (x, y); groups may be empty."""
    a, b = _checked(x, y)
    g = np.asarray(groups, dtype=np.int64)
    if g.shape != a.shape:
        raise InputError(f"tau-b: groups must have one entry per unit, got {g.shape} for {a.shape}")
    count = int(group_count if group_count is not None else (g.max() + 1 if g.size else 0))
    if g.size and (g.min() < 0 or g.max() >= count):
        raise InputError(f"tau-b: group numbers must be in 0..{count - 1}")
    order = np.argsort(g, kind="stable")  # units of a group side by side: sums over groups are slices
    a, b, g = a[order], b[order], g[order]
    n = a.size
    present, starts = np.unique(g, return_index=True)
    concordance = np.zeros((count, count))
    untied_x = np.zeros((count, count))
    untied_y = np.zeros((count, count))
    if n == 0:
        return GroupedPairs(concordance, untied_x, untied_y, 0)
    step = max(1, _BLOCK_CELLS // n)
    for start in range(0, n, step):
        stop = min(n, start + step)
        sx = np.sign(a[start:stop, None] - a[None, :])
        sy = np.sign(b[start:stop, None] - b[None, :])
        rows = g[start:stop]
        for target, cells in ((concordance, sx * sy), (untied_x, np.abs(sx)), (untied_y, np.abs(sy))):
            by_column_group = np.add.reduceat(cells, starts, axis=1)  # block rows x present groups
            summed = np.zeros((count, present.size))
            np.add.at(summed, rows, by_column_group)
            target[:, present] += summed
    return GroupedPairs(concordance, untied_x, untied_y, n)


def tau_b_of_counts(pairs: GroupedPairs, counts: NDArray[np.float64]) -> list[float | None]:
    """tau-b of each resample (one row of group counts each); None where a resample leaves x or y constant."""
    w = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    numerator = np.einsum("bq,bq->b", w @ pairs.concordance, w)
    denominator = np.einsum("bq,bq->b", w @ pairs.untied_x, w) * np.einsum("bq,bq->b", w @ pairs.untied_y, w)
    out: list[float | None] = []
    for num, den in zip(numerator.tolist(), denominator.tolist(), strict=True):
        # Sums of integers in floating point are exact far beyond any study's size; clip rounding of the root.
        out.append(None if den <= 0 else float(min(1.0, max(-1.0, num / np.sqrt(den)))))
    return out


def bootstrap_counts(groups: int, samples: int, seed: int) -> NDArray[np.float64]:
    """`samples` rows of how often each of `groups` groups is drawn when `groups` are drawn with replacement
    (a multinomial with equal shares); every statistic of one study uses the same rows, so differences between
    metrics are paired resample by resample."""
    if groups < 1:
        raise InputError("bootstrap: no questions to resample")
    if samples < 1:
        raise InputError(f"bootstrap: samples must be >= 1, got {samples}", field="bootstrap_samples")
    rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, 0x5441_5542]))
    return rng.multinomial(groups, np.full(groups, 1.0 / groups), size=samples).astype(np.float64)
