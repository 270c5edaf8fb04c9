"""A prediction-powered, anytime-valid confidence sequence for a mean judged one question at a time, helped (or
not) by a free signal known on every question (the local judge's score, a retrieval metric).

An adaptive night judges questions in a random order. Every judged value d (a paired difference of two runs'
judge scores, or tonight's score minus the baseline's) lies in [-1, 1]; a question may also have a free signal f
in [-1, 1] (the same difference of the signal) that predicts d. With a weight lambda_i chosen from the questions
judged before question i (predictable), the judged values are replaced by the control variate

    x_i = d_i - lambda_i (f_i - c_i),

which keeps d's mean when c_i is the signal's mean over what question i is drawn from, and has a smaller spread
when f predicts d: var(d - lambda f) = var(d) (1 - rho^2) at lambda = cov(d, f) / var(f) (PPI++ / the control
variate). x_i is bounded: d_i in [-1, 1] and f_i within the known signals' range, so
x_i in [-1 - lambda_i (f_max - c_i), 1 - lambda_i (f_min - c_i)], a range known before x_i is seen. The sequence
is the hedged-capital betting sequence of `comparison.betting` on x: valid at every sample size for bounded
scores of any shape (ties, sparse or skewed values, discrete grades), never a point from a zero sample spread.
Without a signal lambda is 0 and x is d: one sequence whatever the signal, and a signal that does not predict
d gets lambda 0 and leaves it as it is.

The weight: the lambda in [0, 1] (41 points) under which the bettor's expected log-growth, l D - l^2 s^2 / 2,
is largest, where D is the deviation the sequence must resolve to settle (the judged mean's distance from 0, at
least 0.01, at most the current half-width), s^2 = var(d - lambda f) from the judged questions, and l the bet
the sequence would place: its plug-in size, capped by x's range (wider with lambda) and by the Kelly bet D / s^2.
A weight that widens the range more than it narrows the spread gets 0. Population target: D also shrinks by
lambda times the signal's own slack (below), which that weight adds to the interval.

Two targets (`target`):

- ``population`` (the full night's paired test asks this: would the difference hold on other questions of the
  kind?): the judged questions are i.i.d. draws (a random order of questions drawn from the kind is one), and
  c_i = F, the signal's mean over the N questions. F sits within b of the signal's mean over the kind with
  probability 1 - alpha_f, b the half-width of a fixed-horizon betting interval on the N signals (finite-sample,
  alpha_f = 2 % of the decision's alpha), so each bettor is tested against the mean shifted by lambda_i b
  towards it (`GridBetting`'s shift). With lambda = 0 nothing is shifted. The bets use the N signals' range,
  which every judged question lies in.
- ``questions`` (the mean over the dataset's own N questions, as a fixed regression set is read): draws without
  replacement, c_i the mean of f over the questions not yet judged before draw i (known exactly), so that
  E[x_i | past] = (N theta - D_{i-1}) / (N - i + 1), D the judged values' sum (Waudby-Smith and Ramdas, NeurIPS
  2020), and the range uses the extremes of the signals not yet judged. Exact once every question is judged.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ragmetrics.comparison.betting import MAX_HEDGED_BET, GridBetting

__all__ = ["PredictionPoweredSequence", "Target"]

Target = Literal["population", "questions"]

SIGNAL_ALPHA_SHARE = 0.02
"""The part of a decision's alpha spent on the signal's own mean (population target only): a signal that helps
nothing costs a sequence at 0.98 alpha instead of alpha (about 1 % more questions), never validity; a larger
share narrows the signal's slack too little to pay for itself (measured: 10 % cost 6 % more questions)."""
WEIGHT_GRID = np.linspace(0.0, 1.0, 41)
"""The weights chosen among."""
MIN_DEVIATION = 0.01
"""The smallest deviation the weight is tuned to resolve (a difference of 0.01 is the usual margin of 'level')."""
MIN_FOR_WEIGHT = 20
"""Questions judged before the signal's weight is fitted; until then the weight is 0."""


class _Remaining:
    """The multiset of signals not yet judged: its sum and extremes, updated one judged signal at a time."""

    def __init__(self, signals: NDArray[np.float64]) -> None:
        self.values, counts = np.unique(signals, return_counts=True)
        self.counts = counts.astype(np.int64)
        self.index = {float(v): i for i, v in enumerate(self.values.tolist())}
        self.first, self.last = 0, self.values.size - 1
        self.total = float(np.sum(signals))

    def remove(self, value: float) -> None:
        i = self.index.get(value)
        if i is None or self.counts[i] == 0:
            raise ValueError(f"signal {value!r} is not among the signals of the questions not yet judged")
        self.counts[i] -= 1
        self.total -= value
        while self.first <= self.last and self.counts[self.first] == 0:
            self.first += 1
        while self.last >= self.first and self.counts[self.last] == 0:
            self.last -= 1

    @property
    def extremes(self) -> tuple[float, float]:
        return float(self.values[self.first]), float(self.values[self.last])


def signal_slack(signals: NDArray[np.float64], alpha: float) -> float:
    """b of the module docstring: the half-width of a (1 - alpha) fixed-horizon hedged-capital interval for the
    mean of the signals' kind from the N signals (values in [-1, 1]), read around their mean."""
    betting = GridBetting(alpha=alpha, lower=-1.0, upper=1.0, horizon=signals.size)
    for start in range(0, signals.size, 64):  # in chunks: candidates rejected early are not bet on again
        betting.update(signals[start : start + 64], low=-1.0, high=1.0)
    mean = float(np.mean(signals))
    return max(mean - betting.low, betting.high - mean)


class PredictionPoweredSequence:
    """The sequence of the module docstring for one decision, fed each batch's judged values `d` with their
    signals `f` in judged order. `signals`: the signal on every one of the `population` questions (None: no
    signal, the betting sequence of d alone)."""

    def __init__(
        self,
        *,
        alpha: float,
        population: int,
        target: Target = "population",
        signals: ArrayLike | None = None,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if population < 1:
            raise ValueError("population must be at least 1")
        self.population = population
        self.target: Target = target
        self.has_signal = signals is not None
        every = np.zeros(0) if signals is None else np.asarray(signals, dtype=np.float64)
        if self.has_signal:
            if every.shape != (population,):
                raise ValueError(f"signals: {every.size} values for a population of {population} questions")
            if not np.all(np.isfinite(every)) or every.min() < -1.0 or every.max() > 1.0:
                raise ValueError("signals must be finite and lie in [-1, 1]")
        signal_part = SIGNAL_ALPHA_SHARE * alpha if self.has_signal and target == "population" else 0.0
        self.alpha = alpha - signal_part
        self._slack = signal_slack(every, signal_part) if signal_part else 0.0
        self.signal_total = float(np.sum(every))
        self._remaining = _Remaining(every) if self.has_signal else None
        self._range = (float(every.min()), float(every.max())) if self.has_signal else (0.0, 0.0)
        self._betting = GridBetting(alpha=self.alpha, lower=-1.0, upper=1.0)
        self.weight = 0.0
        """lambda the next question would get (fitted on the questions judged so far)."""
        self.n = 0
        self._judged_sum = 0.0  # D: the judged values' sum
        self._signal_judged = 0.0  # their signals' sum
        self._sums = np.zeros(3)  # sum f^2, sum d f, sum d^2 over the judged questions
        self.estimate = math.nan
        self.low, self.high = -1.0, 1.0

    def update(self, d: ArrayLike, f: ArrayLike | None = None) -> None:
        values = np.asarray(d, dtype=np.float64)
        signal = np.zeros_like(values) if f is None else np.asarray(f, dtype=np.float64)
        if values.shape != signal.shape or values.ndim != 1:
            raise ValueError("d and f must be one-dimensional and of one length")
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(signal))):
            raise ValueError("d and f must be finite")
        if values.size and (values.min() < -1.0 or values.max() > 1.0):
            raise ValueError("d must lie in [-1, 1] (a difference of two scores in [0, 1])")
        if self.n + values.size > self.population:
            raise ValueError(f"more than {self.population} questions judged from a population of {self.population}")
        if not values.size:
            return
        if self.has_signal:
            x, low, high, shift = self._controlled(values, signal)
        else:
            x, low, high, shift = values, np.full(values.size, -1.0), np.full(values.size, 1.0), np.zeros(values.size)
        if self.target == "questions":  # the null mean: that of the judged values d not yet drawn
            i = self.n + 1 + np.arange(values.size, dtype=np.float64)  # 1-based draw numbers
            left = self.population - i + 1.0
            judged_before = self._judged_sum + np.concatenate(([0.0], np.cumsum(values)[:-1]))
            self._betting.update(x, low=low, high=high, offset=-judged_before / left, scale=self.population / left,
                                 shift=shift)  # fmt: skip
        else:
            self._betting.update(x, low=low, high=high, shift=shift)
        self._judged_sum += float(np.sum(values))
        self._signal_judged += float(np.sum(signal))
        self._sums += np.array([np.sum(signal * signal), np.sum(values * signal), np.sum(values * values)])
        self.n += values.size
        self._look()
        if self.has_signal:
            self.weight = self._fitted_weight()

    def _controlled(
        self, values: NDArray[np.float64], signal: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The batch's control variates x with the range each was known to lie in before it was seen, and how far
        each one's null mean may shift (lambda times the signal's slack; population target)."""
        weight = self._item_weights(values, signal)
        k = values.size
        x, low, high = np.empty(k), np.empty(k), np.empty(k)
        remaining = self._remaining
        assert remaining is not None
        f_min, f_max = self._range
        centre = self.signal_total / self.population
        for j in range(k):  # sequential: each question's centre and range come from the questions before it
            if self.target == "questions":
                centre = remaining.total / (self.population - self.n - j)
                f_min, f_max = remaining.extremes
                remaining.remove(float(signal[j]))
            lam = float(weight[j])
            x[j] = values[j] - lam * (signal[j] - centre)
            low[j] = -1.0 - lam * (f_max - centre)
            high[j] = 1.0 - lam * (f_min - centre)
        return x, low, high, weight * self._slack

    def _look(self) -> None:
        self.low, self.high = self._betting.low, self._betting.high
        if self.target == "questions" and self.n == self.population:  # every question judged: the mean is known
            self.low = self.high = self._judged_sum / self.n
        self.estimate = self._point()

    @property
    def exact(self) -> bool:
        """The interval is the dataset's own mean, known exactly (questions target, every question judged)."""
        return self.target == "questions" and self.n == self.population

    def _point(self) -> float:
        """The prediction-powered estimate with the current weight: judged mean of d - lambda f plus lambda times
        the signal's mean (questions: the judged values themselves plus the estimate for the rest)."""
        lam = self.weight if self.has_signal else 0.0
        residual = (self._judged_sum - lam * self._signal_judged) / self.n
        if self.target == "population":
            return residual + lam * self.signal_total / self.population
        rest = self.population - self.n
        rest_signal = self.signal_total - self._signal_judged
        return (self._judged_sum + rest * residual + lam * rest_signal) / self.population

    def _moments(self) -> tuple[float, float, float]:
        """(var f, cov(d, f), var d) over the judged questions."""
        n = self.n
        mean_d, mean_f = self._judged_sum / n, self._signal_judged / n
        ff, df, dd = self._sums.tolist()
        return ((ff - n * mean_f**2) / (n - 1), (df - n * mean_d * mean_f) / (n - 1), (dd - n * mean_d**2) / (n - 1))

    def _item_weights(self, values: NDArray[np.float64], signal: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each question's weight from the questions judged before it (within the batch too: still predictable,
        as a weight depends only on earlier questions), so the first batch is not judged at weight 0 throughout."""
        before = self.n + np.arange(values.size, dtype=np.float64)  # questions judged before each one

        def cumulative(x: NDArray[np.float64], start: float) -> NDArray[np.float64]:
            return start + np.concatenate(([0.0], np.cumsum(x)[:-1]))

        sum_d, sum_f = cumulative(values, self._judged_sum), cumulative(signal, self._signal_judged)
        ff = cumulative(signal * signal, float(self._sums[0]))
        df = cumulative(values * signal, float(self._sums[1]))
        dd = cumulative(values * values, float(self._sums[2]))
        safe = np.maximum(before, 2.0)
        var_f = (ff - sum_f**2 / safe) / (safe - 1)
        cov = (df - sum_d * sum_f / safe) / (safe - 1)
        var_d = (dd - sum_d**2 / safe) / (safe - 1)
        return self._weights(before, var_f, cov, var_d)

    def _weights(
        self,
        n: NDArray[np.float64],
        var_f: NDArray[np.float64],
        cov: NDArray[np.float64],
        var_d: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """The weight after n judged questions with these moments (arrays, one per question): the one of
        WEIGHT_GRID with the largest expected log-growth (module docstring), 0 before MIN_FOR_WEIGHT questions or
        where the signal has not varied."""
        usable = (n >= MIN_FOR_WEIGHT) & (var_f > 1e-12)
        grid = WEIGHT_GRID[None, :]
        spread2 = np.maximum(var_d[:, None] - 2 * grid * cov[:, None] + grid**2 * var_f[:, None], 1e-6)
        # the deviation the sequence must resolve to settle: the distance of the mean so far from 0 (at least
        # MIN_DEVIATION), never more than its current half-width
        deviation = (self.high - self.low) / 2.0
        if self.n:
            deviation = min(deviation, max(abs(self._judged_sum / self.n), MIN_DEVIATION))
        effective = np.maximum(deviation - grid * self._slack, 0.0)
        f_min, f_max = self._range
        cap = MAX_HEDGED_BET / (1.0 + grid * (f_max - f_min) / 2.0)
        count = np.maximum(n, 1.0)[:, None]
        planned = np.sqrt(2.0 * math.log(2.0 / self.alpha) / (spread2 * count * np.log1p(count)))  # GridBetting's
        bet = np.minimum(np.minimum(planned, cap), effective / spread2)  # never more than the Kelly bet
        growth = bet * effective - bet * bet * spread2 / 2.0
        best = WEIGHT_GRID[np.argmax(growth, axis=1)]  # ties (no growth anywhere) go to the first: weight 0
        return np.where(usable, best, 0.0)

    def _fitted_weight(self) -> float:
        """The weight the next question would get (reported)."""
        if self.n < 2:
            return 0.0
        var_f, cov, var_d = self._moments()
        return float(self._weights(np.array([float(self.n)]), np.array([var_f]), np.array([cov]), np.array([var_d]))[0])

    @property
    def correlation(self) -> float | None:
        """The judged questions' correlation of d with the signal (None before three of them, or without one)."""
        if not self.has_signal or self.n < 3:
            return None
        var_f, cov, var_d = self._moments()
        if var_f <= 1e-12 or var_d <= 1e-12:
            return None
        return cov / math.sqrt(var_f * var_d)
