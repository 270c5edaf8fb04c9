"""Are an adaptive night's decisions valid on the score shapes nights really have? Type I error and the 'level'
error with a look after every batch, for both targets, with and without a free signal; then the calls a good
signal saves.

    .venv/bin/python benchmarks/sim_adaptive_validity.py [--reps 400] [--sizes 100 1000 2000] [--seed 0]

Every night is one pair decision fed exactly as `comparison.adaptive.settle` feeds it (`PredictionPoweredSequence`
batch by batch, `verdict_of` after each batch, stopping at the first settled verdict), alpha 0.05, margin 0.01,
batches of 50. Paired differences d (run b minus run a, scores in [0, 1]) of four shapes:

- binary: two pass/fail scores, d in {-1, 0, +1} (P(+-1) = 0.15 each under the null);
- discrete: grades {0, 1/3, 2/3, 1} drawn from (0.1, 0.2, 0.3, 0.4), the two runs equal on half the questions;
- sparse: 90 % exact ties, the rest +0.9 (1 %) or -0.1 (9 %): mean 0, rare large values;
- skewed: two Beta(0.3, 2) scores (most near 0, a long tail).

Null: the population target draws i.i.d. from the shape (mean 0); the questions target's N differences have a
mean of exactly 0 (half of them drawn, the other half their negatives; sparse: exact proportions), in a random
order. A type I error is 'better' or 'worse'. The level check moves 2 % of the questions to +1 (a true difference
of about +0.02, beyond the margin): an error is 'level'. Signals (f in [-1, 1], on every question): none; useless
(independent noise); biased (correlated 0.5 with d, its mean off by +0.2); good (correlated 0.8). Monte Carlo
error of a rate near 0.05 with R repetitions: sqrt(0.05 * 0.95 / R) (0.011 at R = 400); a cell is within alpha when
its rate is at most 0.05 + 2 of those.

Savings: N = 1,000, true difference 0.05, normal differences of sd 0.25 (clipped), signal correlated 0.8: the
mean share of questions judged with and without the signal, each target.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np

from ragmetrics.comparison.adaptive import verdict_of
from ragmetrics.comparison.ppi_sequence import PredictionPoweredSequence

ALPHA = 0.05
MARGIN = 0.01
BATCH = 50

Shape = Callable[[np.random.Generator, int], np.ndarray]


def binary(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.15, 0.7, 0.15])


def discrete(rng: np.random.Generator, n: int) -> np.ndarray:
    grades = np.array([0.0, 1 / 3, 2 / 3, 1.0])
    a = rng.choice(grades, size=n, p=[0.1, 0.2, 0.3, 0.4])
    b = np.where(rng.random(n) < 0.5, a, rng.choice(grades, size=n, p=[0.1, 0.2, 0.3, 0.4]))
    return b - a


def sparse(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice([0.0, 0.9, -0.1], size=n, p=[0.9, 0.01, 0.09])


def skewed(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.beta(0.3, 2.0, n) - rng.beta(0.3, 2.0, n)


SHAPES: dict[str, Shape] = {"binary": binary, "discrete": discrete, "sparse": sparse, "skewed": skewed}


def null_population(rng: np.random.Generator, shape: str, n: int, target: str) -> np.ndarray:
    """N differences under the null: i.i.d. (population) or with a mean of exactly 0 (questions)."""
    if target == "population":
        return SHAPES[shape](rng, n)
    if shape == "sparse":
        plus = n // 100
        d = np.concatenate((np.full(plus, 0.9), np.full(9 * plus, -0.1), np.zeros(n - 10 * plus)))
    else:
        half = SHAPES[shape](rng, n - n // 2)
        d = np.concatenate((half, -half[: n // 2]))
    return rng.permutation(d)


def signal_for(rng: np.random.Generator, d: np.ndarray, kind: str) -> np.ndarray | None:
    if kind == "none":
        return None
    noise = rng.standard_normal(d.size)
    if kind == "useless":
        return np.clip(0.25 * noise, -1.0, 1.0)
    rho, bias = (0.5, 0.2) if kind == "biased" else (0.8, 0.0)
    z = (d - d.mean()) / max(float(d.std()), 1e-9)
    return np.clip(bias + 0.25 * (rho * z + math.sqrt(1 - rho * rho) * noise), -1.0, 1.0)


def night(d: np.ndarray, f: np.ndarray | None, target: str) -> tuple[str, int]:
    """(verdict, questions judged): the night's sequence and rule, stopping at the first settled verdict."""
    sequence = PredictionPoweredSequence(alpha=ALPHA, population=d.size, target=target,  # type: ignore[arg-type]
                                         signals=f)  # fmt: skip
    for start in range(0, d.size, BATCH):
        sequence.update(d[start : start + BATCH], None if f is None else f[start : start + BATCH])
        verdict = verdict_of("pair", MARGIN, sequence.low, sequence.high, level_first=target == "questions",
                             exact=sequence.exact)  # fmt: skip
        if verdict != "unsettled":
            return verdict, sequence.n
    return "unsettled", d.size


def validity_table(reps: int, sizes: list[int], rng: np.random.Generator) -> None:
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    print(f"{reps} repetitions per cell; alpha {ALPHA}; margin {MARGIN}; batches of {BATCH}; "
          f"a rate is within alpha up to {bound:.3f} (alpha + 2 Monte Carlo errors)")  # fmt: skip
    print("| shape | N | target | signal | type I (better or worse, mean 0) | 'level' at a difference of +0.02 |")
    print("|---|---:|---|---|---:|---:|")
    worst = 0.0
    for shape in SHAPES:
        for n in sizes:
            for target in ("population", "questions"):
                for kind in ("none", "useless", "biased", "good"):
                    wrong = level = beyond = 0
                    for _ in range(reps):
                        d = null_population(rng, shape, n, target)
                        verdict, _ = night(d, signal_for(rng, d, kind), target)
                        wrong += verdict in ("better", "worse")
                        shifted = d.copy()
                        moved = rng.choice(n, size=max(1, round(0.02 * n)), replace=False)
                        shifted[moved] = 1.0
                        if target == "questions" and shifted.mean() <= MARGIN:
                            continue
                        beyond += 1
                        verdict, _ = night(shifted, signal_for(rng, shifted, kind), target)
                        level += verdict == "level"
                    worst = max(worst, wrong / reps, level / max(beyond, 1))
                    flag = "" if max(wrong / reps, level / max(beyond, 1)) <= bound else " **over**"
                    print(f"| {shape} | {n} | {target} | {kind} | {wrong / reps:.3f} | "
                          f"{level / max(beyond, 1):.3f}{flag} |", flush=True)
    print(f"\nhighest rate in any cell: {worst:.3f} (bound {bound:.3f})")


def savings(reps: int, rng: np.random.Generator) -> None:
    n, delta, rho, sd = 1000, 0.05, 0.8, 0.25
    print(f"\nSavings: N = {n}, true difference {delta}, sd {sd}, signal correlation {rho}, {reps} repetitions")
    print("| target | judged without the signal | judged with it | fewer judged questions |")
    print("|---|---:|---:|---:|")
    for target in ("population", "questions"):
        without = with_signal = 0
        for _ in range(reps):
            z1, z2 = rng.standard_normal(n), rng.standard_normal(n)
            d = np.clip(delta + sd * z1, -1.0, 1.0)
            f = np.clip(delta / 2 + sd * (rho * z1 + math.sqrt(1 - rho * rho) * z2), -1.0, 1.0)
            without += night(d, None, target)[1]
            with_signal += night(d, f, target)[1]
        print(f"| {target} | {without / (reps * n):.1%} | {with_signal / (reps * n):.1%} | "
              f"{1 - with_signal / max(without, 1):.1%} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 2000])
    parser.add_argument("--savings-reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only-savings", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if not args.only_savings:
        validity_table(args.reps, args.sizes, rng)
    savings(args.savings_reps, rng)


if __name__ == "__main__":
    main()
