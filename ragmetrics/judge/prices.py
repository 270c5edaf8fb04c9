"""A judge's prices: USD per 1M tokens under known keys, checked wherever a judge is written (the night's
judge, a panel member, a cascade step, a `ragmetrics judges` candidate), so a bad price is an error at its own
key before any request is sent."""

from __future__ import annotations

from ragmetrics._numbers import number_problem

__all__ = ["PRICE_KEYS", "check_prices"]

PRICE_KEYS = ("prompt", "completion", "embedding")


def check_prices(value: dict[str, float] | None) -> dict[str, float] | None:
    """USD per 1M tokens under known keys, each finite and >= 0 (a judge's, a panel member's or a candidate's).

    An unknown key (say 'input', as some price lists call prompt tokens) would otherwise be ignored and the run
    would report a cost of 0 for the tokens it meant to price."""
    if value is None:
        return None
    unknown = sorted(set(value) - set(PRICE_KEYS))
    if unknown:
        raise ValueError(f"unknown price keys {unknown}; use {list(PRICE_KEYS)} (USD per 1M tokens)")
    negative = sorted(k for k, v in value.items() if not v >= 0)
    if negative:
        raise ValueError(f"prices must be finite and >= 0; check {negative}")
    for key, price in sorted(value.items()):
        problem = number_problem(price)  # 1e308 is finite, but its cost is not (ragmetrics._numbers)
        if problem is not None:
            raise ValueError(f"price {key!r}: {problem}")
    return value
