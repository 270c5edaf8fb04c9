"""How many items must two people both label to know their agreement (the judge's ceiling) to +-0.1?

    .venv/bin/python benchmarks/sim_ceiling.py [--reps 1000] [--resamples 1000] [--seed 0]

Two labellers label n items yes/no; each copies a true label and flips it with a probability chosen so that
their expected Cohen's kappa is 0.4, 0.6 or 0.8 (base rate of yes 0.5 or 0.2). For each n the night's own
interval (a percentile bootstrap over items, `ragmetrics.trust.people`) is computed `reps` times: printed are
its mean half-width, the share of repetitions whose half-width is at most 0.1, and its coverage of the true
kappa (the kappa of the two labellers' process, from a million simulated items).
"""

from __future__ import annotations

import argparse

import numpy as np


def kappa(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cohen's kappa of yes/no labels along the last axis (vectorised over resamples)."""
    observed = (a == b).mean(axis=-1)
    pa, pb = a.mean(axis=-1), b.mean(axis=-1)
    expected = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (observed - expected) / (1 - expected)


def labellers(rng: np.random.Generator, n: int, base: float, flip: float) -> tuple[np.ndarray, np.ndarray]:
    truth = rng.random(n) < base
    return truth ^ (rng.random(n) < flip), truth ^ (rng.random(n) < flip)


def flip_for(target: float, base: float, rng: np.random.Generator) -> float:
    """The flip probability whose two labellers' kappa is `target` (bisection on a large simulation)."""
    low, high = 0.0, 0.5
    for _ in range(30):
        mid = (low + high) / 2
        a, b = labellers(rng, 400_000, base, mid)
        low, high = (mid, high) if kappa(a, b) > target else (low, mid)
    return (low + high) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200, 300, 400, 800])
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.reps} repetitions per row; percentile bootstrap of {args.resamples} resamples; 95 % intervals")
    print("| people's kappa | base rate | items double-labelled | mean half-width | half-width <= 0.1 | coverage |")
    print("|---:|---:|---:|---:|---:|---:|")
    for target in (0.4, 0.6, 0.8):
        for base in (0.5, 0.2):
            flip = flip_for(target, base, rng)
            a, b = labellers(rng, 1_000_000, base, flip)
            truth = float(kappa(a, b))
            for n in args.sizes:
                widths, covered = [], 0
                for _ in range(args.reps):
                    a, b = labellers(rng, n, base, flip)
                    idx = rng.integers(0, n, size=(args.resamples, n))
                    draws = kappa(a[idx], b[idx])
                    draws = draws[np.isfinite(draws)]
                    if draws.size < args.resamples // 2:  # mostly one class: no interval (counted as unknown)
                        widths.append(np.inf)
                        continue
                    low, high = np.quantile(draws, [0.025, 0.975])
                    widths.append((high - low) / 2)
                    covered += int(low <= truth <= high)
                w = np.array(widths)
                print(f"| {target:g} | {base:g} | {n} | {w.mean():.3f} | {np.mean(w <= 0.1):.0%} | "
                      f"{covered / args.reps:.1%} |", flush=True)


if __name__ == "__main__":
    main()
