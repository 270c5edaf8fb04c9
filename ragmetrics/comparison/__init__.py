"""Comparing runs: paired significance tests, multiple-testing corrections, descriptive statistics, reports.

Imports stay lazy so that `ragmetrics.render.tables` can be used without loading numba or scipy.
The package is not named `compare` so that it can never shadow the public function `ragmetrics.compare`
(importing a submodule binds the package to its parent's attribute of the same name).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "compare": "ragmetrics.comparison.api",
    "compare_results": "ragmetrics.comparison.api",
    "format_results": "ragmetrics.render.tables",
    "format_report": "ragmetrics.render.tables",
}

__all__ = ["compare", "compare_results", "format_report", "format_results"]

if TYPE_CHECKING:
    from ragmetrics.comparison.api import compare, compare_results
    from ragmetrics.render.tables import format_report, format_results


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics.comparison' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
