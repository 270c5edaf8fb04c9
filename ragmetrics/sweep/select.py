"""The winner chosen on the selection half and confirmed on the confirmation half.

The winner is the configuration with the best mean on the selection half among those the race kept; the
runner-up is the next best (or, when every other was dropped, the one dropped last). On the confirmation half,
which the choice never saw, the winner is compared with the baseline and with the runner-up by the paired test
of `compare.test`, and the two p-values are adjusted together by Holm. The winner's curse is the winner's
selection mean less its confirmation mean: how much of its lead was the luck of the questions it was chosen on.
It is reported whatever its sign.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragmetrics.comparison.corrections import adjust
from ragmetrics.comparison.stats import paired_p_value

__all__ = ["Confirmation", "PairCheck", "confirm", "mean_of", "rank_finalists"]


def mean_of(scores: Mapping[str, float | None], qids: Sequence[str]) -> float | None:
    values = [v for q in qids if (v := scores.get(q)) is not None]
    return float(np.mean(values)) if values else None


def rank_finalists(
    scores: Mapping[str, Mapping[str, float | None]],
    alive: Sequence[str],
    dropped_order: Sequence[str],
    selection: Sequence[str],
) -> tuple[str, str | None]:
    """(winner, runner-up): the best two live configurations by selection mean, ties in grid order."""
    means = {name: mean_of(scores[name], selection) for name in alive}
    ranked = sorted(
        (name for name in alive if means[name] is not None),
        key=lambda n: (-(means[n] or 0.0), alive.index(n)),
    )
    if not ranked:
        raise ValueError("no configuration has a score on the selection half")
    runner_up = ranked[1] if len(ranked) > 1 else (dropped_order[-1] if dropped_order else None)
    return ranked[0], runner_up


@dataclass(frozen=True)
class PairCheck:
    """The winner against one other configuration on the confirmation half."""

    against: str
    role: str
    """'baseline' or 'runner-up'."""
    questions: int
    mean_difference: float
    p_value: float
    p_adjusted: float
    confirmed: bool
    """The winner is significantly better (adjusted p below alpha, positive difference)."""


@dataclass(frozen=True)
class Confirmation:
    winner: str
    selection_mean: float
    confirmation_mean: float
    checks: tuple[PairCheck, ...]
    test: str
    correction: str
    alpha: float

    @property
    def gap(self) -> float:
        """The winner's curse: selection mean less confirmation mean (positive: the choice flattered it)."""
        return self.selection_mean - self.confirmation_mean


def confirm(
    winner: str,
    others: Sequence[tuple[str, str]],
    scores: Mapping[str, Mapping[str, float | None]],
    selection: Sequence[str],
    confirmation: Sequence[str],
    *,
    test: str,
    alpha: float,
    seed: int,
    permutations: int,
    correction: str = "holm",
) -> Confirmation:
    """Paired tests of the winner against each (name, role) in `others` on `confirmation`, Holm-adjusted
    together; questions where either score is missing (a judge failure) are left out of that pair, by name in
    the pair's count."""
    raw: list[tuple[str, str, int, float, float]] = []
    for name, role in others:
        pairs = [
            (w, o)
            for q in confirmation
            if (w := scores[winner].get(q)) is not None and (o := scores[name].get(q)) is not None
        ]
        diffs = [w - o for w, o in pairs]
        p = paired_p_value(test, diffs, seed=seed, permutations=permutations) if diffs else 1.0
        raw.append((name, role, len(diffs), float(np.mean(diffs)) if diffs else 0.0, p))
    adjusted = adjust([r[4] for r in raw], correction) if raw else []
    checks = tuple(
        PairCheck(name, role, n, diff, p, p_adj, bool(p_adj < alpha and diff > 0))
        for (name, role, n, diff, p), p_adj in zip(raw, adjusted, strict=True)
    )
    sel = mean_of(scores[winner], selection)
    conf = mean_of(scores[winner], confirmation)
    if sel is None or conf is None:
        raise ValueError(f"the winner {winner!r} has no score on one of the halves")
    return Confirmation(winner, sel, conf, checks, test, correction, alpha)
