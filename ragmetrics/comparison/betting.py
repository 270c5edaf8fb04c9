"""Hedged-capital betting over a grid of candidate means: the one engine behind every anytime-valid sequence of
an adaptive night's pair and gate decisions.

Why betting: a confidence sequence built from the sample spread (a normal mixture, a t-interval re-read after
every batch) trusts that spread before the rare large values of tied, sparse or skewed scores have been seen,
and collapses to a point when every value so far is equal. A bettor's capital needs no spread estimate to be
valid: for bounded values it is a nonnegative supermartingale under the null whatever the bets (as long as they
are chosen before the value they bet on is seen), so by Ville's inequality P(ever >= 1/alpha) <= alpha at every
sample size, not only as the sample grows (Waudby-Smith and Ramdas, "Estimating means of bounded random
variables by betting", JRSS-B 2023, Theorem 3; the without-replacement form: "Confidence sequences for sampling
without replacement", NeurIPS 2020).

What it is fed, value by value, in judged order (every array one entry per value):

- ``x``: the observed value, known to lie in [``low``, ``high``] before it is seen (a predictable range);
- the value's conditional mean under a candidate theta: ``offset + scale * theta`` (i.i.d. draws: 0 + 1 * theta;
  without replacement from N: the mean of the values not yet drawn, an affine function of theta and the past);
- ``shift`` >= 0: how far that conditional mean may sit from ``offset + scale * theta`` for a reason outside the
  bet (a control variate's centre known only to within a bound): each bettor is tested against the end of that
  range least favourable to it, so its capital is never above the capital it would have had at the true mean.

For each theta on the grid two bettors hold capital K+ = prod (1 + l+ (x - m+)) and K- = prod (1 - l- (x - m-))
(m+ = m + shift, m- = m - shift); theta leaves the set once max(h K+, (1 - h) K-) >= 1/alpha (h = 1/2), and never
returns (the running intersection). The bet size is the predictable plug-in of the paper,
l = sqrt(2 log(2/alpha) / (s2 t log(1 + t))) with s2 the running spread estimate started at a prior (or, for a
fixed number of values known in advance, ``horizon``: l = sqrt(2 log(2/alpha) / (s2 horizon))), capped so that
no capital can go negative on any value of the range: l+ <= c / (m+ - low), l- <= c / (high - m-), c = 3/4. A
candidate whose conditional mean lies outside the value's range is impossible and leaves at once. The interval
is the outermost candidates still in the set widened by one grid step on each side, so a set of one candidate
is still an interval of two steps, never a point.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["GridBetting"]

MAX_HEDGED_BET = 0.75
"""c: a bet is at most c of the capital that the worst value of the range could take."""
GRID_POINTS = 2001


class GridBetting:
    """The hedged-capital confidence sequence of the module docstring for a mean in [`lower`, `upper`]."""

    def __init__(
        self,
        *,
        alpha: float,
        lower: float,
        upper: float,
        grid_points: int = GRID_POINTS,
        prior_variance: float | None = None,
        horizon: int | None = None,
        hedge: float = 0.5,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if not upper > lower:
            raise ValueError(f"upper ({upper}) must exceed lower ({lower})")
        if grid_points < 3:
            raise ValueError("grid_points must be at least 3")
        self.alpha = alpha
        self.hedge = hedge
        self.horizon = horizon
        self.grid = np.linspace(lower, upper, grid_points)[1:-1]
        self.step = float((upper - lower) / (grid_points - 1))
        self._log_plus = np.zeros(self.grid.size)
        self._log_minus = np.zeros(self.grid.size)
        self._alive = np.ones(self.grid.size, dtype=bool)
        self._prior = prior_variance if prior_variance is not None else ((upper - lower) / 2.0) ** 2
        self._centre = (lower + upper) / 2.0
        self._log_term = math.log(2.0 / alpha)
        self.n = 0
        self._sum = 0.0
        self._squares = 0.0  # sum of (x_i - running mean estimate)^2, for the bet sizes
        self.low, self.high = float(lower), float(upper)

    @property
    def estimate(self) -> float:
        """The mean of the values fed (not of theta unless every value's mean is theta)."""
        return self._sum / self.n if self.n else math.nan

    def bets(self, count: int, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """The predictable bet size of each of the next `count` values (each from the values before it), and the
        running spread estimate advanced over them."""
        sizes = np.empty(count)
        for i, value in enumerate(values.tolist()):
            t = self.n + 1
            spread = (self._prior + self._squares) / t
            span = float(self.horizon) if self.horizon is not None else t * math.log1p(t)
            sizes[i] = math.sqrt(2.0 * self._log_term / (spread * span))
            self.n = t
            self._sum += value
            self._squares += (value - (self._centre + self._sum) / (t + 1)) ** 2
        return sizes

    def update(
        self,
        x: ArrayLike,
        *,
        low: ArrayLike,
        high: ArrayLike,
        offset: ArrayLike = 0.0,
        scale: ArrayLike = 1.0,
        shift: ArrayLike = 0.0,
    ) -> None:
        values = np.asarray(x, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError("values must be one-dimensional")
        if not values.size:
            return
        k = values.size
        lo, hi, off, sc, sh = (np.broadcast_to(np.asarray(a, dtype=np.float64), (k,)) for a in (low, high, offset, scale, shift))
        if not np.all(np.isfinite(values)):
            raise ValueError("values must be finite")
        if np.any(values < lo - 1e-12) or np.any(values > hi + 1e-12):
            raise ValueError("a value lies outside the range it was declared to lie in")
        sizes = self.bets(k, values)
        live = np.flatnonzero(self._alive)
        if not live.size:
            return
        theta = self.grid[live][None, :]
        mean = off[:, None] + sc[:, None] * theta
        m_plus, m_minus = mean + sh[:, None], mean - sh[:, None]
        room_plus = m_plus - lo[:, None]  # how far the worst value lies below the null mean
        room_minus = hi[:, None] - m_minus
        impossible = ((room_plus < 0) | (room_minus < 0)).any(axis=0)  # a null mean the range cannot reach
        with np.errstate(divide="ignore", invalid="ignore"):
            bet_plus = np.minimum(sizes[:, None], MAX_HEDGED_BET / np.maximum(room_plus, 1e-12))
            bet_minus = np.minimum(sizes[:, None], MAX_HEDGED_BET / np.maximum(room_minus, 1e-12))
            gain_plus = np.log1p(np.maximum(bet_plus * (values[:, None] - m_plus), -MAX_HEDGED_BET)).sum(axis=0)
            gain_minus = np.log1p(np.maximum(-bet_minus * (values[:, None] - m_minus), -MAX_HEDGED_BET)).sum(axis=0)
        self._log_plus[live] += gain_plus
        self._log_minus[live] += gain_minus
        capital = np.maximum(
            math.log(self.hedge) + self._log_plus[live], math.log(1.0 - self.hedge) + self._log_minus[live]
        )
        self._alive[live] = (capital < math.log(1.0 / self.alpha)) & ~impossible
        inside = np.flatnonzero(self._alive)
        if inside.size:  # every candidate rejected: the bounds stay as they were (wider than needed, never narrower)
            self.low = max(self.low, float(self.grid[inside[0]]) - self.step)
            self.high = min(self.high, float(self.grid[inside[-1]]) + self.step)
