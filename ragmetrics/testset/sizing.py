"""How many questions a test set needs: from a pilot's paired differences, the paired t-test's sample size.

A pilot is any report with per-question scores (a small hand-made or generated set run through
`ragmetrics run` or `compare`). With two or more runs, the standard deviation of the per-question differences
of each pair decides (the largest one, so every pair is covered); with one run, only the spread of its
scores is known, and the differences of two systems are taken as if uncorrelated (sd x sqrt 2), which
overstates the size a correlated pair needs: the message says so. The level is the report's alpha.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from ragmetrics.comparison.power import questions_needed as paired_questions_needed
from ragmetrics.errors import InputError
from ragmetrics.schema import Report

__all__ = ["questions_for_delta"]


def questions_for_delta(report: Report, *, metric: str | None, delta: float, power: float) -> tuple[int, str]:
    """(questions needed, a sentence saying how it was worked out)."""
    if not delta > 0 or not math.isfinite(delta):
        raise InputError(f"the difference to detect must be a positive number, got {delta}", field="--delta")
    if not 0 < power < 1:
        raise InputError(f"power must be in (0, 1), got {power}", field="--power")
    name = metric or (report.metrics[0] if report.metrics else None)
    if name is None or name not in report.metrics:
        raise InputError(f"the pilot has no metric {name!r}; it has {report.metrics}", field="--metric")
    alpha = float(report.settings.alpha)
    scores: dict[str, dict[str, float]] = {
        run.name: {q: float(value) for q, v in run.per_query.items() if (value := v.get(name)) is not None}
        for run in report.runs
    }
    scores = {k: v for k, v in scores.items() if v}
    if not scores:
        raise InputError(f"the pilot has no per-question {name} scores", field="--size-from")
    if len(scores) >= 2:
        sds = []
        for a, b in combinations(scores, 2):
            shared = sorted(set(scores[a]) & set(scores[b]))
            if len(shared) >= 2:
                diffs = np.array([scores[a][q] - scores[b][q] for q in shared])
                sds.append((float(diffs.std(ddof=1)), a, b, len(shared)))
        if not sds:
            raise InputError("the pilot's runs share fewer than two questions", field="--size-from")
        sd, a, b, n = max(sds)
        how = f"pair {a} vs {b} ({n} shared questions)"
    else:
        ((run, values),) = scores.items()
        if len(values) < 2:
            raise InputError("the pilot has fewer than two questions", field="--size-from")
        sd = float(np.std(list(values.values()), ddof=1)) * math.sqrt(2)
        how = f"one run ({run}); differences taken as uncorrelated (sd x sqrt 2), which overstates the size"
    needed = paired_questions_needed(delta, sd, alpha, power)
    if needed is None:
        raise InputError(
            f"detecting {delta} on {name} needs more questions than can be planned (sd of differences {sd:.3f})",
            field="--delta",
        )
    return needed, (
        f"size {needed}: a paired t-test detects a difference of {delta} in {name} with power {power} at alpha "
        f"{alpha} when the per-question differences have sd {sd:.3f}, from the pilot's {how}"
    )
