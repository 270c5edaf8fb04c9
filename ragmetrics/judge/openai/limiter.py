"""How many requests one endpoint gets at once: a bound that backs off when the server is overwhelmed.

Why not a fixed semaphore: many self-hosted servers (llama.cpp with one slot, Ollama, a small vLLM) compute
one or two requests at a time and queue the rest. Requests waiting in the server's queue count against the
client's timeout, so eight requests sent to a one-slot server mostly time out, and each retry queues again
behind the request the server is still computing for a client that gave up. The limit here follows
additive-increase / multiplicative-decrease (AIMD, as TCP congestion control does):

- **decrease** (halve, down to 1) when a request times out, is rate-limited (429) or the server says it is
  overloaded (503), or when latency climbs: the recent mean latency is more than `LATENCY_FACTOR` times the
  fastest recent request, the signature of requests waiting in a queue rather than being computed.
  At most one decrease per window (as many completions as the limit allowed), so one burst of timeouts
  from requests sent together halves the limit once, not once per request;
- **increase** by one after a window of `limit` successes without a decrease, up to `max_concurrency`.

The timeout of a request starts when it is sent: time spent waiting here for a free slot is not counted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

__all__ = ["LATENCY_FACTOR", "AdaptiveLimit", "Signal"]

logger = logging.getLogger("ragmetrics.judge")

LATENCY_FACTOR = 4.0
_LATENCY_WINDOW = 32
_MIN_SAMPLES = 8  # latencies needed before latency alone may lower the limit

Signal = Literal["ok", "overload", "neutral"]


class AdaptiveLimit:
    """An async bound on requests in flight whose size adapts to how the server copes (see module doc)."""

    def __init__(self, ceiling: int, *, adaptive: bool = True) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be at least 1, not {ceiling}")
        self.ceiling = ceiling
        self.adaptive = adaptive
        self.limit = ceiling
        self.in_flight = 0
        self.peak_in_flight = 0
        self.decreases = 0
        self.lowest = ceiling
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._latencies: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self._since_change = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one request slot for the duration of the block. Slots are handed out first come, first
        served: a task that just released one (to send its repair, say) queues behind those already waiting."""
        await self._acquire()
        try:
            yield
        finally:
            self.in_flight -= 1
            self._hand_out()

    async def _acquire(self) -> None:
        if not self._waiters and self.in_flight < self.limit:
            self._take()
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # granted as it was cancelled: pass the slot on
                self._hand_out()
            else:
                self._waiters.remove(waiter)
            raise

    def _take(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _hand_out(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)

    def record(self, signal: Signal, latency_s: float | None = None) -> None:
        """What one request's outcome says about the server: 'ok' (answered), 'overload' (timed out, 429,
        503), 'neutral' (an error that says nothing about load)."""
        if not self.adaptive or signal == "neutral":
            return
        self._since_change += 1
        if signal == "overload":
            self._decrease("requests time out or are refused for load")
            return
        if latency_s is not None:
            self._latencies.append(latency_s)
            if self._queueing():
                self._decrease("latency climbs as requests queue at the server")
                return
        if self._since_change >= self.limit and self.limit < self.ceiling:
            self.limit += 1
            self._since_change = 0
            self._hand_out()

    def _queueing(self) -> bool:
        if len(self._latencies) < _MIN_SAMPLES or self.limit == 1:
            return False
        recent = list(self._latencies)[-_MIN_SAMPLES:]
        fastest = min(self._latencies)
        return fastest > 0 and sum(recent) / len(recent) > LATENCY_FACTOR * fastest

    def _decrease(self, why: str) -> None:
        if self._since_change < self.limit and self.decreases:
            return  # this window already decreased: outcomes of requests sent together count once
        new = max(1, self.limit // 2)
        if new < self.limit:
            logger.info("requests in flight %d -> %d: %s", self.limit, new, why)
            self.limit = new
            self.lowest = min(self.lowest, new)
        self.decreases += 1
        self._since_change = 0
        self._latencies.clear()
