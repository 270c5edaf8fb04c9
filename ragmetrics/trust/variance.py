"""How much of a judge metric is the judge's own noise: the same units judged k times with distinct seeds.

Given scores[i, r] (sample i, repeat r):

- **per-sample spread**: the standard deviation over a sample's repeats; the report gives its mean and
  the HTML report each sample's;
- **flip rate**: the share of verdicts (one per chunk, sentence, statement) that are not the same in every
  repeat; for scores without verdicts, the share of samples whose score differs between repeats;
- **ICC(1)**, one-way random effects (Shrout & Fleiss 1979): (MSB - MSW) / (MSB + (k - 1) MSW), the share of
  the score variance that is between samples rather than between repeats; 1 is a noiseless judge;
- **two CIs of the mean** of the per-sample means: over samples only (what a single run's CI would say), and
  with judge noise, by a two-level bootstrap: resample samples with replacement, then each chosen sample's
  repeats with replacement, and average. The second is wider by the part of the uncertainty that a rerun of
  the same judge on the same samples would show. Both are percentile intervals with a fixed seed.

The local judge is deterministic: its repeats agree exactly, so its spread, flip rate and the widening are 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["JudgeNoise", "judge_noise", "noise_floor", "verdict_flip_rate"]


@dataclass(frozen=True)
class JudgeNoise:
    samples: int
    repeats: int
    mean: float
    mean_spread: float
    flip_rate: float
    icc: float | None
    ci_samples: tuple[float, float]
    ci_with_noise: tuple[float, float]
    spread: NDArray[np.float64]  # per sample, in input order


def verdict_flip_rate(verdicts: Sequence[Sequence[Sequence[bool]]]) -> float:
    """Share of verdict positions that differ between repeats: `verdicts[i][r]` is sample i's verdict list in
    repeat r (lists of unequal length count every position as flipped)."""
    positions = flipped = 0
    for per_repeat in verdicts:
        lengths = {len(v) for v in per_repeat}
        if len(lengths) != 1:
            size = max(lengths)
            positions += size
            flipped += size
            continue
        for column in zip(*per_repeat, strict=True):
            positions += 1
            flipped += len(set(column)) > 1
    return flipped / positions if positions else 0.0


def _icc1(scores: NDArray[np.float64]) -> float | None:
    n, k = scores.shape
    if n < 2 or k < 2:
        return None
    grand = scores.mean()
    row_means = scores.mean(axis=1)
    msb = k * float(((row_means - grand) ** 2).sum()) / (n - 1)
    msw = float(((scores - row_means[:, None]) ** 2).sum()) / (n * (k - 1))
    denominator = msb + (k - 1) * msw
    return 1.0 if denominator == 0 else (msb - msw) / denominator


def judge_noise(
    scores: ArrayLike,
    *,
    flip_rate: float | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> JudgeNoise:
    """Noise figures of a [samples x repeats] score matrix (module doc). `flip_rate` from verdicts, when the
    caller has them; otherwise the share of samples whose score changes between repeats."""
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError("scores must be a non-empty [samples x repeats] matrix")
    if not np.isfinite(matrix).all():
        raise ValueError("scores must be finite (leave failed samples out)")
    n, k = matrix.shape
    per_sample = matrix.mean(axis=1)
    spread = matrix.std(axis=1, ddof=1) if k > 1 else np.zeros(n)
    spread[np.ptp(matrix, axis=1) == 0] = 0.0  # equal repeats: exactly 0, not a rounding residue
    if flip_rate is None:
        flip_rate = float(np.mean(np.ptp(matrix, axis=1) > 0)) if k > 1 else 0.0
    rng = np.random.default_rng(seed)
    alpha = 1.0 - confidence
    over_samples = np.empty(resamples)
    with_noise = np.empty(resamples)
    step = max(1, 2_000_000 // (n * k))  # resamples per chunk: bounded memory whatever n
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        rows = rng.integers(0, n, size=(stop - start, n))
        over_samples[start:stop] = per_sample[rows].mean(axis=1)
        cols = rng.integers(0, k, size=(stop - start, n, k))
        with_noise[start:stop] = matrix[rows[:, :, None], cols].mean(axis=(1, 2))

    def interval(draws: NDArray[np.float64]) -> tuple[float, float]:
        low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
        return float(low), float(high)

    return JudgeNoise(
        samples=n,
        repeats=k,
        mean=float(per_sample.mean()),
        mean_spread=float(spread.mean()),
        flip_rate=float(flip_rate),
        icc=_icc1(matrix),
        ci_samples=interval(over_samples),
        ci_with_noise=interval(with_noise),
        spread=spread,
    )


def noise_floor(noise: JudgeNoise) -> float:
    """The half-width the judge's own noise adds to the mean's CI (0 for a deterministic judge): the gate's
    'larger than the judge's own noise' margin."""
    half_with = (noise.ci_with_noise[1] - noise.ci_with_noise[0]) / 2
    half_without = (noise.ci_samples[1] - noise.ci_samples[0]) / 2
    return max(0.0, math.sqrt(max(half_with**2 - half_without**2, 0.0)))
