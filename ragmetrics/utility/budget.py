"""The budget of a utility build: at most so many generator calls and so many USD, never exceeded.

Apart from build.py so the build stays one job: each call is taken from the budget before it is sent, its cost
reserved at the generator's bound and settled at what the server says it cost (docs/utilities.md, "Budget and
dry run")."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from ragmetrics.errors import InputError

__all__ = ["Budget"]


@dataclass
class Budget:
    """At most `max_requests` generator calls and `max_cost` USD (None: no limit). A call is taken before it is
    sent, its cost reserved at the generator's bound and settled at its actual cost once answered, so the
    spent plus the reserved never passes `max_cost`."""

    max_requests: int | None = None
    max_cost: float | None = None
    requests: int = 0
    spent: float = 0.0
    reserved: float = 0.0
    _settled: asyncio.Event | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_requests is not None and self.max_requests < 0:
            raise InputError(f"max_requests must be >= 0, got {self.max_requests}", field="max_requests")
        if self.max_cost is not None and (not math.isfinite(self.max_cost) or self.max_cost < 0):
            raise InputError(f"max_cost must be a number >= 0, got {self.max_cost}", field="max_cost")

    def take(self, reservation: float) -> bool | None:
        """True: the call is taken; False: the budget cannot pay for it; None: it can only once the calls in
        flight have settled (their reservations are above what they will likely cost): wait and ask again."""
        if self.max_requests is not None and self.requests >= self.max_requests:
            return False
        if self.max_cost is not None and self.spent + self.reserved + reservation > self.max_cost:
            return None if self.reserved > 0 and self.spent + reservation <= self.max_cost else False
        self.requests += 1
        self.reserved += reservation
        return True

    def settle(self, reservation: float, actual: float) -> None:
        """Replace a call's reservation by what the server says it cost. That is at most the reservation for a
        server that keeps to max_tokens; one that reports more is counted at what it reports (the budget then
        stops the next calls), never at the smaller bound."""
        self.reserved = max(0.0, self.reserved - reservation)
        self.spent += actual
        if self._settled is not None:
            self._settled.set()

    async def acquire(self, reservation: float) -> bool:
        """`take`, waiting for calls in flight to settle while only their reservations stand in the way."""
        while True:
            taken = self.take(reservation)
            if taken is not None:
                return taken
            self._settled = self._settled or asyncio.Event()
            self._settled.clear()
            await self._settled.wait()
