"""What an alignment may cost before it runs: the judge calls each step makes at most (`plan_alignment`; the
`--dry-run` prints it, `--budget` bounds the total).

Why its own module: the dry run needs the bound without the labels scored or any step fitted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragmetrics.alignment.aligner import EXAMPLE_COUNTS, GUIDANCE_CANDIDATES

__all__ = ["AlignmentPlan", "plan_alignment"]


@dataclass(frozen=True)
class AlignmentPlan:
    """The judge calls each step may make at most (`--dry-run` prints it; `--budget` bounds the total)."""

    labels: int
    folds: int
    steps: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.steps.values())

    def lines(self) -> list[str]:
        out = [
            f"{self.labels} labels in {self.folds} folds; judge calls at most (one call = one sample scored):"
        ]
        out += [f"  {name:<13} {calls:>7,}" for name, calls in self.steps.items()]
        out.append(f"  {'total':<13} {self.total:>7,}")
        return out


def plan_alignment(n: int, folds: int, steps: Sequence[str]) -> AlignmentPlan:
    """At most how many judge calls each step makes for `n` labels (every sample scored once per distinct
    prompt; the baseline scores each labelled sample once)."""
    train = n - n // folds
    out: dict[str, int] = {"judge as it is": n}
    for step in steps:
        if step == "few_shot":
            ks = [k for k in EXAMPLE_COUNTS if k <= train // 2] or [EXAMPLE_COUNTS[0]]
            out[step] = folds * (len(ks) * train + n // folds + 1) + len(ks) * n
        elif step == "instructions":
            out[step] = (
                folds * (1 + GUIDANCE_CANDIDATES * train + n // folds + 1) + 1 + GUIDANCE_CANDIDATES * n
            )
        else:
            out[step] = 0
    return AlignmentPlan(labels=n, folds=folds, steps=out)
