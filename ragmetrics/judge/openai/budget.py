"""One cap on the requests of several judges together: a cascade's judges, or a panel's members, in a budgeted
night (`judge.adaptive.max_calls`).

Each judge's transport has its own cap (`JudgeSettings.max_requests`), on its own requests. A night that runs
several judges under one budget needs the cap shared: K judges each capped at the budget could together send
K times it. A `RequestBudget` is handed to every judge that shares it; a request is counted against it when it
is sent (each attempt: a retry or a repair is a request the server receives), and one past the limit is not
sent and fails with cause budget_reached, as a judge's own cap does.

Counting and checking happen without an `await` between them, so requests in flight on one event loop never
take the last unit twice. The Batch API queue reserves its gathered requests against the budget of its own
judge only (`BatchQueue`); judges sharing a budget score one after another (a cascade's views do), so no two
queues gather at once.
"""

from __future__ import annotations

from ragmetrics.errors import JudgeError

__all__ = ["RequestBudget"]


class RequestBudget:
    """At most `limit` requests over every judge holding this budget (None: no limit, only counted)."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"a request budget must be >= 0, got {limit}")
        self.limit = limit
        self.spent = 0

    def left(self) -> int | None:
        return None if self.limit is None else max(self.limit - self.spent, 0)

    def take(self, what: str, *, reserved: int = 0) -> None:
        """Count one request about to be sent, or raise JudgeError (budget_reached) when the budget, less
        `reserved` requests promised elsewhere (a batch's gathered ones), has none left."""
        self.check(what, reserved=reserved)
        self.spent += 1

    def check(self, what: str, *, reserved: int = 0) -> None:
        if self.limit is not None and self.spent + reserved >= self.limit:
            raise JudgeError(
                f"{what}: not sent: the shared budget of {self.limit} judge requests is spent",
                cause="budget_reached",
            )
