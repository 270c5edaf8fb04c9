"""Run a coroutine to completion from synchronous code, inside or outside a running event loop.

Library entry points (`evaluate_rag`, the nightly pipeline) are synchronous for scripts and CI, but they may
be called from a notebook or an async web handler whose loop is already running, where `asyncio.run` refuses
to start. Then the coroutine runs on a private loop in a worker thread, and the caller blocks until it ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on a new event loop and return its result (re-raising its exception)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmetrics-sync") as pool:
        return pool.submit(asyncio.run, coroutine).result()
