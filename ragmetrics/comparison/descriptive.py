"""Per-run, per-metric summary statistics: what a team looks at before any test.

`std` is the sample standard deviation (ddof=1), 0 for a single value; quartiles use linear
interpolation between order statistics (numpy's default, Hyndman-Fan type 7). Failed scores (None)
are counted in `failures` and left out of every statistic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragmetrics.schema import DescriptiveStats


def describe(values: Sequence[float | None], *, not_applicable: int = 0) -> DescriptiveStats | None:
    """Statistics of the non-failed values; None when every value failed (nothing to describe).

    `not_applicable` of the None values are scores that do not apply (a refusal's faithfulness), counted
    apart from failures."""
    present = np.asarray([v for v in values if v is not None], dtype=np.float64)
    failures = len(values) - present.size - not_applicable
    if present.size == 0:
        return None
    q1, median, q3 = np.quantile(present, [0.25, 0.5, 0.75])
    return DescriptiveStats(
        count=int(present.size),
        failures=failures,
        not_applicable=not_applicable,
        mean=float(np.mean(present)),
        std=float(np.std(present, ddof=1)) if present.size > 1 else 0.0,
        min=float(np.min(present)),
        q1=float(q1),
        median=float(median),
        q3=float(q3),
        max=float(np.max(present)),
    )
