"""A circuit breaker for one endpoint: stop asking a judge that is not there.

Without it, every request of a night against a dead endpoint (a closed port, a revoked key, a server down)
went through its own retries: 150 questions took close to four minutes to fail, 1,000 would take half an hour
of CI. The breaker counts every attempt that ends in an endpoint fault (connection refused or reset, timeout,
server error, rate limit, a refused key); a success resets the count. It opens when the faults have run on
for at least `failures` attempts *and* `min_outage_s` seconds with no success between them (so a blip of a
few seconds, which the retries ride out, does not end a night), or when at least 80 % of the last 50 attempts
failed. While open, a request is not sent: it fails at once (`BreakerOpen`, with the cause of the faults that
opened it, saying so), so the night records every unit as failed with its cause and exits 3 within seconds.
A fault of one sample (a bad request, an invalid verdict) never counts: the endpoint answered. It stays open
for the rest of the run (a rerun tries again, and its cache keeps what was judged).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ragmetrics.errors import FailureCause, JudgeError

__all__ = ["ENDPOINT_CAUSES", "Breaker", "BreakerOpen"]

ENDPOINT_CAUSES: frozenset[str] = frozenset({"connection", "timeout", "server_error", "rate_limited", "auth"})
WINDOW = 50
WINDOW_SHARE = 0.8


class BreakerOpen(JudgeError):
    """A request not sent because the endpoint's breaker is open: never recorded as the unit's own failure."""


@dataclass
class Breaker:
    """Counts endpoint faults per attempt (module docstring); `check` raises once it is open."""

    failures: int = 10
    min_outage_s: float = 10.0
    name: str = "the judge endpoint"
    clock: Callable[[], float] = time.monotonic
    in_a_row: int = 0
    streak_start: float | None = None
    recent: deque[bool] = field(default_factory=lambda: deque(maxlen=WINDOW))
    opened: tuple[FailureCause, str] | None = None

    def check(self, what: str) -> None:
        if self.opened is not None:
            cause, why = self.opened
            raise BreakerOpen(f"{what}: not sent: {why}", cause=cause)

    def success(self) -> None:
        self.in_a_row = 0
        self.streak_start = None
        self.recent.append(True)

    def failure(self, cause: FailureCause, detail: str) -> None:
        """One failed attempt."""
        if cause not in ENDPOINT_CAUSES:
            self.recent.append(True)  # the endpoint answered; the sample was the problem
            return
        now = self.clock()
        if self.streak_start is None:
            self.streak_start = now
        self.in_a_row += 1
        self.recent.append(False)
        if self.opened is not None:
            return
        lasted = now - self.streak_start
        bad = sum(1 for ok in self.recent if not ok)
        if self.in_a_row >= self.failures and lasted >= self.min_outage_s:
            streak = f"{self.in_a_row} attempts in a row over {lasted:.0f} s"
        elif len(self.recent) == WINDOW and bad >= WINDOW_SHARE * WINDOW:
            streak = f"{bad} of the last {WINDOW} attempts"
        else:
            return
        self.opened = (
            cause,
            f"{self.name} stopped answering ({streak} failed; last: {detail}); the rest of this run is "
            "not asked (circuit breaker; a rerun tries again)",
        )
