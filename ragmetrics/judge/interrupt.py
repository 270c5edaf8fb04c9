"""Once a run is interrupted, no new judge request is sent.

Ctrl-C or SIGTERM cancels an evaluation's workers, while the units already under way are left to finish so the
verdicts already paid for reach the cache (see `evaluate.aevaluate_rag`). A unit may still need more requests
(a metric of several steps, a retry, a request waiting for a concurrency slot); those must not go out, or an
interrupted run keeps spending. Each evaluation owns one `StopFlag`, reachable from every task it starts
through a context variable; the transport checks it before each request and ends the unit as cancelled (never
as a recorded judge failure, so a rerun asks for it again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class StopFlag:
    """Set once the evaluation that owns it is interrupted."""

    stopped: bool = False


_current: ContextVar[StopFlag | None] = ContextVar("ragmetrics_stop_flag", default=None)


@contextmanager
def stop_scope() -> Iterator[StopFlag]:
    """A fresh flag for the tasks started inside this block (they copy the context when created)."""
    flag = StopFlag()
    token = _current.set(flag)
    try:
        yield flag
    finally:
        _current.reset(token)


def raise_if_stopped() -> None:
    """Called before a request is sent: an interrupted evaluation's unit ends here, as cancelled."""
    flag = _current.get()
    if flag is not None and flag.stopped:
        raise asyncio.CancelledError("the run was interrupted: no new judge request is sent")
