"""Comparing runs: paired significance tests, multiple-testing corrections, descriptive statistics, reports.

Imports stay lazy so that `ragmetrics.compare.report` can be used without loading numba or scipy.

The package shares its name with the public function `ragmetrics.compare`. Once any submodule is
imported, Python binds the attribute `ragmetrics.compare` to this package, so
`from ragmetrics import compare` could yield the package instead of the function. To keep the public
API stable whatever the import order, the package itself is callable and forwards to
`ragmetrics.compare.api.compare`.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "compare": "ragmetrics.compare.api",
    "compare_results": "ragmetrics.compare.api",
    "format_results": "ragmetrics.compare.report",
    "format_report": "ragmetrics.compare.report",
}

__all__ = ["compare", "compare_results", "format_report", "format_results"]

if TYPE_CHECKING:
    from ragmetrics.compare.api import compare, compare_results
    from ragmetrics.compare.report import format_report, format_results


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics.compare' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _CallablePackage(types.ModuleType):
    """This package, callable as `compare(qrels, runs, metrics, ...)`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ragmetrics.compare.api import compare as compare_function

        return compare_function(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
