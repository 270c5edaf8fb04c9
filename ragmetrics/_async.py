"""Run a coroutine to completion from synchronous code, inside or outside a running event loop.

Library entry points (`evaluate_rag`, the nightly pipeline) are synchronous for scripts and CI, but they may
be called from a notebook or an async web handler whose loop is already running, where `asyncio.run` refuses
to start. Then the coroutine runs on a private loop in a worker thread, and the caller blocks until it ends.

`request_stop()` stops whatever runs here the way Ctrl-C stops `asyncio.run`: its main task is cancelled, so
calls in flight finish into the cache, and `run_sync` then raises KeyboardInterrupt. The CLI uses it for
SIGTERM when SIGINT is ignored (a night started as a background job by a script): raising KeyboardInterrupt
into whichever task happens to run would lose verdicts in flight and print "Task exception was never
retrieved".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["request_stop", "run_sync"]

T = TypeVar("T")

_lock = threading.Lock()
_running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []
_stopped: set[int] = set()  # id() of the main tasks request_stop cancelled


def request_stop() -> bool:
    """Cancel every main task `run_sync` is running; True if there was one (else the caller stops itself)."""
    with _lock:
        running = list(_running)
        _stopped.update(id(task) for _, task in running)
    for loop, task in running:
        loop.call_soon_threadsafe(task.cancel)
    return bool(running)


async def _main(coroutine: Coroutine[Any, Any, T]) -> T:
    task = asyncio.current_task()
    assert task is not None
    entry = (asyncio.get_running_loop(), task)
    with _lock:
        _running.append(entry)
    try:
        return await coroutine
    except asyncio.CancelledError:
        with _lock:
            stopped = id(task) in _stopped
            _stopped.discard(id(task))
        if stopped:
            raise KeyboardInterrupt("stop requested") from None
        raise
    finally:
        with _lock:
            _running.remove(entry)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on a new event loop and return its result (re-raising its exception)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_main(coroutine))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmetrics-sync") as pool:
        return pool.submit(asyncio.run, _main(coroutine)).result()
