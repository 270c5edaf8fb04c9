"""The one bound on numbers that come from outside (a target's cost and tokens, a team metric's value, a price).

Why: finite is not enough. `cost: 1e308` is finite, but the mean of two such costs overflows to infinity, and
a price of 1e308 per million tokens prints "cost $inf". Every number that reaches a sum or a mean is therefore
finite and at most MAX_MAGNITUDE in size: 1e15 is beyond any real cost, token count or score, and a billion
such numbers still sum to a finite float.
"""

from __future__ import annotations

import math

__all__ = ["MAX_MAGNITUDE", "number_problem"]

MAX_MAGNITUDE = 1e15


def number_problem(value: object) -> str | None:
    """Why `value` cannot enter a mean (not a real number, not finite, or larger than MAX_MAGNITUDE), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{type(value).__name__} is not a number"
    try:
        number = float(value)
    except OverflowError:  # an int past float's range, such as 10**400
        return f"{value!r:.40} is beyond any float"
    if not math.isfinite(number):
        return f"{value!r} is not a finite number"
    if abs(number) > MAX_MAGNITUDE:
        return f"{value!r} is larger than {MAX_MAGNITUDE:g}, the bound on any number ragmetrics adds up"
    return None
