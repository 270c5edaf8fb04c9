"""Decisions of an adaptive night: settled by anytime-valid confidence sequences, checked after every batch.

An adaptive night judges its questions in a seeded random order, in batches, every compared run on the same
questions. After each batch every decision it must make is updated from the judged questions so far:

- **pair**: does run b beat run a on a metric? Settled "better" or "worse" when the confidence sequence of the
  mean paired difference excludes 0, "level" when it lies within +-`margin` (no difference that matters), else
  unsettled;
- **gate**: has a run dropped beyond `max_drop` against the baseline report's scores of the same questions?
  Settled "dropped" when the sequence lies below -max_drop, "held" when it lies above it;
- **precision**: is a run's mean known to +-`half_width`? Settled when the sequence is that narrow.

The sequences are hedged-capital betting sequences for differences (`comparison.ppi_sequence`, with or without
a free signal as a control variate) and the empirical-Bernstein one for a mean (`comparison.confseq`), each
valid at every sample size for bounded scores, each at alpha / K for the K decisions
(Bonferroni: valid across decisions however often each is looked at; a Holm step-down is not anytime-valid).
Pair and gate decisions treat the judged questions as a random sample of questions like them, as the full
night's paired tests do (the i.i.d. form: a difference is real when it would hold on other questions of the same
kind, not merely on this set); a precision decision is about the dataset's own mean, so its sequence is the
without-replacement form, exact once every question is judged. A decision, once settled, is frozen with the number of questions and the interval it was settled at: it never
flips back. Judging stops when every decision is settled, or at the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ragmetrics.comparison.confseq import mean_confseq
from ragmetrics.comparison.ppi_sequence import PredictionPoweredSequence, Target

__all__ = ["Decision", "DecisionKind", "settle", "verdict_of"]

DecisionKind = Literal["pair", "gate", "precision"]
Verdict = Literal["better", "worse", "level", "dropped", "held", "precise", "unsettled"]


@dataclass
class Decision:
    """One decision of the night and where it stands."""

    kind: DecisionKind
    metric: str
    run: str
    other: str | None = None
    """pair: the baseline run (the decision is about run minus other); gate: the baseline report."""
    threshold: float = 0.0
    """pair: the margin of 'level'; gate: max_drop; precision: the half-width asked for."""
    lower_is_better: bool = False
    verdict: Verdict = "unsettled"
    settled_at: int | None = None
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0
    signal_weight: float | None = None
    """The free signal's weight (lambda) after the last look; None without a signal."""
    signal_correlation: float | None = None
    """The judged questions' correlation of the decision's values with the signal's."""
    _sequence: PredictionPoweredSequence | None = field(default=None, repr=False, compare=False)

    @property
    def settled(self) -> bool:
        return self.verdict != "unsettled"

    def describe(self, population: int) -> str:
        """One line for the report: what was decided, after how many questions, with what interval."""
        interval = "" if self.low is None else f"anytime-valid interval [{self.low:+.3f}, {self.high:+.3f}]"
        what = {
            "pair": f"{self.run} vs {self.other} on {self.metric}",
            "gate": f"{self.run} / {self.metric} against the baseline (max drop {self.threshold:g})",
            "precision": f"{self.run} / {self.metric} mean to +-{self.threshold:g}",
        }[self.kind]
        if self.signal_weight is not None:
            correlation = "" if self.signal_correlation is None else f", correlation {self.signal_correlation:.2f}"
            what += f" (free signal weight {self.signal_weight:.2f}{correlation})"
        if self.settled:
            return f"{what}: {self.verdict}, settled after {self.settled_at} of {population} questions, {interval}"
        width = "" if self.low is None or self.high is None else f" (interval [{self.low:+.3f}, {self.high:+.3f}]"
        if width and self.kind == "pair":
            width += f": it holds 0 and differences beyond +-{self.threshold:g})"
        elif width and self.kind == "gate":
            width += f": it holds drops both within and beyond {self.threshold:g})"
        elif width:
            width += f": wider than +-{self.threshold:g})"
        return f"{what}: unsettled after {self.n} of {population} questions{width}"


Values = Mapping[str, Mapping[str, Mapping[str, float | None]]]


def settle(
    decisions: Sequence[Decision],
    values: Values,
    order: Sequence[str],
    *,
    population: int,
    alpha: float,
    baseline: Values | None = None,
    signals: Values | None = None,
    questions: Sequence[str] | None = None,
    target: Target = "population",
) -> None:
    """Update every unsettled decision from the scores judged so far: `values[run][qid][metric]`, `order` the
    questions judged, in the order judged; `baseline[run][qid][metric]` the baseline report's scores (gate
    decisions). Questions a decision has no value for on either side are left out of it (a failed score).

    `signals[run][qid][metric]`: a free signal on every one of `questions` (all N, judged or not), used as a
    control variate for pair and gate decisions (`comparison.ppi_sequence`); `target` "questions" makes pair and
    gate decisions about the dataset's own questions (without replacement) rather than questions like them."""
    level = alpha / max(1, len(decisions))
    for decision in decisions:
        if decision.settled:
            continue
        judged = _series(decision, values, order, baseline)
        if not judged:
            continue
        series = [value for _, value in judged]
        if decision.kind == "precision":
            cs = mean_confseq(np.clip(series, 0.0, 1.0), alpha=level, population=population)
            estimate, low, high = cs.at(cs.n)
        else:
            signal = _signal_of(decision, signals, baseline)
            if decision._sequence is None:
                every = None if signals is None else [signal(q) for q in (questions or order)]
                decision._sequence = PredictionPoweredSequence(alpha=level, population=population, target=target,
                                                               signals=every)  # fmt: skip
            powered = decision._sequence
            fresh_pairs = judged[powered.n :]
            powered.update([v for _, v in fresh_pairs], [signal(q) for q, _ in fresh_pairs])
            estimate, low, high = powered.estimate, powered.low, powered.high
            if signals is not None:
                decision.signal_weight = round(powered.weight, 4)
                correlation = powered.correlation
                decision.signal_correlation = None if correlation is None else round(correlation, 4)
        decision.n = len(series)
        decision.estimate, decision.low, decision.high = estimate, low, high
        exact = decision.n == population and (decision.kind == "precision" or target == "questions")
        verdict = verdict_of(decision.kind, decision.threshold, low, high, level_first=target == "questions",
                             exact=exact)  # fmt: skip
        if verdict != "unsettled":
            decision.verdict, decision.settled_at = verdict, decision.n


def _signal_of(decision: Decision, signals: Values | None, baseline: Values | None) -> Callable[[str], float]:
    """The decision's free signal on a question, signed as its values are: pair, the signal of run minus that of
    other; gate, tonight's signal minus the baseline's judged score. A question without one counts 0 (any fixed
    value keeps the sequence valid; it only predicts less)."""
    sign = -1.0 if decision.lower_is_better else 1.0

    def value(source: Values | None, run: str | None, qid: str) -> float | None:
        return None if source is None or run is None else source.get(run, {}).get(qid, {}).get(decision.metric)

    def signal(qid: str) -> float:
        mine = value(signals, decision.run, qid)
        other = (value(signals, decision.other, qid) if decision.kind == "pair"
                 else value(baseline, decision.run, qid))  # fmt: skip
        return 0.0 if mine is None or other is None else sign * (mine - other)

    return signal


def _series(
    decision: Decision, values: Values, order: Sequence[str], baseline: Values | None
) -> list[tuple[str, float]]:
    """The decision's (question, value) in judged order: a score (precision) or a signed difference where
    positive is better (pair: run minus other; gate: tonight minus the baseline)."""
    mine = values.get(decision.run, {})
    sign = -1.0 if decision.lower_is_better else 1.0
    out: list[tuple[str, float]] = []
    for qid in order:
        value = mine.get(qid, {}).get(decision.metric)
        if value is None:
            continue
        if decision.kind == "precision":
            out.append((qid, value))
            continue
        source = values if decision.kind == "pair" else (baseline or {})
        key = decision.other if decision.kind == "pair" else decision.run
        other = source.get(key or "", {}).get(qid, {}).get(decision.metric)
        if other is not None:
            out.append((qid, sign * (value - other)))
    return out


def verdict_of(
    kind: DecisionKind, threshold: float, low: float, high: float, *, level_first: bool = False, exact: bool = False
) -> Verdict:
    """What an interval settles (module docstring): a difference's sign or its being within +-threshold (pair),
    a drop beyond threshold or not (gate), a half-width of at most threshold (precision). `level_first`: a pair
    within +-threshold is level even where the interval excludes 0 (the dataset's own mean: once known to be
    within the margin, which side of 0 it falls is not a verdict). An interval of no width settles nothing unless
    it is `exact` (the dataset's own mean with every question judged): a point from a sequence is a collapse, not
    knowledge."""
    if not high > low and not exact:
        return "unsettled"
    if kind == "precision":
        return "precise" if (high - low) / 2 <= threshold else "unsettled"
    if kind == "gate":
        if high < -threshold:
            return "dropped"
        return "held" if low > -threshold else "unsettled"
    if level_first and -threshold < low and high < threshold:
        return "level"
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    if -threshold < low and high < threshold:
        return "level"
    return "unsettled"
