"""Choosing fusion parameters on validation queries, scored by one metric, with the chosen setting's score on
held-out queries: the weights of ``wsum``, ``wmnz``, ``mixed`` and the weighted Borda and Condorcet (a grid on
the simplex), RRF's ``k``, RBC's ``phi``, CombGMNZ's ``gamma``, LogNISR's ``sigma``, ProbFuse's number of
segments and SlideFuse's window; the trained methods (ProbFuse, SegFuse, SlideFuse, PosFuse, MAPFuse,
BayesFuse) learn their model on the validation queries only, so the held-out score is that of a model that
never saw those queries.

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
from ragmetrics.options import TRAINED_FUSION_METHODS, FusionNorm
from ragmetrics.retrieval.evaluate import evaluate
from ragmetrics.retrieval.fusion import WEIGHTED, fuse
from ragmetrics.retrieval.fusion_trained import FusionModel, train_fusion
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run

__all__ = ["GRIDS", "FusionSearch", "search_fusion", "weight_grid"]

DEFAULT_RRF_KS: tuple[float, ...] = (1, 5, 10, 20, 40, 60, 80, 100, 200)
GRIDS: dict[str, tuple[str, tuple[float, ...]]] = {
    "rrf": ("k", DEFAULT_RRF_KS),
    "rbc": ("phi", (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)),
    "combgmnz": ("gamma", (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)),
    "logn_isr": ("sigma", (0.001, 0.01, 0.1, 0.5, 1.0)),
    "probfuse": ("segments", (2, 5, 10, 20, 50)),
    "slidefuse": ("window", (1, 2, 3, 5, 10)),
}
"""The default grid of each method's one parameter (`values=` replaces it)."""
SEARCHABLE: tuple[str, ...] = tuple(sorted({*WEIGHTED, *GRIDS, *TRAINED_FUSION_METHODS}))


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
    model: FusionModel | None = field(default=None, repr=False)
    """Trained methods: the model learned on the validation queries with the chosen setting."""

    def fused(self, runs: Sequence[Run], *, name: str | None = None) -> Run:
        """`runs` fused with the chosen setting (and, for a trained method, the model of the validation
        queries)."""
        return _fuse(runs, self.method, self.norm, self.best, self.model, name=name)


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
    values: Sequence[float] | None = None,
    held_out: Qrels | float | None = 0.5,
    seed: int = 0,
) -> FusionSearch:
    """Search the setting of `method` that maximises `metric`'s mean on validation queries.

    Weighted methods search their weights on the simplex at `step`; `ks` are RRF's candidates; `values`
    replaces the grid of the other methods' parameter (`GRIDS`). A trained method is trained on the
    validation queries for each setting (SegFuse, PosFuse, MAPFuse and BayesFuse have none: one setting).
    `held_out`: a fraction of the qrels' queries kept out of the search (split at random with `seed`), a
    separate `Qrels` of test queries, or None to search on every query (no held-out score).
    """
    if method not in SEARCHABLE:
        raise InputError(
            f"{method!r} has nothing to search (no weights, parameter or training); searchable: "
            f"{', '.join(SEARCHABLE)}",
            field="method",
        )
    if len(runs) < 2:
        raise InputError(f"fusion needs at least two runs, got {len(runs)}", field="runs")
    validation, test = _split(qrels, held_out, seed)
    settings = _settings(method, len(runs), step, ks, values)
    tried: list[tuple[dict[str, float | list[float]], float]] = []
    models: list[FusionModel | None] = []
    for setting in settings:
        model = _train(validation, runs, method, setting)
        fused = _fuse(runs, method, str(norm), setting, model)
        score = evaluate(validation, fused, [metric], allow_disjoint=True).aggregate[metric]
        tried.append((setting, float(score or 0.0)))
        models.append(model)
    chosen = max(range(len(tried)), key=lambda i: tried[i][1])  # first of equals: max keeps the first maximum
    best, best_score = tried[chosen]
    held_score = None
    if test is not None:
        fused = _fuse(runs, method, str(norm), best, models[chosen])
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
        model=models[chosen],
    )


def _settings(
    method: str, runs: int, step: float, ks: Sequence[float], values: Sequence[float] | None
) -> list[dict[str, float | list[float]]]:
    if method in WEIGHTED:
        return [{"weights": list(w)} for w in weight_grid(runs, step)]
    if method in GRIDS:
        key, grid = GRIDS[method]
        chosen = list(ks) if method == "rrf" and values is None else list(values or grid)
        if not chosen or not all(isinstance(v, int | float) and math.isfinite(v) for v in chosen):
            raise InputError(f"{method}'s {key} values must be finite numbers, got {chosen}", field="values")
        return [{key: float(v)} for v in chosen]
    return [{}]


def _train(validation: Qrels, runs: Sequence[Run], method: str, setting: dict[str, float | list[float]]) -> FusionModel | None:  # fmt: skip
    if method not in TRAINED_FUSION_METHODS:
        return None
    segments = setting.get("segments", 10)
    window = setting.get("window", 5)
    assert isinstance(segments, float | int) and isinstance(window, float | int)
    return train_fusion(validation, runs, method, segments=int(segments), window=int(window))


def _fuse(
    runs: Sequence[Run],
    method: str,
    norm: str,
    setting: dict[str, float | list[float]],
    model: FusionModel | None,
    *,
    name: str | None = None,
) -> Run:
    weights = setting.get("weights")
    params = {k: v for k, v in setting.items() if k in ("k", "phi", "gamma", "sigma")}
    assert weights is None or isinstance(weights, list)
    return fuse(runs, method, norm=norm, weights=weights, model=model, name=name, **params)  # type: ignore[arg-type]


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
