"""A prediction-powered, anytime-valid confidence sequence for a mean judged one question at a time, helped by a
free signal known on every question (the local judge's score, a retrieval metric).

An adaptive night judges questions in a random order. Every question also has a free signal f that predicts its
judged value d (d: a paired difference of two runs' judge scores, or of tonight's score and the baseline's; f: the
same difference of the free signal). With a weight lambda the judged values are replaced by

    x_i = d_i - lambda_i (f_i - c_i)

where c_i is a centre the signal's mean is known about: x_i has the same mean as d_i (up to what c_i leaves
unknown, below) and, when f predicts d, a smaller spread: var(d - lambda f) = var(d) (1 - rho^2) at the best
lambda = cov(d, f) / var(f). That is the control-variate (prediction-powered, PPI++) estimator; its weight is
tuned from the questions judged *before* each batch (predictable, as a sequence requires), clipped to [0, 1],
so a signal that predicts nothing gets a weight near 0 and the sequence is that of d alone (for the population
target, the weight that makes the interval narrowest once the signal's own slack, below, is counted).

Two targets (`target`):

- ``population`` (the full night's paired test asks this: would the difference hold on other questions of the
  kind?): the judged questions are i.i.d. draws, c_i = F, the signal's mean over all N questions. F is itself
  an estimate of the signal's population mean, off by at most b = z_{alpha_f/2} s_f / sqrt(N) with probability
  1 - alpha_f (one fixed look at N values: a normal interval), so the sequence for the mean of x is widened by
  mean(lambda) * b. With lambda = 0 nothing is added.
- ``questions`` (the mean over the dataset's own N questions, as a fixed regression set is read): draws without
  replacement; c_i = the mean of f over the questions not yet judged before draw i, known exactly, so
  E[x_i | past] = (N theta - D_{i-1}) / (N - i + 1) with D the judged values' sum, and the sequence is the
  without-replacement one of Waudby-Smith and Ramdas (NeurIPS 2020): theta in
  (sum_i (x_i + D_{i-1}/(N-i+1)) +- B_t) / sum_i N/(N-i+1), exact once every question is judged.

The boundary B_t is the two-sided normal-mixture (Robbins) margin of the asymptotic confidence sequences of
Waudby-Smith, Arnold, Wu, Wang and Ramdas ("Time-uniform central limit theory and asymptotic confidence
sequences", Annals of Statistics 2024): for a martingale with increments of variance sigma^2,

    B_t = sigma_t sqrt( 2 (t rho^2 + 1) / rho^2 * log( sqrt(t rho^2 + 1) / alpha ) ),
    rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / t_opt,

sigma_t the spread of x over the questions judged so far. It needs no bound on the values (a control-variate
residual has a wide worst case and a small spread, where a betting sequence's caps bind), at the price of being
valid as the number of questions grows rather than at every size: the simulation (benchmarks/sim_adaptive.py)
measures its error rate at N = 200 to 5,000. The reported interval is the running intersection.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["PredictionPoweredSequence", "Target", "mixture_margin"]

Target = Literal["population", "questions"]

SIGNAL_ALPHA_SHARE = 0.1
"""The part of a decision's alpha spent on the signal's own mean (population target): 10 % of it, so a signal
that predicts nothing costs a sequence at 0.9 alpha instead of alpha (a few per cent more questions)."""
WEIGHT_GRID = np.linspace(0.0, 1.0, 41)
"""The weights the population target chooses among."""
MIN_FOR_WEIGHT = 20
"""Questions judged before the signal's weight is fitted; until then the weight is 0."""


def mixture_margin(t: int, sigma: float, alpha: float, t_opt: float) -> float:
    """B_t of the module docstring: the half-width, on the scale of a sum of t increments of spread sigma, of
    the two-sided normal-mixture boundary tuned to be tightest near t_opt."""
    log_alpha = -2.0 * math.log(alpha)
    rho2 = (log_alpha + math.log(log_alpha + 1.0)) / max(t_opt, 1.0)
    grown = t * rho2 + 1.0
    return sigma * math.sqrt(2.0 * grown / rho2 * math.log(math.sqrt(grown) / alpha))


class PredictionPoweredSequence:
    """The sequence of the module docstring for one decision: fed each batch's judged values `d` with their
    signals `f` (in judged order); `signal_total` is the sum of the signal over all `population` questions,
    `signal_sd` its spread over them (None: no signal, the sequence of d alone)."""

    def __init__(
        self,
        *,
        alpha: float,
        population: int,
        target: Target = "population",
        signal_total: float | None = None,
        signal_sd: float | None = None,
        t_opt: float | None = None,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if population < 1:
            raise ValueError("population must be at least 1")
        self.population = population
        self.target: Target = target
        self.has_signal = signal_total is not None
        self.signal_total = signal_total or 0.0
        signal_part = SIGNAL_ALPHA_SHARE * alpha if self.has_signal and target == "population" else 0.0
        self.alpha = alpha - signal_part
        # How far the signal's mean over the N questions may sit from its population mean (population target).
        self._signal_slack = (
            NormalDist().inv_cdf(1 - signal_part / 2) * (signal_sd or 0.0) / math.sqrt(population)
            if signal_part
            else 0.0
        )
        self.t_opt = t_opt if t_opt is not None else max(population / 4.0, 50.0)
        self.weight = 0.0
        """lambda the next question would get (fitted on the questions judged so far)."""
        self.n = 0
        self._judged_sum = 0.0  # D: the judged values' sum
        self._signal_judged = 0.0  # their signals' sum
        self._sums = np.zeros(3)  # sum f^2, sum d f, sum d^2 over the judged questions
        self._weight_squares = 0.0
        self._centre_sum = 0.0  # sum_i (x_i + D_{i-1}/(N-i+1)) (questions) or sum_i x_i (population)
        self._scale = 0.0  # sum_i N/(N-i+1) (questions) or t (population)
        self._weights_sum = 0.0
        self.estimate = math.nan
        self.low, self.high = -math.inf, math.inf

    def update(self, d: ArrayLike, f: ArrayLike | None = None) -> None:
        values = np.asarray(d, dtype=np.float64)
        signal = np.zeros_like(values) if f is None else np.asarray(f, dtype=np.float64)
        if values.shape != signal.shape or values.ndim != 1:
            raise ValueError("d and f must be one-dimensional and of one length")
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(signal))):
            raise ValueError("d and f must be finite")
        if self.n + values.size > self.population:
            raise ValueError(f"more than {self.population} questions judged from a population of {self.population}")
        if not values.size:
            return
        weight = self._item_weights(values, signal) if self.has_signal else np.zeros_like(values)
        i = self.n + 1 + np.arange(values.size, dtype=np.float64)  # 1-based draw numbers
        remaining = self.population - i + 1.0
        judged_before = self._judged_sum + np.concatenate(([0.0], np.cumsum(values)[:-1]))
        signal_before = self._signal_judged + np.concatenate(([0.0], np.cumsum(signal)[:-1]))
        if self.target == "questions":
            x = values - weight * (signal - (self.signal_total - signal_before) / remaining)
            self._centre_sum += float(np.sum(x + judged_before / remaining))
            self._scale += float(np.sum(self.population / remaining))
        else:
            x = values - weight * (signal - self.signal_total / self.population)
            self._centre_sum += float(np.sum(x))
            self._scale += float(values.size)
        self._weights_sum += float(np.sum(weight))
        self._weight_squares += float(np.sum(weight * weight))
        self._judged_sum += float(np.sum(values))
        self._signal_judged += float(np.sum(signal))
        self._sums += np.array([np.sum(signal * signal), np.sum(values * signal), np.sum(values * values)])
        self.n += values.size
        self._look()
        if self.has_signal:
            self.weight = self._fitted_weight()

    def _look(self) -> None:
        n = self.n
        spread = math.sqrt(self._increment_variance()) if n > 1 else 1.0
        margin = mixture_margin(n, max(spread, 1e-12), self.alpha, self.t_opt) / self._scale
        centre = self._centre_sum / self._scale
        slack = self._weights_sum / n * self._signal_slack
        low, high = centre - margin - slack, centre + margin + slack
        if self.target == "questions" and n == self.population:  # every question judged: the mean is known
            low = high = self._judged_sum / n
        self.low, self.high = max(self.low, low), min(self.high, high)
        if self.high < self.low:  # intervals that stopped overlapping (only by chance): keep the last one
            self.low, self.high = low, high
        self.estimate = self._point()

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

    def _increment_variance(self) -> float:
        """The mean variance of x over the judged questions, each with the weight it was judged with:
        var(d) - 2 mean(lambda) cov(d, f) + mean(lambda^2) var(f), from all judged questions' moments (an early
        batch judged with weight 0 is not taken as a sample of the later, narrower residuals)."""
        var_f, cov, var_d = self._moments()
        n = self.n
        return max(var_d - 2 * self._weights_sum / n * cov + self._weight_squares / n * var_f, 1e-24)

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
        """The weight after n judged questions with these moments (arrays, one per question). Questions target:
        the PPI++ power-tuning weight cov(d, f) / var(f), clipped to [0, 1]. Population target: the weight in
        [0, 1] whose interval would be narrowest now, the mixture margin of var(d - lambda f) plus lambda times
        the signal's own slack, so a signal whose help is smaller than its slack gets weight 0 (the sequence of
        d alone)."""
        usable = (n >= MIN_FOR_WEIGHT) & (var_f > 1e-12)
        if self.target == "questions":
            return np.where(usable, np.clip(cov / np.where(usable, var_f, 1.0), 0.0, 1.0), 0.0)
        grid = WEIGHT_GRID[None, :]
        spread = np.sqrt(np.maximum(var_d[:, None] - 2 * grid * cov[:, None] + grid**2 * var_f[:, None], 1e-24))
        unit = np.array([mixture_margin(int(k), 1.0, self.alpha, self.t_opt) / k for k in np.maximum(n, 1)])
        best = WEIGHT_GRID[np.argmin(unit[:, None] * spread + grid * self._signal_slack, axis=1)]
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
