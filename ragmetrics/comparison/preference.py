"""Pairwise preferences: "which answer is better, A's or B's?" asked per question, by people or by a judge.

Side by side is how people compare two systems most reliably, and it is the paired question a night asks. Each
judgement names the question, the two runs in the order shown (left, right) and the choice (left, right or a
tie). From them:

- **the sign test**: wins of B against wins of A over the questions where one was preferred (ties set aside),
  an exact two-sided binomial p against 1/2, with B's win share and its Clopper-Pearson interval;
- **Bradley-Terry** strengths (P(i beats j) = p_i / (p_i + p_j)) fitted by the MM algorithm of Hunter (2004)
  over any number of runs, a tie counted as half a win each way, normalised to a geometric mean of 1, with
  percentile bootstrap intervals over questions; for two runs the log-odds of B beating A;
- **position bias**: how often the side shown left wins among the untied judgements, with its exact interval
  and p against 1/2 (the order is randomised per question, so a fair judge wins left half the time).

Several judgements of one question (several people, or one judge asked both ways) are each counted: the tests
read the question's net preference, the majority of its judgements (a split is a tie), so a question weighs
once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ragmetrics.schema import Choice, Preference

__all__ = [
    "Choice",
    "Interval",
    "PairwiseResult",
    "Preference",
    "bradley_terry",
    "clopper_pearson",
    "compare_preferences",
    "net_preferences",
    "position_bias",
]



@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class PairwiseResult:
    """Run b against run a from pairwise judgements (module docstring)."""

    a: str
    b: str
    questions: int
    wins_b: int
    wins_a: int
    ties: int
    share_b: Interval | None
    """B's share of the untied questions, Clopper-Pearson."""
    p_value: float | None
    """Exact two-sided sign test."""
    log_odds_b: Interval | None
    """Bradley-Terry log(p_b / p_a), bootstrap over questions."""
    position: Interval | None
    """Share of untied judgements won by the left side."""
    position_p: float | None

    @property
    def verdict(self) -> str:
        if self.p_value is None or self.p_value >= 0.05:
            return "no significant preference"
        return f"{self.b} preferred" if self.wins_b > self.wins_a else f"{self.a} preferred"


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> Interval | None:
    if n == 0:
        return None
    alpha = 1 - confidence
    low = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return Interval(k / n, low, high)


def net_preferences(judgements: Iterable[Preference], a: str, b: str) -> dict[str, int]:
    """Question -> +1 (b preferred by most of its judgements), -1 (a) or 0 (tie or split), for the pair a, b."""
    votes: dict[str, int] = {}
    for j in judgements:
        if {j.left, j.right} != {a, b}:
            continue
        winner = j.winner
        votes[j.sample_id] = votes.get(j.sample_id, 0) + (0 if winner is None else 1 if winner == b else -1)
    return {q: int(np.sign(v)) for q, v in votes.items()}


def position_bias(judgements: Sequence[Preference], confidence: float = 0.95) -> tuple[Interval | None, float | None]:
    """(share of untied judgements won by the left side with its exact interval, two-sided p against 1/2)."""
    untied = [j for j in judgements if j.choice != "tie"]
    left = sum(1 for j in untied if j.choice == "left")
    if not untied:
        return None, None
    return clopper_pearson(left, len(untied), confidence), float(stats.binomtest(left, len(untied)).pvalue)


def bradley_terry(
    judgements: Sequence[Preference], runs: Sequence[str] | None = None, *, iterations: int = 2000, tol: float = 1e-10
) -> dict[str, float]:
    """Bradley-Terry strengths by Hunter's MM algorithm, ties as half a win each way, geometric mean 1. A run
    that never wins (or never loses) has no finite strength: its 0 (or infinity) is the maximum likelihood."""
    names = sorted({n for j in judgements for n in (j.left, j.right)} if runs is None else runs)
    index = {n: i for i, n in enumerate(names)}
    k = len(names)
    wins = np.zeros((k, k))
    for j in judgements:
        li, ri = index[j.left], index[j.right]
        if j.choice == "left":
            wins[li, ri] += 1
        elif j.choice == "right":
            wins[ri, li] += 1
        else:
            wins[li, ri] += 0.5
            wins[ri, li] += 0.5
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    p = np.ones(k)
    for _ in range(iterations):
        denominator = (games / (p[:, None] + p[None, :])).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = np.where(denominator > 0, total_wins / denominator, p)
        positive = new[new > 0]
        if positive.size:
            new = new / math.exp(float(np.mean(np.log(positive))))
        if np.max(np.abs(new - p)) < tol:
            p = new
            break
        p = new
    return {n: float(p[index[n]]) for n in names}


def compare_preferences(
    judgements: Sequence[Preference],
    a: str,
    b: str,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> PairwiseResult:
    """Run b against run a from `judgements` (module docstring)."""
    mine = [j for j in judgements if {j.left, j.right} == {a, b}]
    net = net_preferences(mine, a, b)
    wins_b = sum(1 for v in net.values() if v > 0)
    wins_a = sum(1 for v in net.values() if v < 0)
    ties = len(net) - wins_b - wins_a
    untied = wins_a + wins_b
    p_value = float(stats.binomtest(wins_b, untied).pvalue) if untied else None
    share = clopper_pearson(wins_b, untied, confidence)
    by_question: dict[str, list[Preference]] = {}
    for j in mine:
        by_question.setdefault(j.sample_id, []).append(j)
    questions = sorted(by_question)

    def log_odds(items: Sequence[str]) -> float:
        strengths = bradley_terry([j for q in items for j in by_question[q]], [a, b])
        pa, pb = strengths[a], strengths[b]
        return math.log(pb / pa) if pa > 0 and pb > 0 and math.isfinite(pa) and math.isfinite(pb) else math.nan

    log_odds_b: Interval | None = None
    if questions:
        value = log_odds(questions)
        rng = np.random.default_rng(seed)
        draws = np.array([log_odds([questions[i] for i in rng.integers(0, len(questions), len(questions))])
                          for _ in range(resamples)])  # fmt: skip
        draws = draws[np.isfinite(draws)]
        if math.isfinite(value) and draws.size >= resamples // 2:
            alpha = 1 - confidence
            low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
            log_odds_b = Interval(value, float(low), float(high))
    position, position_p = position_bias(mine, confidence)
    return PairwiseResult(a, b, len(net), wins_b, wins_a, ties, share, p_value, log_odds_b, position, position_p)
