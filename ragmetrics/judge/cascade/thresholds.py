"""Confidence thresholds that guarantee agreement with people, set by fixed-sequence testing.

Selective evaluation (Jung, Brahman & Choi, "Trust or Escalate", ICLR 2025, arXiv 2407.18370): a judge's
verdict is kept only when its confidence reaches a threshold λ, and λ is chosen on labelled items so that

    P( agreement with people among kept verdicts >= target ) >= 1 - delta.

For each candidate λ the null hypothesis H0(λ): "the risk (disagreement rate) among verdicts with confidence
>= λ exceeds alpha = 1 - target" is tested with the exact binomial (Clopper-Pearson) p-value
P(Bin(n(λ), alpha) <= errors(λ)), where n(λ) calibration items are kept and errors(λ) of them disagree with
people. Candidates are scanned from the strictest (highest λ) to the laxest and the scan stops at the first λ
whose H0 is not rejected at level delta; the laxest rejected λ is returned. Fixed-sequence testing controls the
family-wise error at delta without a multiplicity correction because the order is fixed before seeing the data
(Bates et al., "Distribution-free, risk-controlling prediction sets", 2021; Angelopoulos et al., "Learn then
Test", 2021).

Assumptions, stated where they are used: the calibration items and the items judged later are exchangeable
(drawn from one distribution). A shift between them (new topics, a new pipeline) voids the guarantee; the
simulation in benchmarks/sim_cascade.py shows how far.

A cascade of K judges spends delta / K on each judge (Bonferroni), so that with probability >= 1 - delta every
judge's kept verdicts reach the target at once, and then so does their union (a mixture of sets each at least
the target is at least the target).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "ThresholdChoice",
    "binomial_p_value",
    "calibrate_cascade",
    "fixed_sequence_threshold",
    "is_confident",
    "minimum_labels",
    "scan_start",
    "stage_delta",
]


DEFAULT_STEPS = 20
"""Candidate thresholds per judge: the confidences keeping 1/20, 2/20, ... of its calibration items."""


def binomial_p_value(errors: int, n: int, alpha: float) -> float:
    """The exact p-value of H0 "risk >= alpha" after `errors` disagreements among `n` kept items.

    P(Bin(n, alpha) <= errors): how likely so few errors would be if the true risk were alpha. n = 0 gives 1
    (nothing kept, nothing shown).
    """
    if n < 0 or errors < 0 or errors > n:
        raise ValueError(f"need 0 <= errors <= n, got errors={errors}, n={n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if n == 0:
        return 1.0
    return float(stats.binom.cdf(errors, n, alpha))


def minimum_labels(target: float, delta: float) -> int:
    """The fewest kept items with which even a perfect record (no disagreement) rejects H0 at level delta.

    A perfect record of n items has p-value (1 - alpha)^n = target^n, so n >= ln(delta) / ln(target). With
    fewer labels than this no threshold can ever be certified and every item would be abstained on.
    """
    _check_levels(target, delta)
    n = math.ceil(math.log(delta) / math.log(target) - 1e-12)
    # guard the rounding either way: the answer is the smallest n with target**n <= delta
    while n > 1 and target ** (n - 1) <= delta:
        n -= 1
    while target**n > delta:
        n += 1
    return max(n, 1)


def scan_start(target: float, delta: float) -> int:
    """How many items the strictest tested threshold keeps (when the calibration set has that many): the fewest
    with which a judge erring at half the tolerated rate is certified, P(Bin(n, a) <= floor(n a / 2)) <= delta
    with a = 1 - target.

    Starting where only a perfect record can pass (`minimum_labels`) ends the scan at its first test whenever
    one of those few items disagrees, even for a judge far better than the target; the start is read from the
    confidences' count alone, never from the labels, so the order of the tests is still fixed in advance.
    """
    _check_levels(target, delta)
    alpha = 1.0 - target
    n = minimum_labels(target, delta)
    while stats.binom.cdf(math.floor(n * alpha / 2), n, alpha) > delta:
        n += 1
    return n


def _check_levels(target: float, delta: float) -> None:
    if not 0.0 < target < 1.0:
        raise ValueError(f"the agreement target must lie in (0, 1), got {target}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")


@dataclass(frozen=True)
class ThresholdChoice:
    """The certified threshold (None: none could be, so the judge keeps nothing) and what the scan saw."""

    threshold: float | None
    kept: int
    """calibration items at or above the threshold"""
    agreeing: int
    """of those, how many agree with people"""
    p_value: float | None
    """the p-value at the chosen threshold (None when none was certified)"""
    tested: int
    """thresholds tested before the scan stopped (the first non-rejection included)"""

    @property
    def empirical_agreement(self) -> float | None:
        return self.agreeing / self.kept if self.kept else None


def fixed_sequence_threshold(
    confidences: Sequence[float],
    agrees: Sequence[bool],
    *,
    target: float,
    delta: float,
    steps: int | None = DEFAULT_STEPS,
) -> ThresholdChoice:
    """The laxest confidence threshold certified by fixed-sequence testing (strict to lax, stop at the first
    non-rejection at level `delta`).

    The candidates are the distinct confidences seen on the calibration items, highest first (between two of
    them the kept set, hence the test, does not change), from the first that keeps `minimum_labels` items.
    """
    _check_levels(target, delta)
    if len(confidences) != len(agrees):
        raise ValueError(f"{len(confidences)} confidences but {len(agrees)} agreement flags")
    for c in confidences:
        if not math.isfinite(c):
            raise ValueError(f"a confidence is not finite: {c}")
    alpha = 1.0 - target
    if not confidences:
        return ThresholdChoice(None, 0, 0, None, 0)
    level = np.asarray(confidences, dtype=float)
    order = np.argsort(-level, kind="stable")
    level, agree = level[order], np.asarray(agrees, dtype=bool)[order]
    # every item tied at one confidence enters together: the candidates end where the next level starts
    ends = np.flatnonzero(np.append(level[1:] != level[:-1], True))
    # A level keeping fewer items than `minimum_labels` cannot be rejected even with no error: testing it would
    # stop the scan before it starts. With at least 2 x `scan_start` items, the scan starts further down, at the
    # level keeping the most items up to `scan_start` (a large tie at the top stays whole), so one disagreement
    # among the first few does not end it (a smaller set starts at the minimum). Which levels are skipped
    # depends on the confidences' count alone, never on the labels: the order of the tests is fixed in advance.
    ends = ends[ends + 1 >= minimum_labels(target, delta)]
    start = scan_start(target, delta)
    within = np.flatnonzero(ends + 1 <= start)
    if (
        len(level) >= 2 * start and within.size
    ):  # a large set: from the level keeping the most items up to start
        ends = ends[int(within[-1]) :]
    # Candidates every len/steps items (by count kept, read from the confidences alone): each step adds enough
    # items that one unlucky disagreement near the top does not end the scan, as one item at a time would.
    if steps is not None and ends.size:
        marks = np.unique(np.searchsorted(ends + 1, np.ceil(np.arange(1, steps + 1) * len(level) / steps)))
        ends = ends[marks[marks < ends.size]]
    if not ends.size:
        return ThresholdChoice(None, 0, 0, None, 0)
    kept = ends + 1
    agreeing = np.cumsum(agree)[ends]
    p_values = stats.binom.cdf(kept - agreeing, kept, alpha)
    failed = np.flatnonzero(p_values > delta)
    tested = int(failed[0]) + 1 if failed.size else len(ends)
    last = int(failed[0]) - 1 if failed.size else len(ends) - 1
    if last < 0:
        return ThresholdChoice(None, 0, 0, None, tested)
    return ThresholdChoice(
        float(level[ends[last]]), int(kept[last]), int(agreeing[last]), float(p_values[last]), tested
    )


def stage_delta(delta: float, judges: int) -> float:
    """The error level each of `judges` judges is certified at, so the whole cascade holds at `delta`."""
    if judges < 1:
        raise ValueError("a cascade needs at least one judge")
    return delta / judges


def is_confident(confidence: float, threshold: float | None) -> bool:
    """Whether a verdict is kept: its confidence reaches the judge's certified threshold (none: never)."""
    return threshold is not None and confidence >= threshold


def calibrate_cascade(
    *,
    target: float,
    delta: float,
    judges: int,
    judge_stage: Callable[[int, list[int]], tuple[Sequence[float], Sequence[bool]]],
    items: int,
) -> list[ThresholdChoice]:
    """Each judge's threshold, in cascade order, on the labelled items that reach it.

    `judge_stage(k, reaching)` returns judge k's confidences and agreement flags for the labelled items
    `reaching` (indices into 0..items-1): only those the earlier judges were not confident on, so judge k is
    calibrated on the items it will see, and a costly judge is asked about no more labelled items than needed.
    """
    reaching = list(range(items))
    choices: list[ThresholdChoice] = []
    level = stage_delta(delta, judges)
    for k in range(judges):
        confidences, agrees = judge_stage(k, reaching)
        choice = fixed_sequence_threshold(confidences, agrees, target=target, delta=level)
        choices.append(choice)
        reaching = [
            i for i, c in zip(reaching, confidences, strict=True) if not is_confident(c, choice.threshold)
        ]
    return choices
