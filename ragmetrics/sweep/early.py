"""Configurations clearly losing, dropped between batches of selection questions by anytime-valid sequences.

Every pair of configurations still in the race has a hedged-capital betting confidence sequence
(`comparison.confseq.BettingSequence`) for the mean of its paired differences, fed question by question in the
selection half's seeded random order. A configuration is dropped once some other one is shown better than it:
the upper end of their difference's sequence is below 0. Each sequence runs at alpha / (K - 1) for K
configurations. Why that is enough: the truly best configuration b is dropped only if one of the K - 1 sequences
of (b - d) misses its true mean (which is >= 0) at some look; each misses with probability at most alpha / (K - 1)
at any look whatever (Ville's inequality), so by a union bound over b's own K - 1 pairs, b survives the whole
race with probability at least 1 - alpha, however often the race is looked at. (Pairs without b may miss more
often; that can only drop configurations that are not the best, which is what dropping is for.)
A dropped configuration is scored on no further question, so the judge is not paid for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ragmetrics.comparison.confseq import BettingSequence

__all__ = ["Drop", "Race"]


@dataclass(frozen=True)
class Drop:
    name: str
    by: str
    after: int
    """Selection questions scored when it was dropped."""
    high: float
    """The upper end of its difference with `by` when dropped (below 0)."""


@dataclass
class Race:
    """The pairwise sequences of the configurations still in the race (module docstring)."""

    names: Sequence[str]
    alpha: float
    alive: list[str] = field(init=False)
    drops: list[Drop] = field(default_factory=list)
    seen: int = 0
    _pairs: dict[tuple[str, str], BettingSequence] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.alive = list(self.names)
        self._level = self.alpha / max(len(self.names) - 1, 1)
        for a, b in combinations(self.names, 2):
            self._pairs[(a, b)] = BettingSequence(alpha=self._level)

    def feed(self, scores: Mapping[str, Mapping[str, float | None]], qids: Sequence[str]) -> list[Drop]:
        """Feed one batch (every live configuration's scores on `qids`, each in [0, 1]); return who is dropped."""
        self.seen += len(qids)
        for a, b in combinations(self.alive, 2):
            diffs = [
                (x - y + 1.0) / 2.0
                for q in qids
                if (x := scores[a].get(q)) is not None and (y := scores[b].get(q)) is not None
            ]
            if diffs:
                self._pairs[(a, b)].update(np.asarray(diffs, dtype=np.float64))
        dropped: list[Drop] = []
        for name in list(self.alive):
            for (
                other
            ) in self.alive:  # only against configurations still in: the last one can never be dropped
                if other == name:
                    continue
                high = self.upper(name, other)
                if high < 0.0:
                    dropped.append(Drop(name, other, self.seen, high))
                    self.alive.remove(name)
                    break
        self.drops.extend(dropped)
        return dropped

    def upper(self, name: str, other: str) -> float:
        """The upper end of the sequence for mean(score[name] - score[other]), on the scores' scale."""
        if (name, other) in self._pairs:
            return 2.0 * self._pairs[(name, other)].high - 1.0
        return -(2.0 * self._pairs[(other, name)].low - 1.0)
