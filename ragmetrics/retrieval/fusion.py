"""Run fusion: several rankings of the same queries combined into one (hybrid BM25 + dense retrieval).

Methods (the fused score of a document for a query; a run that did not retrieve it contributes nothing):
- ``rrf``: reciprocal rank fusion, sum over runs of 1 / (k + rank), rank from 1 in the run's own ranking,
  k = 60 by default (Cormack, Clarke and Büttcher, SIGIR 2009); scores and normalisation are not used.
- ``combsum``: sum of the normalised scores; ``combmnz``: that sum times the number of runs that retrieved
  the document; ``combmax``: their maximum (Fox and Shaw, TREC-2, 1994).
- ``wsum``: the weighted sum of the normalised scores, one weight per run.

Normalisations, per query and per run, applied before combining: ``none``; ``min-max``: (s - min) /
(max - min); ``zmuv``: (s - mean) / std (population std, z-score); ``max``: s / max; ``sum``: (s - min) /
sum of (s - min), so the shifted scores sum to 1;
``rank``: 1 - (rank - 1) / n. A zero denominator is replaced by 1e-9, as ranx does, so a query whose run
gives every document the same score normalises to 0 (min-max) instead of dividing by zero.

Conventions, and where they differ from ranx (`ranx.fuse`): the queries are the union of the runs' queries
(ranx fuses the first run's queries only); a run's ranking is its stored one, ties broken by document id
descending as everywhere in ragmetrics (ranx leaves the order of tied documents unspecified); the fused run
is ranked by the same rule. With ties absent, and the same queries in every run, values equal ranx's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ragmetrics.errors import InputError
from ragmetrics.options import FUSION_METHODS as METHODS
from ragmetrics.options import FUSION_NORMS as NORMS
from ragmetrics.options import FusionMethod
from ragmetrics.options import FusionNorm as Norm
from ragmetrics.retrieval.run import Run

__all__ = ["METHODS", "NORMS", "FusionMethod", "Norm", "fuse"]
_EPSILON = 1e-9


def _normalise(scores: list[float], norm: str) -> list[float]:
    n = len(scores)
    if norm == "none" or n == 0:
        return list(scores)
    if norm == "rank":
        return [1.0 - i / n for i in range(n)]
    if norm == "min-max":
        low, high = min(scores), max(scores)
        return [(s - low) / max(high - low, _EPSILON) for s in scores]
    if norm == "max":
        high = max(scores)
        return [s / max(high, _EPSILON) for s in scores]
    if norm == "sum":  # shifted to start at 0 first, so negative scores (log-probabilities) work too
        low = min(scores)
        total = math.fsum(scores) - low * n
        return [(s - low) / max(total, _EPSILON) for s in scores]
    mean = math.fsum(scores) / n
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / n)
    return [(s - mean) / max(std, _EPSILON) for s in scores]


def fuse(
    runs: Sequence[Run],
    method: FusionMethod | str = "rrf",
    *,
    norm: Norm | str = "min-max",
    weights: Sequence[float] | None = None,
    k: float = 60.0,
    name: str | None = None,
) -> Run:
    """The fused run of `runs` (see the module docstring for methods, normalisations and conventions)."""
    if len(runs) < 2:
        raise InputError(f"fusion needs at least two runs, got {len(runs)}", field="runs")
    if not all(isinstance(r, Run) for r in runs):
        raise InputError("every run to fuse must be a ragmetrics Run", field="runs")
    if method not in METHODS:
        raise InputError(
            f"unknown fusion method {method!r}; choose one of {', '.join(METHODS)}", field="method"
        )
    if norm not in NORMS:
        raise InputError(f"unknown normalisation {norm!r}; choose one of {', '.join(NORMS)}", field="norm")
    if method == "wsum":
        if weights is None or len(weights) != len(runs):
            raise InputError(f"wsum needs one weight per run ({len(runs)})", field="weights")
        if not all(math.isfinite(w) for w in weights):
            raise InputError(f"weights must be finite numbers, got {list(weights)}", field="weights")
    elif weights is not None:
        raise InputError(f"weights apply to wsum only, not {method}", field="weights")
    if method == "rrf" and not (math.isfinite(k) and k >= 0):
        raise InputError(f"rrf's k must be a number >= 0, got {k}", field="k")

    fused: dict[str, dict[str, float]] = {}
    hits: dict[str, dict[str, int]] = {}
    for index, run in enumerate(runs):
        for qid, ranking in run.to_dict().items():
            docs = list(ranking)
            if method == "rrf":
                values = [1.0 / (k + rank) for rank in range(1, len(docs) + 1)]
            else:
                values = _normalise([float(ranking[d]) for d in docs], norm)
            if method == "wsum":
                assert weights is not None
                values = [weights[index] * v for v in values]
            target = fused.setdefault(qid, {})
            counts = hits.setdefault(qid, {})
            for doc, value in zip(docs, values, strict=True):
                if method == "combmax":
                    target[doc] = max(target.get(doc, -math.inf), value)
                else:
                    target[doc] = target.get(doc, 0.0) + value
                counts[doc] = counts.get(doc, 0) + 1
    if method == "combmnz":
        for qid, scores in fused.items():
            for doc in scores:
                scores[doc] *= hits[qid][doc]
    # A default name that is a valid run name (a TREC tag has no whitespace): rrf(bm25+dense).
    label = name or re.sub(r"\s+", "_", f"{method}({'+'.join(r.name for r in runs)})")
    return Run.from_dict(fused, name=label)
