"""One cap on the requests of several judges together: a cascade's judges, or a panel's members, in a budgeted
night (`judge.adaptive.max_calls`).

Each judge's transport has its own cap (`JudgeSettings.max_requests`), on its own requests. A night that runs
several judges under one budget needs the cap shared: K judges each capped at the budget could together send
K times it. A `RequestBudget` is handed to every judge that shares it; a request is counted against it when it
is sent (each attempt: a retry or a repair is a request the server receives), and one past the limit is not
sent and fails with cause budget_reached, as a judge's own cap does.

A Batch API request is answered long after it is gathered, so it is held against the budget from the moment
it joins a batch until its answer (`hold`, then `settle`): a panel's members judge side by side, so their
queues gather and wait at once, and each must see the others' requests, not only its own.

Counting and checking happen without an `await` between them, under a lock, so requests in flight on one
event loop, or judges on loops in other threads, never take the last unit twice.
"""

from __future__ import annotations

import threading

from ragmetrics.errors import JudgeError

__all__ = ["RequestBudget"]


class RequestBudget:
    """At most `limit` requests over every judge holding this budget (None: no limit, only counted)."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"a request budget must be >= 0, got {limit}")
        self.limit = limit
        self.spent = 0
        """requests sent (each attempt), and batch requests answered"""
        self.held = 0
        """batch requests gathered or submitted and not answered yet: promised, so no one else may take them"""
        self._lock = threading.Lock()

    def left(self) -> int | None:
        return None if self.limit is None else max(self.limit - self.spent - self.held, 0)

    def take(self, what: str) -> None:
        """Count one request about to be sent, or raise JudgeError (budget_reached) when none is left."""
        with self._lock:
            self._check(what)
            self.spent += 1

    def hold(self, what: str) -> None:
        """Hold one unit for a batch request about to be gathered (JudgeError when none is left); `settle`
        ends the hold when the batch answers it or gives up on it."""
        with self._lock:
            self._check(what)
            self.held += 1

    def settle(self, *, answered: bool) -> None:
        """End one hold: counted as spent when the request was answered, given back when it was not."""
        with self._lock:
            if self.held <= 0:
                raise RuntimeError("a request budget settled more holds than it gave")
            self.held -= 1
            if answered:
                self.spent += 1

    def _check(self, what: str) -> None:
        if self.limit is not None and self.spent + self.held >= self.limit:
            raise JudgeError(
                f"{what}: not sent: the shared budget of {self.limit} judge requests is spent",
                cause="budget_reached",
            )
