"""Comparing runs: paired significance tests, multiple-testing corrections, descriptive statistics, reports.

Imports stay lazy so that `ragmetrics.compare.report` can be used without loading numba or scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "compare": "ragmetrics.compare.api",
    "compare_results": "ragmetrics.compare.api",
    "format_results": "ragmetrics.compare.report",
}

__all__ = ["compare", "compare_results", "format_results"]

if TYPE_CHECKING:
    from ragmetrics.compare.api import compare, compare_results
    from ragmetrics.compare.report import format_results


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics.compare' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
