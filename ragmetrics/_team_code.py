"""What escapes from a team's own code (metrics, pipelines, generators) and what is let through.

Why: Python lets code leave by more than `Exception`. A team's metric or pipeline that calls `sys.exit(0)`
raises SystemExit; run in a worker thread, the future carries it back to the night's event loop, which then
ends with exit 0 and no report: a broken night reads as green. So every call into team code catches
BaseException, and only what a person or the runtime means as "stop" passes through: KeyboardInterrupt (a
real Ctrl-C still stops the night) and asyncio's cancellation (the night's own timeouts and shutdown).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = [
    "TEAM_CODE_TIMEOUT_S",
    "TeamCodeExit",
    "TeamCodeTimeout",
    "call_in_thread",
    "contained",
    "describe_escape",
    "is_stop_request",
]

TEAM_CODE_TIMEOUT_S = 60.0
"""How long one call of a team's metric may take by default (a metric's `timeout_s` overrides it)."""

T = TypeVar("T")


class TeamCodeExit(Exception):
    """A team's coroutine left by a BaseException (sys.exit): carried as an ordinary exception, since asyncio
    re-raises SystemExit from a task straight out of the event loop."""

    def __init__(self, escaped: BaseException) -> None:
        super().__init__(describe_escape(escaped))
        self.escaped = escaped


async def contained(awaitable: Awaitable[T]) -> T:
    """Await a team's coroutine inside this frame, so a SystemExit it raises becomes TeamCodeExit before it
    reaches the task that runs it; stop requests pass through."""
    try:
        return await awaitable
    except BaseException as exc:
        if is_stop_request(exc) or isinstance(exc, Exception):
            raise
        raise TeamCodeExit(exc) from None


def is_stop_request(exc: BaseException) -> bool:
    """Whether `exc` asks the night itself to stop (Ctrl-C, cancellation), rather than the team's code failing."""
    return isinstance(exc, KeyboardInterrupt | asyncio.CancelledError | GeneratorExit)


def describe_escape(exc: BaseException) -> str:
    """A one-line account of how the team's code left: its exception type and message, and for SystemExit the
    code it asked to exit with."""
    if isinstance(exc, TeamCodeExit):
        return str(exc)
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}); a metric or pipeline may not end the night"
    text = str(exc).strip().splitlines()
    return f"raised {type(exc).__name__}: {text[0][:300] if text else ''}"


class TeamCodeTimeout(Exception):
    """A team's function did not return in time; its thread is left to finish on its own (a daemon thread,
    so it cannot keep the process alive)."""


async def call_in_thread(function: Callable[..., T], *args: Any, timeout: float) -> T:
    """`function(*args)` in a daemon thread, awaited at most `timeout` seconds.

    Why not `asyncio.to_thread`: its worker threads are joined when the interpreter exits, so one call that
    never returns (an endless loop in a metric) would hang the night at its very end. A daemon thread is
    abandoned instead, and the sample fails with TeamCodeTimeout. Every escape of the call (SystemExit
    included) comes back as an exception of the awaiting task, never of the event loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done() and not timed_out:
            outcome()

    def hand_over(outcome: Callable[[], None]) -> None:
        # RuntimeError: the loop has closed; the call timed out long ago and nobody waits for it.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, outcome)

    def work() -> None:
        try:
            result = function(*args)
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            error = exc if isinstance(exc, Exception) or is_stop_request(exc) else TeamCodeExit(exc)
            hand_over(lambda: future.set_exception(error))
            return
        hand_over(lambda: future.set_result(result))

    timed_out = False
    threading.Thread(target=work, name="ragmetrics-team-code", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(future), timeout)
    except TimeoutError:
        timed_out = True  # a late outcome is dropped: nobody will retrieve it
        raise TeamCodeTimeout(f"did not return within {timeout:g} s") from None
