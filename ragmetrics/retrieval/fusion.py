"""Run fusion: several rankings of the same queries combined into one (hybrid BM25 + dense retrieval).

Every method gives each document a fused score per query; a run contributes to a document only if it
retrieved it, unless the method says otherwise. With v_r(d) the run's normalised score, i_r(d) the document's
rank in run r counted from 0, n_r(d) = 1 if run r retrieved d, and c(d) = the number of runs that did:

Score-based (the normalisation applies):
- ``combsum``: sum_r v_r; ``combmnz``: that sum x c; ``combmax``, ``combmin``, ``combmed``: the maximum,
  minimum or median of the v_r present; ``combanz``: the sum / c (Fox and Shaw, TREC-2, 1994);
  ``combgmnz``: the sum x c^gamma (Lee, SIGIR 1997; gamma required);
- ``wsum``: sum_r w_r v_r; ``wmnz``: the plain sum x the sum of the weights of the runs present;
  ``mixed``: sum_r w_r v_r x sqrt(c) (Wu, ranx's definitions).

Rank-based (scores and normalisation unused):
- ``rrf``: sum_r 1 / (k + i_r + 1), k = 60 by default (Cormack, Clarke and Büttcher, SIGIR 2009);
- ``isr``: sum_r 1 / (i_r + 1)^2 x c; ``log_isr``: that sum x log c (0 for a document one run found);
  ``logn_isr``: x log(c + sigma), sigma = 0.01 (Mourão, Martins and Magalhães, CMIG 2015);
- ``rbc``: sum_r (1 - phi) phi^i_r, rank-biased centroids (Bailey et al., SIGIR 2017; phi = 0.8 by default);
- ``bordafuse``: Borda points, sum over runs of |C| - i_r for a document the run ranked and
  (|C| - |run| + 1) / 2 for one it did not, C the union of the runs' documents for the query (Aslam and
  Montague, SIGIR 2001); ``weighted_bordafuse``: the points weighted per run;
- ``condorcet``: the order in which each document beats another when more runs rank it higher (a run that
  ranks neither abstains; a run that ranks one ranks it higher); fused score |C| - position (Montague and
  Aslam, CIKM 2002); ``weighted_condorcet``: votes weighted per run. Documents are ordered by their count of
  pairwise wins (Copeland), which is the Condorcet order whenever one exists (no cycle); a tie in wins goes
  to the head-to-head winner, then to document id descending.

Trained on qrels first (`fusion_trained.train_fusion`): ``probfuse``, ``segfuse``, ``slidefuse``,
``posfuse``, ``mapfuse``, ``bayesfuse``; their formulas are in that module.

Normalisations, per query and per run, applied before combining: ``none``; ``min-max``: (s - min) /
(max - min); ``zmuv``: (s - mean) / std (population std, z-score); ``max``: s / max; ``sum``: (s - min) /
sum of (s - min), so the shifted scores sum to 1; ``rank``: 1 - (rank - 1) / n. A zero denominator is
replaced by 1e-9, as ranx does, so a query whose run gives every document the same score normalises to 0
(min-max) instead of dividing by zero.

Conventions, and where they differ from ranx (`ranx.fuse`): the queries are the union of the runs' queries
(ranx fuses the first run's queries and requires the same in every run); a run's ranking is its stored one,
ties broken by document id descending as everywhere in ragmetrics (ranx leaves the order of tied documents
unspecified); the fused run is ranked by the same rule; condorcet orders by pairwise wins where ranx's
comparison sort depends on the order it meets documents in when the majority has a cycle. With ties absent,
the same queries in every run and (condorcet) no cycle, values equal ranx's (tests/retrieval/test_fusion.py).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragmetrics.errors import InputError
from ragmetrics.options import FUSION_METHODS as METHODS
from ragmetrics.options import FUSION_NORMS as NORMS
from ragmetrics.options import TRAINED_FUSION_METHODS, FusionMethod
from ragmetrics.options import FusionNorm as Norm
from ragmetrics.retrieval.run import Run


class FusionModel(Protocol):
    """What `fuse` needs of a trained model (`fusion_trained.FusionModel` is one): the method it was trained
    for, one entry per run, and its combining function. A protocol here, so this module never imports the
    trained methods that import it."""

    @property
    def method(self) -> str: ...

    @property
    def per_run(self) -> Sequence[Any]: ...

    def combine(
        self, rankings: list[Ranking | None], params: Mapping[str, float], weights: Sequence[float] | None
    ) -> Scores: ...


__all__ = ["METHODS", "NORMS", "PARAMS", "WEIGHTED", "FusionMethod", "Norm", "Ranking", "fuse"]
_EPSILON = 1e-9

WEIGHTED = frozenset({"wsum", "wmnz", "mixed", "weighted_bordafuse", "weighted_condorcet"})
"""Methods that need one weight per run."""
PARAMS: dict[str, dict[str, float | None]] = {
    "rrf": {"k": 60.0},
    "combgmnz": {"gamma": None},
    "logn_isr": {"sigma": 0.01},
    "rbc": {"phi": 0.8},
}
"""Each method's real parameters and their defaults (None: required)."""
RANK_BASED = frozenset(
    {"rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "weighted_bordafuse", "condorcet",
     "weighted_condorcet", "probfuse", "slidefuse", "posfuse", "mapfuse", "bayesfuse"}
)  # fmt: skip
"""Methods that read only the rankings (segfuse reads the normalised scores too)."""


@dataclass(frozen=True)
class Ranking:
    """One run's ranking of one query: documents best first and their normalised scores."""

    docs: list[str]
    values: list[float]


Scores = dict[str, float]
Combine = Callable[[list[Ranking | None], Mapping[str, float], Sequence[float] | None], Scores]


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


def _present(rankings: list[Ranking | None]) -> dict[str, list[tuple[int, int, float]]]:
    """Document -> (run index, rank, normalised score) for every run that retrieved it, in run order."""
    found: dict[str, list[tuple[int, int, float]]] = {}
    for r, ranking in enumerate(rankings):
        if ranking is None:
            continue
        for i, (doc, value) in enumerate(zip(ranking.docs, ranking.values, strict=True)):
            found.setdefault(doc, []).append((r, i, value))
    return found


def _by_values(reduce: Callable[[list[float], list[int]], float]) -> Combine:
    """A score-based method: `reduce(values present, runs present)` per document."""

    def combine(rankings: list[Ranking | None], _: Mapping[str, float], __: Sequence[float] | None) -> Scores:
        return {
            doc: reduce([v for _, _, v in hits], [r for r, _, _ in hits])
            for doc, hits in _present(rankings).items()
        }

    return combine


def _by_ranks(point: Callable[[int, Mapping[str, float]], float], count: Callable[[int, Mapping[str, float]], float]) -> Combine:  # fmt: skip
    """A rank-based method: the sum over runs of `point(rank)` times `count(runs present)`."""

    def combine(
        rankings: list[Ranking | None], params: Mapping[str, float], _: Sequence[float] | None
    ) -> Scores:
        return {
            doc: math.fsum(point(i, params) for _, i, _ in hits) * count(len(hits), params)
            for doc, hits in _present(rankings).items()
        }

    return combine


def _weighted(weights: Sequence[float] | None) -> Sequence[float]:
    assert weights is not None  # fuse() checks that weighted methods have them
    return weights


def _wsum(rankings: list[Ranking | None], _: Mapping[str, float], weights: Sequence[float] | None) -> Scores:
    w = _weighted(weights)
    return {doc: math.fsum(w[r] * v for r, _, v in hits) for doc, hits in _present(rankings).items()}


def _wmnz(rankings: list[Ranking | None], _: Mapping[str, float], weights: Sequence[float] | None) -> Scores:
    w = _weighted(weights)
    return {
        doc: math.fsum(v for _, _, v in hits) * math.fsum(w[r] for r, _, _ in hits)
        for doc, hits in _present(rankings).items()
    }


def _mixed(rankings: list[Ranking | None], _: Mapping[str, float], weights: Sequence[float] | None) -> Scores:
    w = _weighted(weights)
    return {
        doc: math.fsum(w[r] * v for r, _, v in hits) * math.sqrt(len(hits))
        for doc, hits in _present(rankings).items()
    }


def _candidates(rankings: list[Ranking | None]) -> list[str]:
    seen: dict[str, None] = {}
    for ranking in rankings:
        if ranking is not None:
            seen.update(dict.fromkeys(ranking.docs))
    return list(seen)


def _borda(rankings: list[Ranking | None], weights: Sequence[float] | None) -> Scores:
    candidates = _candidates(rankings)
    size = len(candidates)
    scores = dict.fromkeys(candidates, 0.0)
    for r, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[r]
        docs = ranking.docs if ranking is not None else []
        ranked = {doc: size - i for i, doc in enumerate(docs)}
        unranked = (size - len(docs) + 1) / 2
        for doc in candidates:
            scores[doc] += w * ranked.get(doc, unranked)
    return scores


def _bordafuse(rankings: list[Ranking | None], _: Mapping[str, float], __: Sequence[float] | None) -> Scores:
    return _borda(rankings, None)


def _weighted_bordafuse(
    rankings: list[Ranking | None], _: Mapping[str, float], weights: Sequence[float] | None
) -> Scores:
    return _borda(rankings, _weighted(weights))


def _condorcet_order(rankings: list[Ranking | None], weights: Sequence[float] | None) -> list[str]:
    """Candidates by pairwise majority wins (module doc), best first."""
    candidates = sorted(_candidates(rankings), reverse=True)  # id descending: the last tie-break
    positions = [
        {doc: i for i, doc in enumerate(ranking.docs)} if ranking is not None else {} for ranking in rankings
    ]
    unranked = math.inf
    n = len(candidates)
    margin = [[0.0] * n for _ in range(n)]  # margin[a][b]: weighted votes for a over b minus those for b
    for r, at in enumerate(positions):
        if not at:
            continue
        w = 1.0 if weights is None else weights[r]
        ranks = [at.get(doc, unranked) for doc in candidates]
        for a in range(n):
            for b in range(a + 1, n):
                if ranks[a] < ranks[b]:
                    margin[a][b] += w
                    margin[b][a] -= w
                elif ranks[b] < ranks[a]:
                    margin[b][a] += w
                    margin[a][b] -= w
    wins = [
        sum(1.0 if m > 0 else 0.5 if m == 0 else 0.0 for b, m in enumerate(row) if b != a)
        for a, row in enumerate(margin)
    ]

    def beats(a: int, b: int) -> bool:
        return wins[a] > wins[b] or (wins[a] == wins[b] and margin[a][b] > 0)

    order = list(range(n))
    # Insertion by the comparison above: a stable order (ties keep id descending) for a few hundred candidates.
    for pos in range(1, n):
        item = order[pos]
        j = pos
        while j > 0 and beats(item, order[j - 1]):
            order[j] = order[j - 1]
            j -= 1
        order[j] = item
    return [candidates[i] for i in order]


def _condorcet(rankings: list[Ranking | None], _: Mapping[str, float], __: Sequence[float] | None) -> Scores:
    order = _condorcet_order(rankings, None)
    return {doc: float(len(order) - i) for i, doc in enumerate(order)}


def _weighted_condorcet(
    rankings: list[Ranking | None], _: Mapping[str, float], weights: Sequence[float] | None
) -> Scores:
    order = _condorcet_order(rankings, _weighted(weights))
    return {doc: float(len(order) - i) for i, doc in enumerate(order)}


def _one(_: int, __: Mapping[str, float]) -> float:
    return 1.0


def _combgmnz(
    rankings: list[Ranking | None], params: Mapping[str, float], _: Sequence[float] | None
) -> Scores:
    return {
        doc: math.fsum(v for _, _, v in hits) * len(hits) ** params["gamma"]
        for doc, hits in _present(rankings).items()
    }


COMBINE: dict[str, Combine] = {
    "combsum": _by_values(lambda v, _: math.fsum(v)),
    "combmnz": _by_values(lambda v, _: math.fsum(v) * len(v)),
    "combmax": _by_values(lambda v, _: max(v)),
    "combmin": _by_values(lambda v, _: min(v)),
    "combmed": _by_values(lambda v, _: float(statistics.median(v))),
    "combanz": _by_values(lambda v, _: math.fsum(v) / len(v)),
    "combgmnz": _combgmnz,
    "wsum": _wsum,
    "wmnz": _wmnz,
    "mixed": _mixed,
    "rrf": _by_ranks(lambda i, p: 1.0 / (p["k"] + i + 1), _one),
    "isr": _by_ranks(lambda i, _: 1.0 / (i + 1) ** 2, lambda c, _: float(c)),
    "log_isr": _by_ranks(lambda i, _: 1.0 / (i + 1) ** 2, lambda c, _: math.log(c)),
    "logn_isr": _by_ranks(lambda i, _: 1.0 / (i + 1) ** 2, lambda c, p: math.log(c + p["sigma"])),
    "rbc": _by_ranks(lambda i, p: (1.0 - p["phi"]) * p["phi"] ** i, _one),
    "bordafuse": _bordafuse,
    "weighted_bordafuse": _weighted_bordafuse,
    "condorcet": _condorcet,
    "weighted_condorcet": _weighted_condorcet,
}


def _check(
    runs: Sequence[Run],
    method: str,
    norm: str,
    weights: Sequence[float] | None,
    params: dict[str, float],
    model: FusionModel | None,
) -> None:
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
    if method in WEIGHTED:
        if weights is None or len(weights) != len(runs):
            raise InputError(f"{method} needs one weight per run ({len(runs)})", field="weights")
        if not all(math.isfinite(w) for w in weights):
            raise InputError(f"weights must be finite numbers, got {list(weights)}", field="weights")
    elif weights is not None:
        raise InputError(
            f"weights apply to {', '.join(sorted(WEIGHTED))} only, not {method}", field="weights"
        )
    for key, value in params.items():
        if not math.isfinite(value):
            raise InputError(f"{method}'s {key} must be a finite number, got {value}", field=key)
    if method == "rrf" and params["k"] < 0:
        raise InputError(f"rrf's k must be a number >= 0, got {params['k']}", field="k")
    if method == "rbc" and not 0 < params["phi"] < 1:
        raise InputError(f"rbc's phi must lie strictly between 0 and 1, got {params['phi']}", field="phi")
    if method == "logn_isr" and params["sigma"] <= 0:
        raise InputError(f"logn_isr's sigma must be above 0, got {params['sigma']}", field="sigma")
    if method in TRAINED_FUSION_METHODS:
        if model is None:
            raise InputError(
                f"{method} is trained on qrels first: fuse(..., model=train_fusion(qrels, runs, {method!r}))",
                field="model",
            )
        if model.method != method or len(model.per_run) != len(runs):
            raise InputError(
                f"the model was trained for {model.method} over {len(model.per_run)} runs, not {method} "
                f"over {len(runs)}",
                field="model",
            )
    elif model is not None:
        raise InputError(
            f"a trained model applies to {', '.join(TRAINED_FUSION_METHODS)}, not {method}", field="model"
        )


def _params(method: str, given: Mapping[str, float | None]) -> dict[str, float]:
    defaults = PARAMS.get(method, {})
    out: dict[str, float] = {}
    for key, default in defaults.items():
        value = given.get(key)
        if value is None:
            value = default
        if value is None:
            raise InputError(f"{method} needs {key} (e.g. {key}=1.0)", field=key)
        out[key] = float(value)
    return out


def fuse(
    runs: Sequence[Run],
    method: FusionMethod | str = "rrf",
    *,
    norm: Norm | str = "min-max",
    weights: Sequence[float] | None = None,
    k: float = 60.0,
    gamma: float | None = None,
    sigma: float | None = None,
    phi: float | None = None,
    model: FusionModel | None = None,
    name: str | None = None,
) -> Run:
    """The fused run of `runs` (see the module docstring for methods, normalisations and conventions).

    `weights`: one per run for wsum, wmnz, mixed and the weighted Borda and Condorcet; `k`, `gamma`, `sigma`,
    `phi`: rrf's, combgmnz's, logn_isr's and rbc's parameters; `model`: what `train_fusion` learned, for the
    trained methods.
    """
    params = _params(method, {"k": k, "gamma": gamma, "sigma": sigma, "phi": phi})
    _check(runs, method, str(norm), weights, params, model)
    per_query: dict[str, list[Ranking | None]] = {}
    for index, run in enumerate(runs):
        for qid, ranking in run.to_dict().items():
            docs = list(ranking)
            values = (
                [0.0] * len(docs)
                if method in RANK_BASED
                else _normalise([float(ranking[d]) for d in docs], str(norm))
            )
            per_query.setdefault(qid, [None] * len(runs))[index] = Ranking(docs, values)
    if model is not None:
        combine: Combine = model.combine
    else:
        combine = COMBINE[method]
    fused = {qid: combine(rankings, params, weights) for qid, rankings in per_query.items()}
    # A default name that is a valid run name (a TREC tag has no whitespace): rrf(bm25+dense).
    label = name or re.sub(r"\s+", "_", f"{method}({'+'.join(r.name for r in runs)})")
    return Run.from_dict(fused, name=label)
