"""Choosing fusion parameters on validation queries: the weights of ``wsum`` (a grid on the simplex) or
RRF's ``k``, scored by one metric, with the chosen setting's score on held-out queries.

Why held out: the best of many settings on the queries it was picked on is an optimistic estimate of how
it will do; the score on queries the search did not see is the honest one (ranx's optimize_fusion reports
only the former). The split is by query, random with a seed, or given as a second qrels.

The grid for weights: every vector of non-negative multiples of `step` summing to 1 (for 2 runs and step
0.1: 11 vectors; for 3 runs: 66). Ties between settings go to the first in grid order, so the search is
deterministic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragmetrics.errors import InputError
from ragmetrics.options import FusionNorm
from ragmetrics.retrieval.evaluate import evaluate
from ragmetrics.retrieval.fusion import fuse
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run

__all__ = ["FusionSearch", "search_fusion", "weight_grid"]

DEFAULT_RRF_KS: tuple[float, ...] = (1, 5, 10, 20, 40, 60, 80, 100, 200)


@dataclass(frozen=True)
class FusionSearch:
    """The outcome of a search: the chosen setting, its validation and held-out scores, and every setting tried."""

    method: str
    metric: str
    norm: str
    best: dict[str, float | list[float]]
    validation_score: float
    held_out_score: float | None
    validation_queries: int
    held_out_queries: int
    tried: list[tuple[dict[str, float | list[float]], float]] = field(repr=False)

    def fused(self, runs: Sequence[Run], *, name: str | None = None) -> Run:
        """`runs` fused with the chosen setting."""
        if self.method == "wsum":
            weights = self.best["weights"]
            assert isinstance(weights, list)
            return fuse(runs, "wsum", norm=self.norm, weights=weights, name=name)
        k = self.best["k"]
        assert isinstance(k, float)
        return fuse(runs, "rrf", k=k, name=name)


def weight_grid(runs: int, step: float) -> list[tuple[float, ...]]:
    """Weight vectors of `runs` non-negative multiples of `step` summing to 1 (module doc)."""
    if not 0 < step <= 1:
        raise InputError(f"step must be in (0, 1], got {step}", field="step")
    units = round(1 / step)
    if not math.isclose(units * step, 1.0, abs_tol=1e-9):
        raise InputError(f"step must divide 1 evenly (0.1, 0.05, 0.25, ...), got {step}", field="step")
    grid = []
    for parts in itertools.product(range(units + 1), repeat=runs - 1):
        if sum(parts) <= units:
            grid.append(tuple(p / units for p in (*parts, units - sum(parts))))
    return grid


def search_fusion(
    qrels: Qrels,
    runs: Sequence[Run],
    *,
    method: str = "wsum",
    metric: str = "ndcg@10",
    norm: FusionNorm | str = "min-max",
    step: float = 0.1,
    ks: Sequence[float] = DEFAULT_RRF_KS,
    held_out: Qrels | float | None = 0.5,
    seed: int = 0,
) -> FusionSearch:
    """Search the weights of ``wsum`` or RRF's ``k`` that maximise `metric`'s mean on validation queries.

    `held_out`: a fraction of the qrels' queries kept out of the search (split at random with `seed`), a
    separate `Qrels` of test queries, or None to search on every query (no held-out score).
    """
    if method not in ("wsum", "rrf"):
        raise InputError(f"search supports 'wsum' (weights) and 'rrf' (k), not {method!r}", field="method")
    if len(runs) < 2:
        raise InputError(f"fusion needs at least two runs, got {len(runs)}", field="runs")
    validation, test = _split(qrels, held_out, seed)
    settings: list[dict[str, float | list[float]]]
    if method == "wsum":
        settings = [{"weights": list(w)} for w in weight_grid(len(runs), step)]
    else:
        if not ks or not all(math.isfinite(k) and k >= 0 for k in ks):
            raise InputError(f"ks must be numbers >= 0, got {list(ks)}", field="ks")
        settings = [{"k": float(k)} for k in ks]
    tried: list[tuple[dict[str, float | list[float]], float]] = []
    for setting in settings:
        fused = _fuse(runs, method, norm, setting)
        score = evaluate(validation, fused, [metric], allow_disjoint=True).aggregate[metric]
        tried.append((setting, float(score or 0.0)))
    best, best_score = max(tried, key=lambda t: t[1])  # first of equals: max keeps the first maximum
    held_score = None
    if test is not None:
        fused = _fuse(runs, method, norm, best)
        held_score = float(evaluate(test, fused, [metric], allow_disjoint=True).aggregate[metric] or 0.0)
    return FusionSearch(
        method=method,
        metric=metric,
        norm=str(norm),
        best=best,
        validation_score=best_score,
        held_out_score=held_score,
        validation_queries=len(validation.query_ids),
        held_out_queries=0 if test is None else len(test.query_ids),
        tried=tried,
    )


def _fuse(runs: Sequence[Run], method: str, norm: str, setting: dict[str, float | list[float]]) -> Run:
    if method == "wsum":
        weights = setting["weights"]
        assert isinstance(weights, list)
        return fuse(runs, "wsum", norm=norm, weights=weights)
    k = setting["k"]
    assert isinstance(k, float)
    return fuse(runs, "rrf", k=k)


def _split(qrels: Qrels, held_out: Qrels | float | None, seed: int) -> tuple[Qrels, Qrels | None]:
    if held_out is None:
        return qrels, None
    if isinstance(held_out, Qrels):
        overlap = set(qrels.query_ids) & set(held_out.query_ids)
        if overlap:
            raise InputError(
                f"{len(overlap)} queries are in both the validation and the held-out qrels "
                f"(e.g. {sorted(overlap)[0]!r}): a held-out score needs unseen queries",
                field="held_out",
            )
        return qrels, held_out
    if not 0 < held_out < 1:
        raise InputError(
            f"held_out must be a fraction in (0, 1), a Qrels or None, got {held_out}", field="held_out"
        )
    ids = list(qrels.query_ids)
    if len(ids) < 2:
        raise InputError("need at least two queries to hold some out", field="held_out")
    order = np.random.default_rng(seed).permutation(len(ids))
    n_test = min(len(ids) - 1, max(1, round(held_out * len(ids))))
    test_ids = {ids[i] for i in order[:n_test]}
    return qrels.select(q for q in ids if q not in test_ids), qrels.select(test_ids)
