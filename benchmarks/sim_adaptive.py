"""Adaptive nights by simulation: calls used, agreement with the full night, and type I error when every batch
is looked at (anytime-valid confidence sequences against a t-test re-run after each batch).

    .venv/bin/python benchmarks/sim_adaptive.py [--reps 10000] [--batch 50] [--sd 0.25] [--seed 0]
    .venv/bin/python benchmarks/sim_adaptive.py --signals [--target population|questions]

For each N (questions) and true mean difference delta between two runs, `reps` sets of N paired differences
are drawn from a population with that mean (normal with sd `sd`, clipped to [-1, 1]) and judged in batches of
`batch`. The adaptive night (`comparison.adaptive`: the hedged-capital betting sequence, alpha 0.05) stops at the
first batch after which the pair is settled (better, worse, or level within +-0.01) and otherwise at N. Printed:
the share of the full night's judge calls used (mean), how often its verdict (better / worse / not shown) differs
from the full night's paired t-test at N, and under delta = 0 the type I error of the adaptive verdict, of a
t-test re-run after every batch (stopping at the first p < 0.05), and of the full night's single t-test.

`--signals`: every question also has a free signal correlated 0, 0.5 or 0.8 with its judged difference (the
signal's own mean difference is half the judge's: it predicts, it is not the judge), used as a control variate
(`comparison.ppi_sequence`, the night's `judge.adaptive.signal`), against the same night without it. With
`--target questions` the decisions are about the dataset's own N questions: the full night's verdict is then
the exact mean's (level within +-0.01), and under the null the N differences are centred to a mean of exactly 0.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from ragmetrics.comparison.adaptive import verdict_of
from ragmetrics.comparison.confseq import BettingSequence
from ragmetrics.comparison.ppi_sequence import PredictionPoweredSequence

ALPHA = 0.05
MARGIN = 0.01


def population(rng: np.random.Generator, n: int, delta: float, sd: float) -> np.ndarray:
    """N paired differences of questions drawn from a population whose mean difference is delta."""
    return np.clip(delta + sd * rng.standard_normal(n), -1.0, 1.0)


def full_verdict(d: np.ndarray) -> int:
    se = d.std(ddof=1) / math.sqrt(d.size)
    if se == 0:
        return int(np.sign(d.mean()))
    p = 2 * stats.t.sf(abs(d.mean() / se), d.size - 1)
    return int(np.sign(d.mean())) if p < ALPHA else 0


def adaptive(d: np.ndarray, batch: int, grid: int) -> tuple[int, int]:
    """(verdict: 1 better, -1 worse, 0 not shown; questions judged), the night's own sequence and rule."""
    sequence = BettingSequence(alpha=ALPHA, grid_points=grid)
    for start in range(0, d.size, batch):
        sequence.update((d[start : start + batch] + 1.0) / 2.0)
        verdict = verdict_of("pair", MARGIN, 2 * sequence.low - 1, 2 * sequence.high - 1)
        if verdict != "unsettled":
            return {"better": 1, "worse": -1}.get(verdict, 0), sequence.n
    return 0, d.size


def peeking_t(d: np.ndarray, batch: int) -> int:
    """A t-test after every batch, stopping at the first p < alpha: 1 when it ever rejects."""
    t = np.arange(1, d.size + 1)
    mean = np.cumsum(d) / t
    var = (np.cumsum(d * d) - t * mean * mean) / np.maximum(t - 1, 1)
    looks = np.arange(batch, d.size + 1, batch) - 1
    se = np.sqrt(np.maximum(var[looks], 1e-30) / t[looks])
    p = 2 * stats.t.sf(np.abs(mean[looks] / se), t[looks] - 1)
    return int(np.any(p < ALPHA))


def signal_for(rng: np.random.Generator, d: np.ndarray, delta: float, sd: float, rho: float) -> np.ndarray:
    """A free signal correlated rho with the differences d (before clipping), its mean difference delta / 2."""
    z = (d - delta) / sd
    noise = rng.standard_normal(d.size)
    return np.clip(delta / 2 + sd * (rho * z + math.sqrt(1 - rho * rho) * noise), -1.0, 1.0)


def powered(d: np.ndarray, f: np.ndarray | None, batch: int, target: str) -> tuple[int, int]:
    """(verdict, questions judged) of the prediction-powered sequence (no signal: `f` None), the night's rule."""
    sequence = PredictionPoweredSequence(
        alpha=ALPHA, population=d.size, target=target,  # type: ignore[arg-type]
        signals=f,
    )  # fmt: skip
    for start in range(0, d.size, batch):
        sequence.update(d[start : start + batch], None if f is None else f[start : start + batch])
        verdict = verdict_of("pair", MARGIN, sequence.low, sequence.high, level_first=target == "questions",
                             exact=sequence.exact)  # fmt: skip
        if verdict != "unsettled":
            return {"better": 1, "worse": -1}.get(verdict, 0), sequence.n
    return 0, d.size


def signal_table(args: argparse.Namespace, rng: np.random.Generator) -> None:
    print(f"{args.reps} repetitions per row; sd {args.sd}; batches of {args.batch}; alpha {ALPHA}; "
          f"target {args.target}")  # fmt: skip
    print("| N | true difference | signal correlation | calls used: without signal | calls used: with | "
          "fewer calls | verdict differs from the full night: with | type I: with |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        for delta in (0.0, 0.02, 0.05, 0.1):
            for rho in (0.0, 0.5, 0.8):
                used_without = used_with = differs = rejects = 0
                for _ in range(args.reps):
                    d = rng.permutation(population(rng, n, delta, args.sd))
                    if args.target == "questions" and delta == 0.0:
                        d = d - d.mean()
                    f = signal_for(rng, d, delta, args.sd, rho)
                    if args.target == "population":
                        _, judged_without = adaptive(d, args.batch, args.grid)  # the night's default sequence
                        full = full_verdict(d)
                    else:
                        _, judged_without = powered(d, None, args.batch, "questions")
                        full = 0 if abs(d.mean()) < MARGIN else int(np.sign(d.mean()))
                    verdict, judged = powered(d, f, args.batch, args.target)
                    used_without += judged_without
                    used_with += judged
                    differs += int(verdict != full)
                    rejects += int(delta == 0.0 and verdict != 0)
                reps = args.reps
                type1 = f"{rejects / reps:.4f}" if delta == 0.0 else "-"
                print(f"| {n} | {delta:g} | {rho:g} | {used_without / (reps * n):.1%} | {used_with / (reps * n):.1%} | "
                      f"{1 - used_with / max(used_without, 1):.0%} | {differs / reps:.2%} | {type1} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--sd", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", type=int, default=2001, help="grid points of the betting sequence (as the night)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000, 5000])
    parser.add_argument("--signals", action="store_true", help="the free-signal (control variate) table")
    parser.add_argument("--target", choices=["population", "questions"], default="population")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.signals:
        signal_table(args, rng)
        return
    print(f"{args.reps} repetitions per row; paired differences sd {args.sd}; batches of {args.batch}; alpha {ALPHA}")
    print("| N | true difference | calls used (mean share) | verdict differs from the full night | "
          "type I: adaptive | type I: t-test after every batch | type I: full night |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        for delta in (0.0, 0.02, 0.05, 0.1):
            used = differs = adaptive_reject = peek_reject = full_reject = 0
            for _ in range(args.reps):
                d = rng.permutation(population(rng, n, delta, args.sd))
                verdict, judged = adaptive(d, args.batch, args.grid)
                full = full_verdict(d)
                used += judged
                differs += int(verdict != full)
                if delta == 0.0:
                    adaptive_reject += int(verdict != 0)
                    peek_reject += peeking_t(d, args.batch)
                    full_reject += int(full != 0)
            reps = args.reps
            type1 = (f"{adaptive_reject / reps:.4f} | {peek_reject / reps:.4f} | {full_reject / reps:.4f}"
                     if delta == 0.0 else "- | - | -")  # fmt: skip
            print(f"| {n} | {delta:g} | {used / (reps * n):.1%} | {differs / reps:.2%} | {type1} |", flush=True)


if __name__ == "__main__":
    main()
