"""Comparing already-scored runs: paired significance tests, multiple-testing corrections, bootstrap CIs,
alignment and descriptive statistics.

It compares `RunResult`s whatever scored them and imports no scorer; `ragmetrics.compare` (in
`ragmetrics.api`) scores runs first. Tables and plots are `ragmetrics.render`'s. Imports stay lazy so that
importing the package loads neither numba nor scipy. The package is not named `compare` so that it can
never shadow the public function `ragmetrics.compare`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "compare_results": "ragmetrics.comparison.pairs",
}

__all__ = ["compare_results"]

if TYPE_CHECKING:
    from ragmetrics.comparison.pairs import compare_results


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics.comparison' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
