"""How `ragmetrics watch` alerts behave, by simulation: false alerts per 100 stable windows and the delay to
detect a drop of a given size, for the clustered rule (resample whole conversations) and the naive one
(resample traces), side by side.

    python benchmarks/sim_alerts.py [--windows 200] [--conversations 40] [--turns 5] [--icc 0.3]

Each window holds `conversations` conversations of `turns` traces; a trace's score is 1 (e.g. faithful) with
a probability drawn per conversation from a Beta distribution with the window's mean and intra-conversation
correlation `icc` (turns of one conversation succeed and fail together). The baseline window is drawn the same
way. A window alerts when its mean is below the baseline's by more than `max_drop` (0) and the 95 % interval
of the difference lies below 0 (`ragmetrics.live.windows.compare_windows`). Stable windows share the
baseline's mean; after a drop every window has the lower mean, and the delay is the number of windows until
the first alert (the expected value, 1 / the per-window detection rate).
"""

from __future__ import annotations

import argparse

import numpy as np

from ragmetrics.live.windows import compare_windows


def window(rng: np.random.Generator, mean: float, conversations: int, turns: int, icc: float, clustered: bool,
           tag: str) -> list[tuple[float, str]]:  # fmt: skip
    # Beta with mean m and intra-class correlation icc: a + b = 1 / icc - 1
    total = 1.0 / icc - 1.0
    p = rng.beta(mean * total, (1 - mean) * total, size=conversations)
    values = []
    for c in range(conversations):
        for t in range(turns):
            cluster = f"{tag}-c{c}" if clustered else f"{tag}-c{c}-t{t}"
            values.append((float(rng.random() < p[c]), cluster))
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=200)
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--icc", type=float, default=0.3)
    parser.add_argument("--mean", type=float, default=0.8)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{args.conversations} conversations x {args.turns} turns per window, mean {args.mean}, ICC {args.icc}; "
          f"{args.windows} windows per row\n")  # fmt: skip
    print(
        "| rule | drop | windows alerting | false alerts per 100 stable windows | mean delay to detect (windows) |"
    )
    print("|---|---:|---:|---:|---:|")
    for drop in (0.0, 0.05, 0.1, 0.2):
        for clustered in (True, False):
            alerts = 0
            for w in range(args.windows):
                seed = int(rng.integers(0, 2**31))
                local = np.random.default_rng(seed)
                base = window(local, args.mean, args.conversations, args.turns, args.icc, clustered, f"b{w}")
                cur = window(
                    local, args.mean - drop, args.conversations, args.turns, args.icc, clustered, f"w{w}"
                )
                result = compare_windows("m", cur, base, max_drop=0.0, alpha=0.05, seed=seed)
                alerts += int(result.alert)
            rate = alerts / args.windows
            rule = "clustered" if clustered else "naive"
            false = f"{100 * rate:.1f}" if drop == 0 else "-"
            delay = "-" if drop == 0 else (f"{1 / rate:.1f}" if rate else "never")
            print(f"| {rule} | {drop:.2f} | {alerts}/{args.windows} | {false} | {delay} |", flush=True)


if __name__ == "__main__":
    main()
