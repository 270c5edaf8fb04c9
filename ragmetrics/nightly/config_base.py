"""What every section of a nightly config shares: unknown keys and NaN refused, and lists of metric names
checked one by one, so an error points at the entry (``retrieval.metrics[2]: unknown metric 'ndgc@10'``).

Apart from the sections themselves so each section's module can build on it without importing another."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN would silently turn a comparison off


def _check_names(names: list[str], check: Callable[[str], str | None]) -> list[str]:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(f"[{i}]: metric {name!r} is listed twice")
        seen.add(name)
        problem = check(name)
        if problem is not None:
            raise ValueError(f"[{i}]: {problem}")
    return names
